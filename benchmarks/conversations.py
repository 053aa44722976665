"""The conversations :mod:`fidelity` measures on: the Chit-Chat Challenge's pairs of people
(fetched from the package index once, checked by SHA-256) and LoCoMo's, turned into long
multi-session conversations with their questions (:mod:`fidelity`'s docstring says how)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memstore.core.search_terms import STOPWORDS

CHITCHAT = "chitchat-dataset==0.9.0"
CHITCHAT_SHA256 = "d2a5d0bf6acf354fef51f3af39cbece2220d3b8f6086b658c3d335105798312a"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))


@dataclass
class Conversation:
    """One long conversation: its turns (role, text) and questions about them."""

    name: str
    #: (role, text); a ``developer`` turn is the date marker that opens a session
    turns: list[tuple[str, str]] = field(default_factory=list)
    #: (question, the indexes of its evidence turns, its answer)
    questions: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    sessions: int = 0
    #: Where each sitting (one conversation of the pair, one session) starts in ``turns``.
    sittings: list[int] = field(default_factory=list)


# -- the data -------------------------------------------------------------------------------


def fetch_chitchat(cache: Path) -> Path:
    """``dataset.json`` of the chitchat-dataset wheel, downloaded once with pip."""
    target = cache / "chitchat-dataset-0.9.0" / "dataset.json"
    if target.is_file() and _sha256(target) == CHITCHAT_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary", ":all:", CHITCHAT, "-d", scratch],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(scratch).glob("chitchat_dataset-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            target.write_bytes(archive.read("chitchat_dataset/dataset.json"))
    if _sha256(target) != CHITCHAT_SHA256:
        target.unlink()
        raise SystemExit("chitchat-dataset's dataset.json is not the expected file")
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def words_of(text: str) -> list[str]:
    return [w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()]


def normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


def chitchat_conversations(
    path: Path,
    *,
    count: int,
    min_sessions: int,
    max_turns: int,
    questions: int,
    skip: int = 0,
    dated: bool = True,
) -> list[Conversation]:
    """The ``count`` longest pairs' talks, each pair's as one conversation of whole sessions
    (up to ``max_turns`` turns: LoCoMo's conversations run to 300-700)."""
    data: dict[str, Any] = json.loads(path.read_text())
    by_pair: dict[frozenset[str], list[dict[str, Any]]] = defaultdict(list)
    for talk in data.values():
        senders = frozenset(m["sender"] for turn in talk["messages"] for m in turn)
        if len(senders) == 2:
            by_pair[senders].append(talk)
    pairs = [talks for talks in by_pair.values() if len(talks) >= min_sessions]
    pairs.sort(key=lambda talks: (-len(talks), talks[0]["start"]))
    out = []
    for number, talks in enumerate(pairs[skip : skip + count], skip + 1):
        talks.sort(key=lambda talk: talk["start"])
        first = talks[0]["messages"][0][0]["sender"]
        conv = Conversation(f"chitchat-{number}")
        for talk in talks:
            day = datetime.fromisoformat(talk["start"].replace("Z", "+00:00"))
            marker = ("developer", session_marker(day.day, day.month, day.year))
            session = [marker] if dated else []
            for turn in talk["messages"]:
                role = "user" if turn[0]["sender"] == first else "assistant"
                text = " ".join(m["text"].strip() for m in turn if m["text"].strip())
                if text:
                    session.append((role, text))
            if conv.turns and len(conv.turns) + len(session) > max_turns:
                break
            conv.sittings.append(len(conv.turns))
            conv.turns += session
            conv.sessions += 1
        _ask_later(conv, questions)
        out.append(conv)
    return out


def _ask_later(conv: Conversation, limit: int) -> None:
    """Questions a participant asked, to be asked again at the end, with the other's answer as
    the evidence: the last sentence of a turn, ending in ``?``, with at least two telling
    words, asked only once, whose next turn (the other person's, six words or more, not a
    question) answers it. ``limit`` of them, evenly spread; each question is then taken out
    of the history, so a search cannot find the question itself and must find the answer
    by the words of the question."""
    seen: dict[str, int] = defaultdict(int)
    candidates = []
    for index, ((role, text), (next_role, answer)) in enumerate(
        zip(conv.turns, conv.turns[1:], strict=False)
    ):
        if "developer" in (role, next_role):
            continue  # a session's date marker is neither a question nor an answer
        before, _, question = text.rpartition("? ")
        question = question if question.endswith("?") or not before else text
        question = question.rsplit(". ", 1)[-1].strip()
        seen[normalized(question)] += 1
        telling = [w for w in words_of(question) if w not in STOPWORDS]
        if (
            question.endswith("?")
            and len(telling) >= 2
            and next_role != role
            and len(answer.split()) >= 6
            and not answer.rstrip().endswith("?")
        ):
            candidates.append((index, question))
    unique = [c for c in candidates if seen[normalized(c[1])] == 1]
    step = max(1.0, len(unique) / limit)
    chosen = [unique[int(i * step)] for i in range(min(limit, len(unique)))]
    asked = {index: question for index, question in chosen}
    turns, moved = [], {}
    for index, (role, text) in enumerate(conv.turns):
        if index in asked:
            text = text[: len(text) - len(asked[index])].strip()
        moved[index] = len(turns)
        if text:
            turns.append((role, text))
    conv.turns = turns
    conv.questions = [
        (question, (moved[index + 1],), conv.turns[moved[index + 1]][1])
        for index, question in chosen
    ]
    conv.sittings = sorted({moved[start] for start in conv.sittings if start in moved})


def locomo_conversations(path: Path, *, questions: int) -> list[Conversation]:
    """LoCoMo's conversations: sessions in order, speaker A as ``user``."""
    out = []
    for sample in json.loads(path.read_text()):
        talk = sample["conversation"]
        conv = Conversation(str(sample.get("sample_id", len(out) + 1)))
        position: dict[str, int] = {}
        numbers = sorted(
            int(key.split("_")[1])
            for key in talk
            if key.startswith("session_") and key.count("_") == 1
        )
        for number in numbers:
            conv.sessions += 1
            conv.sittings.append(len(conv.turns))
            when = str(talk.get(f"session_{number}_date_time", ""))
            conv.turns.append(("developer", f"New conversation session on {when}."))
            for turn in talk[f"session_{number}"]:
                role = "user" if turn["speaker"] == talk["speaker_a"] else "assistant"
                position[turn["dia_id"]] = len(conv.turns)
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                conv.turns.append((role, text))
        asked = [
            (
                qa["question"],
                tuple(position[e] for e in qa["evidence"] if e in position),
                str(qa.get("answer", "")),
            )
            for qa in sample["qa"]
            if qa.get("category") != 5 and qa.get("evidence")
        ]
        conv.questions = [q for q in asked if q[1]][:questions]
        out.append(conv)
    return out


def session_marker(day: int, month: int, year: int) -> str:
    """The developer note that opens a session and dates what follows it."""
    return f"New conversation session on {day} {MONTH_NAMES[month - 1]} {year}."


MONTH_NAMES = [datetime(2000, m, 1).strftime("%B") for m in range(1, 13)]
