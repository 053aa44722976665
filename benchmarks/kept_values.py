"""Forgotten values a compacted session still holds, on corpora of kinds it was not built on.

Each session of :mod:`corpora` is appended to memstore, turn by turn, with exact o200k_base
counts (``TiktokenEstimator``) and the extractive summarizer, at hard 600 / target 350 /
keep 2 and at the store's defaults (1500 / 900 / 4); items that carry a time are appended
at that time (the clock is moved with ``time-machine``), so their timestamps carry the days.
Then the final ``build_model_input()`` is compared with two inputs of the same tokens:

* **truncation**: the newest items that fit;
* **naive digest**: the newest items that fit beside the room memstore's summary takes, and
  in that room one line of values per forgotten tool output and user turn.

The measures, the values and the digest are defined in :mod:`kept_measures`. Per corpus: the
share of forgotten tool values and of forgotten user specifics each input keeps, memstore's
share over truncation's, the compactions, the summary errors and the seconds memstore took
to take the session in (appends and compactions). Each corpus is marked dev or held-out
(:data:`corpora.SPLIT`).

    python benchmarks/kept_values.py [--split dev] [--corpus bfcl] [--sessions 2]
                                     [--limits 600/350/2] [--json]

Runs against whichever memstore the interpreter imports (only its public API), so any
checkout can be measured: ``cd CHECKOUT && .venv/bin/python PATH/TO/kept_values.py``.
Offline after the first fetch of each corpus (``--cache DIR``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpora import DEFAULT_CACHE, SPLIT, Item, Session, load  # beside this file
from kept_measures import (  # beside this file
    cost,
    input_text,
    kept,
    message_text,
    naive_digest,
    tool_values,
    user_specifics,
    window_start,
)

from memstore import ExtractiveSummarizer, MemoryLimits, MemoryStore, TiktokenEstimator

if TYPE_CHECKING:
    from memstore import SessionMemory

#: Tight limits (many compactions, a small summary) and the store's defaults.
LIMITS = {"600/350/2": MemoryLimits(600, 350, 2), "1500/900/4": MemoryLimits(1500, 900, 4)}
#: The three inputs of the same tokens compared: memstore's, and its two baselines.
CONDITIONS = ("memstore", "truncation", "digest")
#: Sessions per corpus by default: with kinds.py's probes, every corpus at both limits in
#: well under ten minutes on a shared two-core machine.
DEFAULT_SESSIONS = 6


@dataclass
class Run:
    """One session taken in by memstore: what its final input holds, and what it cost."""

    session: Session
    limits: str
    messages: list[dict[str, Any]]
    active: list[bool]  # per item of the session: still an item of working memory
    summary: str
    compactions: int
    summary_errors: int
    seconds: float


def as_message(item: Item) -> dict[str, Any]:
    """The input message an item becomes: its Responses item, or a message of its text."""
    if isinstance(item.body, dict):
        return item.body
    return {"role": item.role, "content": item.body}


@contextlib.contextmanager
def clock(when: datetime | None) -> Iterator[None]:
    """The clock stands at ``when`` (nothing changes for ``None``)."""
    if when is None:
        yield
        return
    import time_machine  # only sessions whose items carry a time need it

    with time_machine.travel(when, tick=False):
        yield


def open_session(
    store: MemoryStore, session: Session, limits: str, scope: str | None = None
) -> SessionMemory:
    """A fresh memstore session for ``session`` at ``limits`` (belonging to ``scope``)."""
    name = f"{session.name}-{limits.replace('/', '-')}" + ("" if scope is None else "-scoped")
    return store.session(
        name,
        limits=LIMITS[limits],
        estimator=TiktokenEstimator(),
        summarizer=ExtractiveSummarizer(),
        scope=scope,
    )


async def append(memory: SessionMemory, session: Session) -> tuple[list[int], float]:
    """Append ``session`` turn by turn; the items' seqs, and the seconds it took."""
    seqs: list[int] = []
    began = time.perf_counter()
    for turn in session.turns:
        with clock(turn[0].timestamp):
            carried = [item.body for item in turn if isinstance(item.body, dict)]
            if len(carried) == len(turn):
                seqs += [item.seq for item in await memory.add_items(carried)]
            else:
                for item in turn:
                    added = await memory.add(item.role, str(item.body), kind=item.kind)
                    seqs.append(added.seq)
    return seqs, time.perf_counter() - began


