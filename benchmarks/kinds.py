"""Fact probes on the chats of :mod:`corpora`: specifics kept, facts dated, facts consolidated.

For the chats whose people state specifics (ShareGPT in five languages, the support and the
code-review conversations, the sessions over several days), at each pair of limits:

* **user specifics kept**: the share of the forgotten user specifics memstore's final input
  holds, beside truncation's and the naive digest's at the same tokens (:mod:`kept_measures`),
  and the share of all the session's user specifics it holds;
* **dated** (sessions whose items carry days): of the forgotten facts the summary kept, the
  share whose summary line, or the heading it sits under, names the day the fact was said.
  A fact is a forgotten turn's sentence of five words or more (kept when its first
  :data:`FACT_WORDS` words stand in one summary line, case and punctuation aside) or one of
  its specifics (kept when it stands in one). A day is named by ISO ``2018-05-02``,
  ``2018/05/02``, ``2 May 2018``, ``May 2, 2018``, ``2 May``, ``May 2`` (the month's name or its
  first three letters) or ``2018年5月2日``; a heading is a line that ends with ``:`` or opens
  with ``#``, and rules the lines below it up to the next;
* **consolidated**: a scoped session (same limits; it consolidates what each compaction
  removes) then ``memory.consolidate()``; of the user's statements, the share whose specifics
  all stand in the entries written. A statement is a sentence of a user turn that is not a
  question and holds a specific; greetings and acknowledgements hold none.

    python benchmarks/kinds.py [--split dev] [--corpus multi-day] [--sessions 2] [--json]
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from corpora import Session, load  # beside this file
from kept_measures import kept, message_text, user_specifics  # beside this file
from kept_values import (  # beside this file
    append,
    arguments,
    as_message,
    grouped,
    measure,
    needs_clock,
    open_session,
    percent,
    share,
    take_in,
)

from memstore import MemoryStore

#: The chats these probes read: their people state specifics; tool sessions are kept_values'.
CHATS = (
    "sharegpt-en",
    "sharegpt-zh",
    "sharegpt-ru",
    "sharegpt-ko",
    "sharegpt-es",
    "support",
    "code-review",
    "multi-day",
)
#: Sessions per corpus by default: each is taken in twice (once scoped, to consolidate).
SESSIONS = 3
#: A sentence counts as a fact from this many words (shorter ones are greetings and replies)...
FACT_MIN_WORDS = 5
#: ... and is found in the summary by this many of its first words: a summary may cut a long
#: sentence short, but it keeps its opening.
FACT_WORDS = 6
#: Sentence ends: Latin marks before white space (not the point of ``3.5``), CJK marks as they
#: stand (no space follows them), and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_QUESTION_END = re.compile(r"[?？][\s\"'”’»)\]]*$")
_WORD = re.compile(r"\w+")
#: Month names a summary may write a day with (English, as the summaries are).
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")  # fmt: skip


# -- the pure parts -----------------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence's end mark (``.!?`` before a space, ``。！？``) and at
    line breaks."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def statements(text: str) -> list[list[str]]:
    """The specifics of each sentence of a user's turn that is a statement: not a question,
    and holding a specific."""
    out = []
    for sentence in sentences(text):
        found = user_specifics(sentence)
        if found and not _QUESTION_END.search(sentence):
            out.append(found)
    return out


def day_pattern(day: date) -> re.Pattern[str]:
    """The ways a summary may name ``day`` (module docstring)."""
    month = MONTHS[day.month - 1]
    name = f"(?:{month}|{month[:3]})"
    forms = [
        rf"{day.year}-{day.month:02d}-{day.day:02d}",
        rf"{day.year}/{day.month:02d}/{day.day:02d}",
        rf"{day.day} {name}\b",
        rf"{name}\.? {day.day}\b",
        rf"{day.year}年{day.month}月{day.day}日",
    ]
    return re.compile(rf"(?<!\d)(?:{'|'.join(forms)})", re.I)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def holding_lines(fact: str, lines: Sequence[str], sentence: bool) -> list[int]:
    """The indexes of the summary lines that keep ``fact``: a sentence by its opening words, a
    specific verbatim (case aside)."""
    if not sentence:
        return [i for i, line in enumerate(lines) if fact.casefold() in line.casefold()]
    opening = " ".join(_words(fact)[:FACT_WORDS])
    return [i for i, line in enumerate(lines) if opening in " ".join(_words(line))]


def headings(lines: Sequence[str]) -> list[str]:
    """For each line, the heading it sits under (``""``: none)."""
    out, current = [], ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#") or (stripped.endswith(":") and stripped[:1] not in "-*"):
            current = stripped
        out.append(current)
    return out


def dated_facts(facts: Sequence[tuple[str, bool, date]], summary: str) -> tuple[int, int]:
    """Of ``facts`` (text, is a sentence, the day it was said): how many the summary keeps,
    and how many of those its line or heading dates with their day."""
    lines = summary.splitlines()
    above = headings(lines)
    held = dated = 0
    for fact, sentence, day in facts:
        found = holding_lines(fact, lines, sentence)
        if found:
            held += 1
            named = day_pattern(day)
            dated += any(named.search(lines[i]) or named.search(above[i]) for i in found)
    return held, dated


def forgotten_facts(session: Session, forgotten: int) -> list[tuple[str, bool, date]]:
    """The facts of the session's first ``forgotten`` items that carry a time."""
    facts: list[tuple[str, bool, date]] = []
    for item in session.items[:forgotten]:
        if item.timestamp is None or item.role not in ("user", "assistant"):
            continue
        text, day = message_text(as_message(item)), item.timestamp.date()
        facts += [(s, True, day) for s in sentences(text) if len(_words(s)) >= FACT_MIN_WORDS]
        facts += [(v, False, day) for v in user_specifics(text)]
    return facts


