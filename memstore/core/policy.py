"""The compaction policy: pure functions from a snapshot to a plan.

A session's working memory is bounded by two numbers. When its estimated total reaches the
*hard* limit, a compaction brings it down to the *target* limit in three phases, cheapest loss
first. The newest ``keep_recent`` items are *protected* in phases 1 and 2.

1. **Drop known noise.** Oldest first, while the total is above the target, remove unprotected
   LOW-priority tool observations: health checks and listings nobody will miss. No model call.
2. **Summarize older useful state.** If still above the target, every remaining unprotected
   item is a candidate. The summarizer receives the *existing* summary plus the candidates and
   returns one new summary that replaces the old one, so each compaction folds the previous
   summary in rather than forgetting it. The summarizer is told the room the target leaves
   once the items that stay are counted, in the session's own tokens
   (:func:`~memstore.core.summary_room.summary_room`). If the summarizer fails, the error is
   recorded and the candidates stay for phase 3; one that found nothing worth keeping is no
   failure. When the items that stay fill the target (a few very long recent turns), there
   is no room for any summary: no summarizer is called, no error is recorded, and phase 3
   evicts. A fold starts from the last summary a summarizer wrote, even when phase 3 has
   since trimmed or removed it for room, and reads the items phase 3 evicted since without a
   summarizer reading them before its candidates (:attr:`Snapshot.fold_from`,
   :meth:`Snapshot.fold_items`): a long paste or a failed summarizer delays a fold, it does
   not lose what the fold would have kept.
3. **Enforce the budget.** While still above the target: evict the remaining unprotected items
   oldest first; then trim the summary (it is the oldest context) or remove it; only then evict
   protected items, oldest first. The result is at most the target, always: even one recent
   item larger than the target is evicted rather than allowed to break the bound.

Every phase works on *units* (:mod:`memstore.core.units`), not single items: a Responses call and
its output, or a reasoning item and what it led to, are protected, dropped, summarized and
evicted together, and ``keep_recent`` protects every unit that holds one of the newest items.
"Oldest" and "newest" are in the model's order (:mod:`memstore.core.turns`): each writer's
turns whole, in the order they began, so ``keep_recent`` protects what the model reads last.
A pending unit (a call still waiting for its output) is never removed, not even in phase 3:
the one case where a compaction may end above the target, by at most that unit.

Nothing here performs I/O. The summarizer is called *between* :func:`start_plan` and
:func:`finish_plan` by whoever orchestrates (the store, replay, a test), which is what lets the
store hold no transaction while a model thinks, and lets replay re-run the policy offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from memstore.core.summary_room import summary_room, trim_to_tokens
from memstore.core.turns import turn_order
from memstore.core.units import Unit, closure, units
from memstore.core.values import (
    ITEM_OVERHEAD_TOKENS,
    SUMMARY_OVERHEAD_TOKENS,
    Fate,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    Priority,
)

CountTokens = Callable[[str], int]
#: A synchronous summarizer, for offline replay and tests, called as
#: ``summarize(previous, candidates, max_tokens=room, count_tokens=count)`` (the
#: :class:`memstore.Summarizer` protocol's arguments, without the ``await``).
SyncSummarize = Callable[..., str]


@dataclass(frozen=True)
class Snapshot:
    """A consistent read of one session's working memory.

    Attributes:
        session_id: The session.
        version: Session version (event clock) at the read.
        compaction_count: Compactions committed so far.
        items: Active items, oldest first.
        summary: The rolling summary, or ``None``.
        summary_tokens: Estimated tokens of ``summary`` (0 without one).
        user_turns: User messages appended since the last compaction.
        estimator: Name of the estimator that counted the session.
        read_at: When it was read (seconds since 1970): pending calls' deadlines are
            judged against it (``None``: deadlines are not judged).
        summary_written: The last summary a summarizer wrote, when phase 3 has trimmed or
            removed it since, for room (``None``: none, or ``summary`` is it;
            :func:`~memstore.core.summary_room.summary_fate`).
        unfolded: Items phase 3 evicted since that summary without a summarizer reading
            them, oldest first: the next fold reads them first.
    """

    session_id: str
    version: int
    compaction_count: int
    items: tuple[MemoryItem, ...]
    summary: str | None = None
    summary_tokens: int = 0
    user_turns: int = 0
    estimator: str = ""
    read_at: float | None = None
    summary_written: str | None = None
    unfolded: tuple[MemoryItem, ...] = ()

    @property
    def fold_from(self) -> str | None:
        """The summary the next fold starts from: the last one written, in full."""
        return self.summary if self.summary_written is None else self.summary_written

    def fold_items(self, candidates: Sequence[MemoryItem]) -> tuple[MemoryItem, ...]:
        """What the next fold reads: the items evicted unread, then ``candidates``."""
        return (*self.unfolded, *candidates)

    @property
    def total_tokens(self) -> int:
        """Total estimated tokens: items + 4 each, the summary + 12."""
        return total_tokens(self.items, self.summary, self.summary_tokens)


def total_tokens(items: Iterable[MemoryItem], summary: str | None, summary_tokens: int) -> int:
    """Sum of (item tokens + 4) over ``items``, plus (summary tokens + 12) if a summary exists."""
    total = sum(item.estimated_tokens + ITEM_OVERHEAD_TOKENS for item in items)
    if summary is not None:
        total += summary_tokens + SUMMARY_OVERHEAD_TOKENS
    return total


def summary_cost(summary: str | None, summary_tokens: int) -> int:
    """What the summary adds to the total (0 without a summary)."""
    return 0 if summary is None else summary_tokens + SUMMARY_OVERHEAD_TOKENS


def needs_compaction(snapshot: Snapshot, limits: MemoryLimits) -> str | None:
    """Which trigger fires for ``snapshot``: ``"hard_limit"``, ``"summarize_every"`` or ``None``."""
    if snapshot.total_tokens >= limits.hard:
        return "hard_limit"
    if limits.summarize_every is not None and snapshot.user_turns >= limits.summarize_every:
        return "summarize_every"
    return None


@dataclass(frozen=True)
class PlanDraft:
    """The plan after phase 1, waiting for the summarizer's answer.

    Attributes:
        snapshot: What the plan was made from.
        budget: The total the plan must reach (the target limit).
        protected_ids: Ids of the newest ``keep_recent`` items.
        dropped: Items removed as noise in phase 1, oldest first.
        remaining: Items still active after phase 1, oldest first.
        candidates: Items to hand the summarizer (empty when phase 2 is not needed).
        units: The snapshot's items grouped into units, oldest first.
    """

    snapshot: Snapshot
    budget: int
    protected_ids: frozenset[str]
    dropped: tuple[MemoryItem, ...]
    remaining: tuple[MemoryItem, ...]
    candidates: tuple[MemoryItem, ...]
    units: tuple[Unit, ...] = ()

    @property
    def tokens_after_drop(self) -> int:
        """The total once phase 1's drops are applied."""
        snap = self.snapshot
        return total_tokens(self.remaining, snap.summary, snap.summary_tokens)