async def take_in(session: Session, store: MemoryStore, limits: str) -> Run:
    """Append ``session`` to a fresh memstore session at ``limits``; what its input holds."""
    memory = open_session(store, session, limits)
    seqs, seconds = await append(memory, session)
    active = {item.seq for item in await memory.items()}
    reports = await memory.reports()
    return Run(
        session=session,
        limits=limits,
        messages=await memory.build_model_input(),
        active=[seq in active for seq in seqs],
        summary=await memory.summary() or "",
        compactions=len(reports),
        summary_errors=sum(1 for report in reports if report.summary_error),
        seconds=seconds,
    )


def measure(run: Run) -> dict[str, Any]:
    """The kept values of one run, for memstore, truncation and the naive digest."""
    count = TiktokenEstimator().count
    messages = [as_message(item) for item in run.session.items]
    costs = [cost(message, count) for message in messages]
    budget = sum(cost(message, count) for message in run.messages)
    start = window_start(costs, budget)
    room = budget - sum(c for c, active in zip(costs, run.active, strict=True) if active)
    names = tool_names(messages)
    digest_start = window_start(costs, budget - room)
    digest = naive_digest(messages, names, digest_start, room, count)
    texts = {
        "memstore": input_text(run.messages),
        "truncation": input_text(messages[start:]),
        "digest": digest + "\n" + input_text(messages[digest_start:]),
    }
    tools = [v for i in range(start) if names[i] for v in tool_values(message_text(messages[i]))]
    users = [specifics_of(message) for message in messages]
    forgotten_users = [v for i in range(start) for v in users[i]]
    all_users = [v for values in users for v in values]
    return {
        "session": run.session.name,
        "corpus": run.session.corpus,
        "limits": run.limits,
        "items": len(messages),
        "tokens": budget,
        "summary_room": room,
        "forgotten_items": start,
        "compactions": run.compactions,
        "summary_errors": run.summary_errors,
        "seconds": run.seconds,
        "tool_values": len(tools),
        "tool_kept": {c: kept(tools, texts[c]) for c in CONDITIONS},
        "user_specifics": len(forgotten_users),
        "user_kept": {c: kept(forgotten_users, texts[c]) for c in CONDITIONS},
        "user_specifics_all": len(all_users),
        "user_all_kept": {c: kept(all_users, texts[c]) for c in CONDITIONS},
    }


def tool_names(messages: list[dict[str, Any]]) -> list[str | None]:
    """For each message, the name of the call it is the output of (``None``: not an output)."""
    called = {m.get("call_id"): m.get("name") for m in messages if m.get("type") == "function_call"}
    return [
        str(called.get(m.get("call_id")) or "tool") if m.get("type") == "function_call_output"
        else None
        for m in messages
    ]  # fmt: skip


def specifics_of(message: dict[str, Any]) -> list[str]:
    """A user turn's specifics; none for any other message."""
    if message.get("role") != "user" or message.get("type") not in (None, "message"):
        return []
    return user_specifics(message_text(message))


# -- the report ---------------------------------------------------------------------------------


#: The measures kept_values reports: (the prefix of its counts, the field of its total).
MEASURES = (("tool", "tool_values"), ("user", "user_specifics"), ("user_all", "user_specifics_all"))


