"""Replay a session's recorded history, verify it, and re-run the policy on it (what-if).

The ledger records every append (with the session version it committed at) and every
compaction (its snapshot and commit versions, the fate of each item it removed, and the
summary it produced). Replaying those events in version order rebuilds the working memory
at any version; at the end it must equal what is stored, and along the way every report's
numbers must match the rebuilt state (``before_tokens`` at its snapshot version,
``after_tokens`` right after its commit). Any difference is reported, never repaired.

What-if runs the pure policy (:mod:`memstore.core.policy`) over the same recorded items with
other limits or another summarizer, offline, and reports what would have been kept.

Everything here is linear in the history: the replayed state keeps its items by id and a
running token total (an append or a removal costs what it touches, never a recount of the
session), and a report's ``before_tokens`` is looked up by bisection.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memstore.core.policy import CountTokens, Snapshot, SyncSummarize, plan_compaction
from memstore.core.records import CompactionReport, SessionHistory
from memstore.core.summary_room import KEPT, WROTE, newest_within, summary_fate
from memstore.core.values import (
    ITEM_OVERHEAD_TOKENS,
    SUMMARY_OVERHEAD_TOKENS,
    MemoryItem,
    MemoryLimits,
)


@dataclass
class MemoryState:
    """Working memory as replay rebuilds it: active items by id (oldest first), and their
    tokens as a running sum."""

    version: int
    summary: str | None = None
    summary_tokens: int = 0
    compaction_count: int = 0
    active: dict[str, MemoryItem] = field(default_factory=dict)
    item_tokens: int = 0

    @property
    def items(self) -> list[MemoryItem]:
        """Active items, oldest first."""
        return list(self.active.values())

    def append(self, item: MemoryItem) -> None:
        """An item entered working memory."""
        self.active[item.id] = item
        self.item_tokens += item.estimated_tokens + ITEM_OVERHEAD_TOKENS

    def remove(self, item_id: str) -> None:
        """An item left working memory (no-op if it was not active)."""
        item = self.active.pop(item_id, None)
        if item is not None:
            self.item_tokens -= item.estimated_tokens + ITEM_OVERHEAD_TOKENS

    def replace_items(self, items: Iterable[MemoryItem]) -> None:
        """Working memory now holds exactly ``items``."""
        self.active, self.item_tokens = {}, 0
        for item in items:
            self.append(item)

    @property
    def total_tokens(self) -> int:
        """The total: items + 4 each, the summary + 12."""
        summary = 0 if self.summary is None else self.summary_tokens + SUMMARY_OVERHEAD_TOKENS
        return self.item_tokens + summary


class _Totals:
    """The total after each replayed version, in version order (bisection finds the total
    at any version in log time)."""

    def __init__(self, version: int, total: int) -> None:
        self.versions, self.totals = [version], [total]

    def record(self, version: int, total: int) -> None:
        self.versions.append(version)
        self.totals.append(total)

    def at(self, version: int) -> int | None:
        index = bisect_right(self.versions, version)
        return self.totals[index - 1] if index else None


@dataclass(frozen=True)
class ReplayEvent:
    """One committed change, and the working memory right after it.

    Attributes:
        version: The session version it committed at.
        kind: ``"append"`` or ``"compaction"``.
        item: The appended item (appends).
        report: The compaction's report (compactions).
        tokens: The total right after the event.
        items: Active items right after the event.
        summary: The summary right after the event.
        problems: Where the recorded report disagrees with the replayed state.
    """

    version: int
    kind: str
    item: MemoryItem | None
    report: CompactionReport | None
    tokens: int
    items: int
    summary: str | None
    problems: tuple[str, ...] = ()


def initial_state(history: SessionHistory) -> MemoryState:
    """The state where the recorded history starts (empty, unless the session was pruned)."""
    base = history.base_version
    state = MemoryState(version=base)
    if base:
        removed_at = {r.compaction_count: r.committed_version for r in history.reports}
        state.replace_items(
            item
            for item in history.items
            if item.version <= base
            and (item.removed_by is None or removed_at.get(item.removed_by, 0) > base)
        )
        state.summary = history.base_summary
        state.summary_tokens = history.base_summary_tokens or 0
        state.compaction_count = (
            min(
                (r.compaction_count for r in history.reports),
                default=history.info.compaction_count + 1,
            )
            - 1
        )
    return state


def _timeline(history: SessionHistory) -> list[tuple[int, MemoryItem | CompactionReport]]:
    events: list[tuple[int, MemoryItem | CompactionReport]] = [
        (item.version, item) for item in history.items if item.version > history.base_version
    ]
    events += [(report.committed_version, report) for report in history.reports]
    events.sort(key=lambda pair: pair[0])
    return events


def replay(history: SessionHistory) -> Iterator[ReplayEvent]:
    """Yield every recorded change in commit order, with the state it leaves."""
    state = initial_state(history)
    totals = _Totals(state.version, state.total_tokens)
    for version, event in _timeline(history):
        if isinstance(event, MemoryItem):
            state.append(event)
            state.version = version
            totals.record(version, state.total_tokens)
            yield ReplayEvent(
                version, "append", event, None, state.total_tokens, len(state.active), state.summary
            )
            continue
        problems = _apply_compaction(history, state, event, totals)
        state.version = version
        totals.record(version, state.total_tokens)
        yield ReplayEvent(
            version,
            "compaction",
            None,
            event,
            state.total_tokens,
            len(state.active),
            state.summary,
            tuple(problems),
        )


def _apply_compaction(
    history: SessionHistory,
    state: MemoryState,
    report: CompactionReport,
    totals: _Totals | None,
) -> list[str]:
    problems: list[str] = []
    label = f"compaction #{report.compaction_count}"
    seen_before = None if totals is None else totals.at(report.snapshot_version)
    if seen_before is not None and seen_before != report.before_tokens:
        problems.append(f"{label}: before_tokens {report.before_tokens}, replay says {seen_before}")
    for item_id in report.removed:
        item = state.active.get(item_id)
        if item is None:
            problems.append(f"{label}: removes item {item_id}, which was not active")
        elif item.version > report.snapshot_version:
            problems.append(f"{label}: removes seq {item.seq}, appended after its snapshot")
        state.remove(item_id)
    if report.summary_action in ("replaced", "trimmed"):
        text = history.summaries.get(report.compaction_count)
        if text is None:
            problems.append(f"{label}: its summary is missing")
        state.summary, state.summary_tokens = text, report.summary_tokens or 0
    elif report.summary_action == "removed":
        state.summary, state.summary_tokens = None, 0
    state.compaction_count = report.compaction_count
    if state.total_tokens != report.after_tokens:
        problems.append(
            f"{label}: after_tokens {report.after_tokens}, replay says {state.total_tokens}"
        )
    return problems


def state_at(history: SessionHistory, version: int) -> MemoryState:
    """The working memory as it was right after ``version`` committed."""
    state = initial_state(history)
    for event_version, event in _timeline(history):
        if event_version > version:
            break
        if isinstance(event, MemoryItem):
            state.append(event)
        else:
            _apply_compaction(history, state, event, None)
        state.version = event_version
    return state


def verify(history: SessionHistory, events: list[ReplayEvent] | None = None) -> list[str]:
    """Every disagreement between the replayed history and the stored state (empty: verified)."""
    events = list(replay(history)) if events is None else events
    problems = [p for event in events for p in event.problems]
    final = state_at(history, events[-1].version) if events else initial_state(history)
    info = history.info
    stored_active = [i.id for i in history.items if i.fate is None]
    if [i.id for i in final.items] != stored_active:
        problems.append(
            f"active items: replay has {len(final.items)}, the store has {len(stored_active)}"
        )
    if final.summary != history.summary:
        problems.append("summary: replay differs from the stored summary")
    if final.total_tokens != info.total_tokens:
        problems.append(f"tokens: replay {final.total_tokens}, stored {info.total_tokens}")
    if final.compaction_count != info.compaction_count:
        problems.append(
            f"compactions: replay {final.compaction_count}, stored {info.compaction_count}"
        )
    last_version = max((e.version for e in events), default=history.base_version)
    if last_version != info.version:
        problems.append(f"version: replay ends at {last_version}, stored {info.version}")
    return problems


@dataclass(frozen=True)
class Outcome:
    """Where a session ends up: stored (actual) or simulated (what-if)."""

    tokens: int
    items_kept: int
    compactions: int
    summary: str | None
    dropped: int = 0
    summarized: int = 0
    evicted: int = 0


def actual_outcome(history: SessionHistory) -> Outcome:
    """What really happened to the recorded history."""
    reports = history.reports
    return Outcome(
        tokens=history.info.total_tokens,
        items_kept=history.info.active_items,
        compactions=len(reports),
        summary=history.summary,
        dropped=sum(r.items_dropped for r in reports),
        summarized=sum(r.items_summarized for r in reports),
        evicted=sum(r.items_evicted for r in reports),
    )


def simulate(
    history: SessionHistory,
    limits: MemoryLimits,
    count_tokens: CountTokens,
    summarize: SyncSummarize | None,
) -> Outcome:
    """Re-run the policy over the recorded items with ``limits`` and ``summarize``.

    Items are appended in their recorded order with their recorded token counts; a
    compaction runs whenever the total reaches ``limits.hard``, exactly as the store does.
    """
    state = initial_state(history)
    fates = {"dropped": 0, "summarized": 0, "evicted": 0}
    compactions = 0
    written: str | None = None  # the last summary written (phase 3 may set it aside)
    unfolded: tuple[MemoryItem, ...] = ()  # evicted since, no summarizer reading them
    for item in sorted(history.items, key=lambda i: i.seq):
        if item.version <= history.base_version:
            continue
        state.append(item)
        if state.total_tokens < limits.hard:  # the running total: no snapshot needed yet
            continue
        snap = Snapshot(
            history.info.id,
            item.version,
            compactions,
            tuple(state.active.values()),
            state.summary,
            state.summary_tokens,
            summary_written=None if written == state.summary else written,
            unfolded=unfolded,
        )
        plan = plan_compaction(snap, limits, count_tokens, summarize)
        compactions += 1
        ended_as = summary_fate(
            "hard_limit", plan.summary_action, len(plan.summarized), plan.summary_error
        )
        if ended_as == KEPT:  # what it evicted waits for the next fold
            evicted = set(plan.evicted)
            gone = [i for i in snap.items if i.id in evicted]
            unfolded = newest_within([*unfolded, *gone], limits.hard)
        else:
            written, unfolded = (plan.summary if ended_as == WROTE else None), ()
        for fate in plan.removed.values():
            fates[fate] += 1
        state.replace_items(plan.kept)
        state.summary, state.summary_tokens = plan.summary, plan.summary_tokens
    return Outcome(
        tokens=state.total_tokens,
        items_kept=len(state.items),
        compactions=compactions,
        summary=state.summary,
        **fates,
    )
