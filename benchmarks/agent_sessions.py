"""Tool-using agent sessions (:mod:`agent_tasks`, generated): what a compacted session
still knows of its answers.

An **answer** is a task's subject (an id or a name) and the values its tool returned. At
the end, an answer is *kept* by an input when its call and output are still items of it,
or when one line of it holds the subject and every value (case aside). Truncation keeps the
newest items that fit the same tokens. A question is *presented as open* when a line under
an open / pending / unresolved heading holds an answered question's subject.
"""

from __future__ import annotations

import re
import time
from typing import Any

from agent_tasks import KINDS, Session, Task, generate  # beside this file

from memstore import MemoryLimits, MemoryStore, TiktokenEstimator

_OPEN_HEADING = re.compile(r"\b(open|pending|unresolved)\b", re.I)


def _holds(line: str, task: Task) -> bool:
    lowered = line.lower()
    return task.subject.lower() in lowered and all(v.lower() in lowered for v in task.values)


async def measure(session: Session, store: MemoryStore, limits: MemoryLimits) -> dict[str, Any]:
    """Answers kept by memstore's input and by truncation to the same tokens."""
    estimator = TiktokenEstimator()
    memory = store.session(f"{session.name}-{limits.hard}", limits=limits, estimator=estimator)
    stored: list[Any] = []
    for items, priorities in session.batches:
        stored += await memory.add_items(items, priority=priorities)
    active = {item.seq for item in await memory.items()}
    summary = await memory.summary() or ""
    budget = await memory.estimated_tokens()
    window: set[int] = set()
    used = 0
    for item in reversed(stored):  # truncation: the newest items that fit the same tokens
        if used + item.cost > budget:
            break
        used += item.cost
        window.add(item.seq)
    lines = summary.splitlines()
    heading, open_lines = "", []
    for line in lines:
        if line.endswith(":") and not line.startswith("-"):
            heading = line
        elif _OPEN_HEADING.search(heading):
            open_lines.append(line)
    kept = kept_forgotten = forgotten = truncated = presented_open = 0
    for task in session.tasks:
        seqs = {item.seq for item in stored if item.call_id in task.call_ids}
        raw = seqs <= active
        in_summary = any(_holds(line, task) for line in lines)
        kept += raw or in_summary
        if not raw:
            forgotten += 1
            kept_forgotten += in_summary
        truncated += seqs <= window
        presented_open += any(task.subject.lower() in line.lower() for line in open_lines)
    reports = await memory.reports()
    return {
        "session": session.name,
        "tasks": len(session.tasks),
        "compactions": len(reports),
        "summary_errors": sum(1 for r in reports if r.summary_error),
        "tokens": budget,
        "kept": kept,
        "forgotten": forgotten,
        "forgotten_kept": kept_forgotten,
        "truncation_kept": truncated,
        "presented_open": presented_open,
    }


async def run(
    sessions: list[Session], limits: list[MemoryLimits], store: MemoryStore
) -> list[dict[str, Any]]:
    """Every session at every pair of limits."""
    rows = []
    for limit in limits:
        for session in sessions:
            row = await measure(session, store, limit)
            row["limits"] = f"{limit.hard}/{limit.target}"
            rows.append(row)
    return rows


