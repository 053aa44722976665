"""Memory fidelity on conversations no one here wrote: truncation, compaction, recall.

Each conversation is appended, turn by turn, to a memstore session with the store's defaults
(limits 1500 / 900 / keep 4, exact o200k_base counts, the extractive summarizer); each of its
sessions opens with a developer note that dates it (``--undated``: none). Then every question
is asked at the end, and four model inputs are compared:

* **truncation**: the newest turns that fit the hard limit (each counted as memstore counts
  an item: its tokens + 4), what an agent without memory management sends;
* **truncation, same tokens**: the newest turns that fit what the compacted input weighs;
* **compaction**: memstore's ``build_model_input()``: the summary plus working memory;
* **compaction + recall**: ``build_model_input(recall=QUESTION)``, with the default
  ``recall_budget`` (``hard - target``) inside the same hard limit.

Two measures, side by side. **Word for word**: every evidence turn is in the input (white
space and case aside), in an item, the summary or the recalled block; a summary that kept the
telling sentence of a turn does not count. **Answer words**: the share of the answer's
content words that the input holds anywhere.

Then tool-using agent sessions (:mod:`agent_sessions`, generated) are compacted several times
at hard 1200 / target 800 and at the defaults, and the extractive summarizer is timed on a
1,000-item fold (``--agent-sessions 0`` skips both).

Data (fetched at run time, never committed):

* default: the **Chit-Chat Challenge** conversations of BYU's Perception, Control and Cognition
  lab (MIT licence), as published on PyPI in the wheel of ``chitchat-dataset`` 0.9.0 (its
  ``dataset.json``, checked by SHA-256). 7,168 real conversations between people, many pairs
  of whom talked again and again over weeks; each pair with at least
  ``--min-sessions`` conversations becomes one long multi-session conversation, one session
  per conversation, in the order they took place. Questions are the participants' own: a turn
  ending in a question whose next turn (the other person's) answers it; the question is
  asked again at the end, and the answer turn is the evidence. Facts are said by either role
  (the first speaker is ``user``, the other ``assistant``), in passing, in people's words.
* ``--locomo PATH``: LoCoMo's ``locomo10.json`` (snap-research/locomo, CC BY-NC 4.0; not on
  any package registry this benchmark can reach): 10 very long conversations with
  question/answer pairs and their evidence turns (category 5, the unanswerable ones, is
  left out).

    python benchmarks/fidelity.py [--conversations 10] [--questions 30] [--skip N] [--json]
    python benchmarks/fidelity.py --sittings   # across a user's sessions (fidelity_sittings)
    python benchmarks/fidelity.py --sittings --hard 6000 --entry-share 0.6   # what if
    python benchmarks/fidelity.py --locomo data/locomo10.json

``--sittings`` measures memory across a user's sessions instead (:mod:`fidelity_sittings`).
``--hard N`` and ``--entry-share R`` ask what larger inputs, or entries allowed more of the
tokens they distil than a fifth, would hold: what the store's bounds cost.

Offline after the first fetch (``--cache DIR``, default ``~/.cache/memstore-benchmarks``).
"""

from __future__ import annotations

import argparse
import asyncio
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

import agent_sessions  # beside this file

from memstore import (
    ExtractiveSummarizer,
    MemoryLimits,
    MemoryStore,
    MemstoreError,
    TiktokenEstimator,
)
from memstore.core import slots
from memstore.core.search_terms import STOPWORDS
from memstore.core.values import ITEM_OVERHEAD_TOKENS
from memstore.render.input import MEMORIES_CLOSE, MEMORIES_OPEN, SUMMARY_PREAMBLE
from memstore.render.recall import RECALL_CLOSE, RECALL_OPEN

CHITCHAT = "chitchat-dataset==0.9.0"
CHITCHAT_SHA256 = "d2a5d0bf6acf354fef51f3af39cbece2220d3b8f6086b658c3d335105798312a"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
CONDITIONS = ("truncation", "truncation, same tokens", "compaction", "compaction + recall")


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


# -- the measurement --------------------------------------------------------------------------


def input_texts(messages: list[dict[str, Any]]) -> str:
    """Everything a model input says, recalled passages and memories decoded from their JSON
    lines."""
    texts = []
    for message in messages:
        content = message["content"]
        lines = content.split("\n")
        if RECALL_OPEN in lines:
            block = lines[lines.index(RECALL_OPEN) + 1 : lines.index(RECALL_CLOSE)]
            texts += [json.loads(line)["text"] for line in block]
        elif MEMORIES_OPEN in lines:
            block = lines[lines.index(MEMORIES_OPEN) + 1 : lines.index(MEMORIES_CLOSE)]
            texts += [str(json.loads(line)["value"]) for line in block]
        elif content.startswith(SUMMARY_PREAMBLE):
            texts.append(content.split("\n\n", 1)[1])
        else:
            texts.append(content)
    return normalized("\n".join(texts))