@dataclass(frozen=True)
class CompactionPlan:
    """The outcome of the three phases, ready to commit.

    Attributes:
        snapshot: What the plan was made from.
        kept: Items that stay active, oldest first.
        dropped / summarized / evicted: Ids removed in each phase, oldest first.
        popped / cleared: Ids the application took back (``pop_item``, ``clear_session``:
            no phase of the policy removes those).
        summary: The summary after the compaction (``None``: no summary).
        summary_tokens: Its estimated tokens (0 without one).
        summary_action: ``"kept"``, ``"replaced"``, ``"trimmed"`` or ``"removed"``.
        summary_error: Why the summarizer failed, or ``None``.
    """

    snapshot: Snapshot
    kept: tuple[MemoryItem, ...]
    dropped: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()
    popped: tuple[str, ...] = ()
    cleared: tuple[str, ...] = ()
    summary: str | None = None
    summary_tokens: int = 0
    summary_action: str = "kept"
    summary_error: str | None = None
    removed_cost: int = 0

    @property
    def before_tokens(self) -> int:
        """Total of the snapshot."""
        return self.snapshot.total_tokens

    @property
    def after_tokens(self) -> int:
        """Total of the planned working memory."""
        return total_tokens(self.kept, self.summary, self.summary_tokens)

    @property
    def removed(self) -> Mapping[str, str]:
        """Each removed item's id mapped to its fate."""
        fates: dict[str, str] = {}
        for fate, ids in (
            (Fate.DROPPED, self.dropped),
            (Fate.SUMMARIZED, self.summarized),
            (Fate.EVICTED, self.evicted),
            (Fate.POPPED, self.popped),
            (Fate.CLEARED, self.cleared),
        ):
            fates.update(dict.fromkeys(ids, fate.value))
        return fates

    @property
    def changes_anything(self) -> bool:
        """False when committing the plan would change nothing."""
        return bool(self.removed) or self.summary_action != "kept"