# -- the runs -----------------------------------------------------------------------------------


async def probe(session: Session, store: MemoryStore, limits: str) -> dict[str, Any]:
    """Specifics kept and facts dated (one run), then what consolidation writes (another)."""
    run = await take_in(session, store, limits)
    row = measure(run)
    out: dict[str, Any] = {
        key: row[key]
        for key in ("session", "corpus", "limits", "items", "compactions", "summary_errors",
                    "user_specifics", "user_kept", "user_specifics_all", "user_all_kept")
    }  # fmt: skip
    days = {item.timestamp.date() for item in session.items if item.timestamp}
    out["days"] = len(days)
    if len(days) > 1:
        out["facts_kept"], out["facts_dated"] = dated_facts(
            forgotten_facts(session, row["forgotten_items"]), run.summary
        )
    scope = f"user:{session.name}-{limits.replace('/', '-')}"
    memory = open_session(store, session, limits, scope=scope)
    await append(memory, session)
    await memory.consolidate()
    entries = await store.ltm.list(scope=scope)
    written = "\n".join(
        e.value if isinstance(e.value, str) else json.dumps(e.value, ensure_ascii=False)
        for e in entries
    )
    said = [
        found
        for item in session.items
        if item.role == "user" and isinstance(item.body, str)
        for found in statements(item.body)
    ]
    out["entries"] = len(entries)
    out["statements"] = len(said)
    out["statements_kept"] = sum(1 for values in said if kept(values, written) == len(values))
    return out


def totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per corpus and limits: sums and shares."""
    sums = ("items", "compactions", "summary_errors", "user_specifics", "user_specifics_all",
            "entries", "statements", "statements_kept", "facts_kept", "facts_dated")  # fmt: skip
    measures = (("user", "user_specifics"), ("user_all", "user_specifics_all"))
    out = []
    for total, group in grouped(rows, sums, measures):
        total["days"] = max(row["days"] for row in group)
        total["dated_share"] = share(total["facts_dated"], total["facts_kept"])
        total["consolidated_share"] = share(total["statements_kept"], total["statements"])
        out.append(total)
    return out


def print_report(rows: list[dict[str, Any]]) -> None:
    """The table: per corpus and limits, specifics kept, facts dated, statements consolidated."""
    print("User specifics kept, facts dated and statements consolidated, on chats")
    print(
        f"{'corpus':<14}{'split':<9}{'limits':<11}{'sess':>5}{'items':>6}{'days':>5} | "
        f"{'user':>5}{'memstore':>9}{'trunc':>7}{'digest':>8}{'all':>7} | "
        f"{'facts':>6}{'dated':>7} | {'stmts':>6}{'in entries':>11}{'entries':>8}"
    )
    for t in totals(rows):
        share = t["user_share"]
        print(
            f"{t['corpus']:<14}{t['split']:<9}{t['limits']:<11}{t['sessions']:>5}{t['items']:>6}"
            f"{t['days']:>5} | {t['user_specifics']:>5}{percent(share['memstore']):>9}"
            f"{percent(share['truncation']):>7}{percent(share['digest']):>8}"
            f"{percent(t['user_all_share']['memstore']):>7} | "
            f"{t['facts_kept']:>6}{percent(t['dated_share']):>7} | "
            f"{t['statements']:>6}{percent(t['consolidated_share']):>11}{t['entries']:>8}"
        )
    print(
        "user: forgotten user specifics, the share each input keeps (all: of every user "
        "specific, memstore); facts: forgotten facts the summary keeps, dated: the share "
        "dated with their day; stmts: user statements, in entries: the share consolidation "
        "wrote down"
    )


async def run_all(sessions: list[Session], limits: list[str]) -> list[dict[str, Any]]:
    """Every session at every pair of limits, in one scratch store."""
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "kinds.db") as store:
            return [await probe(s, store, limit) for limit in limits for s in sessions]


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0], sessions=SESSIONS)
    names = [name for name in args.corpus if name in CHATS]
    sessions = needs_clock(list(load(names, args.cache, args.sessions)))
    rows = asyncio.run(run_all(sessions, args.limits))
    if args.json:
        print(json.dumps({"sessions": rows, "corpora": totals(rows)}, indent=2, default=str))
    else:
        print_report(rows)


if __name__ == "__main__":
    main()