def session_marker(day: int, month: int, year: int) -> str:
    """The developer note that opens a session and dates what follows it."""
    return f"New conversation session on {day} {MONTH_NAMES[month - 1]} {year}."


MONTH_NAMES = [datetime(2000, m, 1).strftime("%B") for m in range(1, 13)]


def truncated(turns: list[tuple[str, str]], counts: list[int], budget: int) -> str:
    """The newest turns whose cost (tokens + 4 each) fits ``budget``."""
    used, kept = 0, []
    for (_role, text), tokens in zip(reversed(turns), reversed(counts), strict=True):
        if used + tokens + ITEM_OVERHEAD_TOKENS > budget:
            break
        used += tokens + ITEM_OVERHEAD_TOKENS
        kept.append(text)
    return normalized("\n".join(kept))


def answer_words(answer: str) -> set[str]:
    """The answer's content words: what an input must hold for the answer to be there."""
    return {word for word in words_of(answer) if word not in STOPWORDS}


def word_recall(answer: set[str], text: str) -> float:
    """The share of ``answer``'s words that ``text`` holds."""
    if not answer:
        return 0.0
    return len(answer & set(words_of(text))) / len(answer)


async def measure(conv: Conversation, store: MemoryStore, limits: MemoryLimits) -> dict[str, Any]:
    """Per condition, answers kept word for word and the share of answer words held."""
    estimator = TiktokenEstimator()
    memory = store.session(
        conv.name,
        limits=limits,
        estimator=estimator,
        summarizer=ExtractiveSummarizer(),
    )  # no recall_budget: recall only when asked, with the default budget (hard - target)
    for role, text in conv.turns:
        await memory.add(role, text)
    counts = [estimator.count(" ".join(text.split())) for _role, text in conv.turns]
    same_tokens = await memory.estimated_tokens()  # what the compacted input weighs
    inputs = {
        "truncation": truncated(conv.turns, counts, limits.hard),
        "truncation, same tokens": truncated(conv.turns, counts, same_tokens),
        "compaction": input_texts(await memory.build_model_input()),
    }
    verbatim = dict.fromkeys(CONDITIONS, 0)
    words = dict.fromkeys(CONDITIONS, 0.0)
    scored = 0
    for question, evidence, answer in conv.questions:
        inputs["compaction + recall"] = input_texts(await memory.build_model_input(recall=question))
        needed = [normalized(conv.turns[i][1]) for i in evidence]
        wanted = answer_words(answer)
        scored += bool(wanted)
        for condition in CONDITIONS:
            verbatim[condition] += all(part in inputs[condition] for part in needed)
            words[condition] += word_recall(wanted, inputs[condition])
    return {
        "conversation": conv.name,
        "sessions": conv.sessions,
        "turns": len(conv.turns),
        "history_tokens": sum(counts) + ITEM_OVERHEAD_TOKENS * len(counts),
        "input_tokens": same_tokens,
        "questions": len(conv.questions),
        "scored": scored,
        "compactions": len(await memory.reports()),
        "summary_errors": sum(1 for r in await memory.reports() if r.summary_error),
        "answered": verbatim,
        "answer_words": words,
    }


async def run(conversations: list[Conversation], limits: MemoryLimits) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "fidelity.db") as store:
            return [await measure(conv, store, limits) for conv in conversations]


def report(dataset: str, rows: list[dict[str, Any]], limits: MemoryLimits) -> dict[str, Any]:
    questions = sum(row["questions"] for row in rows)
    scored = sum(row["scored"] for row in rows)
    totals = {c: sum(row["answered"][c] for row in rows) for c in CONDITIONS}
    shares = {c: totals[c] / questions if questions else 0.0 for c in CONDITIONS}
    words = {c: sum(row["answer_words"][c] for row in rows) / max(scored, 1) for c in CONDITIONS}

    def ratio(table: dict[str, float], over: str) -> float | None:
        return table["compaction"] / table[over] if table[over] else None

    return {
        "dataset": dataset,
        "limits": {"hard": limits.hard, "target": limits.target, "keep_recent": limits.keep_recent},
        "conversations": rows,
        "questions": questions,
        "answered": totals,
        "share": shares,
        "answer_words": words,
        "compaction_over_truncation": {
            "answer_words": ratio(words, "truncation, same tokens"),
            "verbatim": ratio(shares, "truncation, same tokens"),
        },
        "recall_over_truncation": (
            shares["compaction + recall"] / shares["truncation"] if shares["truncation"] else None
        ),
        "summary_errors": sum(row["summary_errors"] for row in rows),
    }