def protected_ids(
    items: Sequence[MemoryItem], keep_recent: int, groups: Sequence[Unit] | None = None
) -> frozenset[str]:
    """Ids of the newest ``keep_recent`` items, counted in the model's order (the turns,
    :mod:`memstore.core.turns`), and the rest of their units, and of every pending unit (a
    call waiting for its output)."""
    groups = units(items) if groups is None else groups
    ordered = turn_order(items)
    newest = [item.id for item in ordered[-keep_recent:]] if keep_recent > 0 else []
    pending = [item.id for unit in groups if unit.pending for item in unit.items]
    return closure(groups, [*newest, *pending])


def is_noise(item: MemoryItem) -> bool:
    """A LOW-priority tool observation: the only kind phase 1 drops without a model."""
    return item.kind is MemoryKind.TOOL_OBSERVATION and item.priority is Priority.LOW


def is_noise_unit(unit: Unit) -> bool:
    """A unit phase 1 may drop: its observations are all noise, and it holds no message
    (the call and reasoning that produced a noisy output go with it)."""
    observations = [item for item in unit.items if item.kind is MemoryKind.TOOL_OBSERVATION]
    others = [item for item in unit.items if item.kind is not MemoryKind.TOOL_OBSERVATION]
    return (
        bool(observations)
        and all(is_noise(item) for item in observations)
        and all(item.payload is not None and item.item_type != "message" for item in others)
    )


def start_plan(
    snapshot: Snapshot,
    limits: MemoryLimits,
    *,
    force: bool = False,
    drop_noise: bool = True,
    budget: int | None = None,
) -> PlanDraft:
    """Run phase 1 and choose phase 2's candidates.

    Args:
        snapshot: The session as read.
        limits: Its limits; the plan aims at ``limits.target``.
        force: Run phases 1 and 2 even when the total is already at or below the target
            (a manual ``compact()`` or the ``summarize_every`` trigger).
        drop_noise: Whether phase 1 runs (the ``summarize_every`` trigger skips it).
        budget: The total to reach; ``limits.target`` unless given.

    Returns:
        The draft; call the summarizer on ``draft.candidates`` if there are any.
    """
    budget = limits.target if budget is None else budget
    groups = units(snapshot.items, snapshot.read_at)
    protected = protected_ids(snapshot.items, limits.keep_recent, groups)
    total = snapshot.total_tokens
    dropped_ids: set[str] = set()
    if drop_noise:
        for unit in groups:
            if not force and total <= budget:
                break
            if not unit.ids & protected and is_noise_unit(unit):
                dropped_ids |= unit.ids
                total -= unit.cost
    dropped = tuple(item for item in snapshot.items if item.id in dropped_ids)
    remaining = tuple(item for item in snapshot.items if item.id not in dropped_ids)
    candidates: tuple[MemoryItem, ...] = ()
    if force or total > budget:
        candidates = tuple(item for item in remaining if item.id not in protected)
    if candidates and summary_room(budget, remaining, candidates) < 1:
        # The items that stay fill the target: no summary could hold anything, so none is
        # asked for (no call, no error); phase 3 evicts.
        candidates = ()
    return PlanDraft(snapshot, budget, protected, dropped, remaining, candidates, groups)


def finish_plan(
    draft: PlanDraft,
    count_tokens: CountTokens,
    *,
    new_summary: str | None = None,
    summary_error: str | None = None,
) -> CompactionPlan:
    """Apply the summarizer's answer (phase 2) and enforce the budget (phase 3).

    Args:
        draft: From :func:`start_plan`.
        count_tokens: The session's estimator, to count (and trim) the summary.
        new_summary: What the summarizer returned; ``None`` or blank means it failed.
        summary_error: Why it failed, recorded in the plan.

    Returns:
        A plan whose ``after_tokens`` is at most the budget.
    """
    snap = draft.snapshot
    summary, summary_tokens, action = snap.summary, snap.summary_tokens, "kept"
    items = list(draft.remaining)
    summarized: tuple[str, ...] = ()
    if draft.candidates:
        text = (new_summary or "").strip()
        if text:
            summary, summary_tokens, action = text, count_tokens(text), "replaced"
            summarized = tuple(item.id for item in draft.candidates)
            items = [item for item in items if item.id not in set(summarized)]
        elif summary_error is None and getattr(new_summary, "kept_nothing", False):
            # The summarizer read everything and found nothing worth keeping: an answer.
            summarized = tuple(item.id for item in draft.candidates)
            items = [item for item in items if item.id not in set(summarized)]
            if summary is not None:
                summary, summary_tokens, action = None, 0, "removed"
        elif summary_error is None:
            summary_error = "summarizer returned no usable text"

    evicted, summary, summary_tokens, action = _enforce_budget(
        items, draft, summary, summary_tokens, action, count_tokens
    )
    evicted_ids = set(evicted)
    kept = tuple(item for item in items if item.id not in evicted_ids)
    removed_ids = {item.id for item in draft.dropped} | set(summarized) | evicted_ids
    return CompactionPlan(
        snapshot=snap,
        kept=kept,
        dropped=tuple(item.id for item in draft.dropped),
        summarized=summarized,
        evicted=tuple(evicted),
        summary=summary,
        summary_tokens=summary_tokens if summary is not None else 0,
        summary_action=action,
        summary_error=summary_error,
        removed_cost=sum(item.cost for item in snap.items if item.id in removed_ids),
    )