def summarizer_time(items: int = 1000, repeats: int = 5) -> dict[str, float]:
    """Seconds the extractive summarizer takes to fold ``items`` items (median of
    ``repeats``), with exact token counts and a 700-token room."""
    from datetime import UTC, datetime

    from memstore.core.carried_items import derived_text
    from memstore.core.values import MemoryItem, MemoryKind, MemoryRole
    from memstore.extraction.statements import new_words, score
    from memstore.extraction.summarizer import ExtractiveSummarizer

    kinds = {
        "user": (MemoryRole.USER, MemoryKind.USER_MESSAGE),
        "assistant": (MemoryRole.ASSISTANT, MemoryKind.ASSISTANT_MESSAGE),
        "function_call": (MemoryRole.ASSISTANT, MemoryKind.ASSISTANT_MESSAGE),
        "function_call_output": (MemoryRole.TOOL, MemoryKind.TOOL_OBSERVATION),
    }
    built: list[MemoryItem] = []
    seed = 0
    while len(built) < items:
        seed += 1
        for batch, priorities in generate(seed, 20).batches:
            for raw, priority in zip(batch, priorities, strict=True):
                role, kind = kinds[raw.get("type") or raw["role"]]
                built.append(
                    MemoryItem(
                        id=str(len(built)),
                        session_id="timing",
                        seq=len(built) + 1,
                        role=role,
                        kind=kind,
                        priority=priority,
                        content=derived_text(raw),
                        timestamp=datetime.now(UTC),
                        estimated_tokens=0,
                        payload=raw,
                        call_id=raw.get("call_id"),
                    )
                )
    built = built[:items]
    count = TiktokenEstimator().count
    summarizer = ExtractiveSummarizer()
    times = []
    for _ in range(repeats):
        score.cache_clear()  # each run from cold: no sentence scored by an earlier one
        new_words.cache_clear()
        began = time.perf_counter()
        summarizer.summarize(None, built, max_tokens=700, count_tokens=count)
        times.append(time.perf_counter() - began)
    return {"items": items, "median_s": sorted(times)[len(times) // 2], "min_s": min(times)}


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals per pair of limits."""
    out: dict[str, Any] = {}
    for limits in dict.fromkeys(row["limits"] for row in rows):
        group = [row for row in rows if row["limits"] == limits]
        total = {
            key: sum(row[key] for row in group)
            for key in group[0]
            if isinstance(group[0][key], int)
        }
        out[limits] = {
            **total,
            "forgotten_kept_share": total["forgotten_kept"] / max(total["forgotten"], 1),
            "over_truncation": total["kept"] / total["truncation_kept"]
            if total["truncation_kept"]
            else None,
        }
    return out


def print_report(rows: list[dict[str, Any]], timing: dict[str, float]) -> None:
    print(f"\nTool-using agent sessions (generated, {len(KINDS)} kinds of task, varied wording)")
    print(
        f"{'session':<12}{'limits':>10}{'tasks':>6}{'compactions':>12}{'kept':>6}"
        f"{'forgotten':>10}{'of those kept':>14}{'truncation':>11}{'open':>6}{'errors':>7}"
    )
    for row in rows:
        print(
            f"{row['session']:<12}{row['limits']:>10}{row['tasks']:>6}{row['compactions']:>12}"
            f"{row['kept']:>6}{row['forgotten']:>10}{row['forgotten_kept']:>14}"
            f"{row['truncation_kept']:>11}{row['presented_open']:>6}{row['summary_errors']:>7}"
        )
    for limits, total in report(rows).items():
        ratio = total["over_truncation"]
        print(
            f"limits {limits}: {total['forgotten_kept']} of {total['forgotten']} forgotten answers "
            f"still in the input ({total['forgotten_kept_share']:.0%}); answers kept "
            f"{total['kept']} vs truncation's {total['truncation_kept']} at the same tokens ("
            + ("n/a" if ratio is None else f"{ratio:.1f}x")
            + f"); answered questions presented as open: {total['presented_open']}; "
            f"summary errors: {total['summary_errors']}"
        )
    print(
        f"summarizer time for a {timing['items']}-item compaction: "
        f"{timing['median_s'] * 1000:.1f} ms (median of 5)"
    )


async def main_async(seeds: int, tasks: int) -> list[dict[str, Any]]:
    import tempfile
    from pathlib import Path

    sessions = [generate(seed, tasks) for seed in range(1, seeds + 1)]
    limits = [MemoryLimits(hard=1200, target=800, keep_recent=4), MemoryLimits()]
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "agents.db") as store:
            return await run(sessions, limits, store)


if __name__ == "__main__":
    import asyncio
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rows = asyncio.run(main_async(count, 40))
    print_report(rows, summarizer_time())