def grouped(
    rows: list[dict[str, Any]], sums: tuple[str, ...], measures: tuple[tuple[str, str], ...]
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Rows by corpus and limits: each group's total and its rows.

    A total holds the corpus, its split, the limits, the sessions, the sum of each of ``sums``,
    and for each measure ``(name, of)`` the values each input kept (``name_kept``) and their
    share of ``of`` (``name_share``; ``None`` when there were none).
    """
    out = []
    for key in dict.fromkeys((row["corpus"], row["limits"]) for row in rows):
        group = [row for row in rows if (row["corpus"], row["limits"]) == key]
        total: dict[str, Any] = {"corpus": key[0], "limits": key[1], "split": SPLIT[key[0]]}
        total["sessions"] = len(group)
        total.update((name, sum(row.get(name, 0) for row in group)) for name in sums)
        for name, of in measures:
            held = {c: sum(row[f"{name}_kept"][c] for row in group) for c in CONDITIONS}
            total[f"{name}_kept"] = held
            total[f"{name}_share"] = {c: share(held[c], total[of]) for c in CONDITIONS}
        out.append((total, group))
    return out


def totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per corpus and limits: the sums, the shares kept by each input, and memstore's
    share over truncation's."""
    sums = ("items", "compactions", "summary_errors", "seconds", *(of for _, of in MEASURES))
    out = []
    for total, _group in grouped(rows, sums, MEASURES):
        for name, _of in MEASURES:
            kept_share = total[f"{name}_share"]
            total[f"{name}_over_truncation"] = _ratio(
                kept_share["memstore"], kept_share["truncation"]
            )
        out.append(total)
    return out


def share(part: float, whole: float) -> float | None:
    """``part / whole``, ``None`` for an empty whole."""
    return part / whole if whole else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def percent(value: float | None) -> str:
    """A share as a table cell."""
    return "-" if value is None else f"{value:.1%}"


def print_report(rows: list[dict[str, Any]]) -> None:
    """The table: per corpus and limits, forgotten tool values and user specifics kept."""
    head = (
        f"{'corpus':<14}{'split':<9}{'limits':<11}{'sess':>5}{'items':>6}{'comp':>6}{'err':>4}"
        f"{'secs':>7} | {'tool':>5}{'memstore':>9}{'trunc':>7}{'ratio':>7}{'digest':>8} | "
        f"{'user':>5}{'memstore':>9}{'trunc':>7}{'ratio':>7}{'digest':>8}"
    )
    print("Forgotten values kept in the final model input (same tokens for every input)")
    print(head)
    for t in totals(rows):
        cells = []
        for measure_, of in (("tool", "tool_values"), ("user", "user_specifics")):
            share = t[f"{measure_}_share"]
            ratio = t[f"{measure_}_over_truncation"]
            cells.append(
                f"{t[of]:>5}{percent(share['memstore']):>9}{percent(share['truncation']):>7}"
                f"{'-' if ratio is None else f'{ratio:.2f}x':>7}{percent(share['digest']):>8}"
            )
        print(
            f"{t['corpus']:<14}{t['split']:<9}{t['limits']:<11}{t['sessions']:>5}{t['items']:>6}"
            f"{t['compactions']:>6}{t['summary_errors']:>4}{t['seconds']:>7.1f} | "
            + " | ".join(cells)
        )
    print(
        "tool / user: forgotten tool values / user specifics; memstore, trunc(ation), digest: "
        "the share each input keeps; ratio: memstore / truncation"
    )


# -- the command line ---------------------------------------------------------------------------


async def run_all(sessions: list[Session], limits: list[str]) -> list[Run]:
    """Every session at every pair of limits, in one scratch store."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "kept.db") as store:
            for limit in limits:
                for session in sessions:
                    runs.append(await take_in(session, store, limit))
    return runs


def arguments(description: str, sessions: int = DEFAULT_SESSIONS) -> argparse.Namespace:
    """The options :mod:`kept_values` and :mod:`kinds` share."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", action="append", choices=sorted(SPLIT), help="repeatable")
    parser.add_argument("--split", choices=("dev", "held-out"), help="only these corpora")
    parser.add_argument("--sessions", type=int, default=sessions, help="per corpus")
    parser.add_argument("--limits", action="append", choices=sorted(LIMITS), help="repeatable")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.sessions < 1:
        parser.error("--sessions takes a number from 1")
    chosen = args.corpus or list(SPLIT)
    args.corpus = [name for name in chosen if args.split in (None, SPLIT[name])]
    args.limits = args.limits or list(LIMITS)
    return args


def needs_clock(sessions: list[Session]) -> list[Session]:
    """``sessions`` less those whose items carry a time when ``time-machine`` is missing."""
    try:
        import time_machine  # noqa: F401
    except ImportError:
        dated = [s.name for s in sessions if any(i.timestamp for i in s.items)]
        if dated:
            print(f"left out (time-machine, in memstore's checkout: pip install '.[bench]'): "
                  f"{', '.join(dated)}", file=sys.stderr)  # fmt: skip
        return [s for s in sessions if s.name not in dated]
    return sessions


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0])
    sessions = needs_clock(list(load(args.corpus, args.cache, args.sessions)))
    rows = [measure(run) for run in asyncio.run(run_all(sessions, args.limits))]
    if args.json:
        print(json.dumps({"sessions": rows, "corpora": totals(rows)}, indent=2))
    else:
        print_report(rows)


if __name__ == "__main__":
    main()