def _enforce_budget(
    items: list[MemoryItem],
    draft: PlanDraft,
    summary: str | None,
    summary_tokens: int,
    action: str,
    count_tokens: CountTokens,
) -> tuple[list[str], str | None, int, str]:
    """Phase 3: unprotected units, then the summary, then protected units (never a pending
    one), oldest first."""
    budget = draft.budget
    items_cost = sum(item.cost for item in items)
    evicted: list[str] = []
    present = {item.id for item in items}
    groups = [unit for unit in draft.units if unit.ids <= present]

    def over() -> bool:
        return items_cost + summary_cost(summary, summary_tokens) > budget

    def evict(unit: Unit) -> None:
        nonlocal items_cost
        evicted.extend(item.id for item in unit.items)
        items_cost -= unit.cost

    for unit in [u for u in groups if not u.ids & draft.protected_ids]:
        if not over():
            break
        evict(unit)
    if summary is not None and over():
        room = budget - items_cost - SUMMARY_OVERHEAD_TOKENS
        trimmed = trim_to_tokens(summary, room, count_tokens) if room >= 1 else ""
        if trimmed:
            summary, summary_tokens, action = trimmed, count_tokens(trimmed), "trimmed"
        else:
            summary, summary_tokens, action = None, 0, "removed"
    for unit in [u for u in groups if u.ids & draft.protected_ids and not u.pending]:
        if not over():
            break
        evict(unit)
    return evicted, summary, summary_tokens, action


def plan_compaction(
    snapshot: Snapshot,
    limits: MemoryLimits,
    count_tokens: CountTokens,
    summarize: SyncSummarize | None = None,
    *,
    force: bool = False,
    drop_noise: bool = True,
) -> CompactionPlan:
    """All three phases with a synchronous summarizer (replay, what-if, tests).

    A summarizer that raises is recorded as ``summary_error``, exactly as the store does.
    """
    draft = start_plan(snapshot, limits, force=force, drop_noise=drop_noise)
    new_summary, error = None, None
    if draft.candidates:
        if summarize is None:
            error = "no summarizer configured"
        else:
            try:
                room = summary_room(draft.budget, draft.remaining, draft.candidates)
                new_summary = summarize(
                    snapshot.fold_from,
                    snapshot.fold_items(draft.candidates),
                    max_tokens=room,
                    count_tokens=count_tokens,
                )
            except Exception as exc:  # a summarizer's failure is data, not a crash
                error = f"{type(exc).__name__}: {exc}"
    return finish_plan(draft, count_tokens, new_summary=new_summary, summary_error=error)


def bounded_view(
    snapshot: Snapshot,
    limits: MemoryLimits,
    count_tokens: CountTokens,
    budget: int | None = None,
) -> tuple[tuple[MemoryItem, ...], str | None]:
    """Items and summary to show a model, never above ``budget`` (default: the hard limit).

    Normally that is the snapshot itself. While a session waits for a compaction (another
    worker holds the lease, or a summarizer is slow) its total may exceed the hard limit; then
    phases 1 and 3 run in memory, without a model, against the budget. Nothing is written.
    (The store passes a smaller budget when long-term memories share the model input.)
    """
    budget = limits.hard if budget is None else budget
    if snapshot.total_tokens <= budget:
        return snapshot.items, snapshot.summary
    draft = replace(start_plan(snapshot, limits, budget=budget), candidates=())
    plan = finish_plan(draft, count_tokens)
    return plan.kept, plan.summary