def print_report(result: dict[str, Any]) -> None:
    limits = result["limits"]
    print(
        f"{result['dataset']}: {len(result['conversations'])} conversations, "
        f"{result['questions']} questions (limits {limits['hard']} / {limits['target']} / keep "
        f"{limits['keep_recent']}); each cell: answers word for word / answer words held"
    )
    print(f"{'conversation':<14}{'turns':>6}{'tokens':>8}{'input':>7}"
          + "".join(f"{c:>26}" for c in CONDITIONS))  # fmt: skip
    for row in result["conversations"]:
        n = max(row["scored"], 1)
        cells = "".join(
            f"{row['answered'][c]:>13}{row['answer_words'][c] / n:>12.1%} " for c in CONDITIONS
        )
        print(f"{row['conversation']:<14}{row['turns']:>6}{row['history_tokens']:>8}"
              f"{row['input_tokens']:>7}{cells}")  # fmt: skip
    cells = "".join(
        f"{result['share'][c]:>13.1%}{result['answer_words'][c]:>12.1%} " for c in CONDITIONS
    )
    print(f"{'all':<35}{cells}")
    ratios = result["compaction_over_truncation"]
    print(
        "compaction alone / truncation to the same tokens: answer words "
        + _times(ratios["answer_words"])
        + ", answers word for word "
        + _times(ratios["verbatim"])
    )
    print("compaction + recall / truncation: " + _times(result["recall_over_truncation"]))
    print(f"summary errors: {result['summary_errors']}")


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json instead")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE / "memstore-benchmarks")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--min-sessions", type=int, default=10)
    parser.add_argument("--max-turns", type=int, default=600)
    parser.add_argument("--questions", type=int, default=30, help="per conversation, at most")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the N longest pairs (held-out data)"
    )
    parser.add_argument(
        "--undated", action="store_true", help="no session date markers (as before them)"
    )
    parser.add_argument(
        "--agent-sessions", type=int, default=6, help="generated tool-using sessions (0: none)"
    )
    parser.add_argument("--agent-tasks", type=int, default=40, help="tasks per agent session")
    parser.add_argument(
        "--sittings",
        action="store_true",
        help="one scoped session per sitting, consolidated at its end; questions asked in a "
        "fresh session (recall across a user's sessions, long-term entries alone)",
    )
    parser.add_argument(
        "--hard",
        type=int,
        help="what if: every input within N tokens (target 3/5 of it, keep 4) instead of the "
        "store's defaults",
    )
    parser.add_argument(
        "--entry-share",
        type=float,
        help="what if (with --sittings): consolidation's entries may hold this share of the "
        "tokens they distil instead of a fifth",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    limits = MemoryLimits()  # the store's defaults
    if args.hard is not None:
        try:
            limits = MemoryLimits(args.hard, args.hard * 3 // 5, limits.keep_recent)
        except MemstoreError as error:
            parser.error(f"--hard: {error}")
    if args.entry_share is not None:
        if not args.sittings or not 0 < args.entry_share <= 1:
            parser.error("--entry-share takes a share from 0 to 1, with --sittings")
        # A what-if on the product's own bound: budget_for reads the ratio when it runs.
        slots.COMPACTION_RATIO = args.entry_share
    if args.locomo is not None:
        dataset = "LoCoMo"
        conversations = locomo_conversations(args.locomo, questions=args.questions)
    else:
        dataset = "Chit-Chat Challenge (chitchat-dataset 0.9.0)"
        conversations = chitchat_conversations(
            fetch_chitchat(args.cache),
            count=args.conversations,
            min_sessions=args.min_sessions,
            max_turns=args.max_turns,
            questions=args.questions,
            skip=args.skip,
            dated=not args.undated,
        )
    if args.sittings:
        import fidelity_sittings  # beside this file; it reads this module's measures

        rows = asyncio.run(fidelity_sittings.run_sittings(conversations, limits))
        result = fidelity_sittings.report_sittings(dataset, rows, limits)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            fidelity_sittings.print_sittings(result)
        return
    result = report(dataset, asyncio.run(run(conversations, limits)), limits)
    agents: list[dict[str, Any]] = []
    timing: dict[str, float] = {}
    if args.agent_sessions:
        agents = asyncio.run(agent_sessions.main_async(args.agent_sessions, args.agent_tasks))
        timing = agent_sessions.summarizer_time()
    if args.json:
        result["agent_sessions"] = {"rows": agents, "totals": agent_sessions.report(agents)}
        result["summarizer_time"] = timing
        print(json.dumps(result, indent=2))
        return
    print_report(result)
    if agents:
        agent_sessions.print_report(agents, timing)


if __name__ == "__main__":
    main()
