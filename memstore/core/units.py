"""Units: the items the Responses API needs together, which compaction never splits.

Most items are a unit of their own. Carried Responses items bind in two ways:

* **A call and its output.** A ``function_call`` and the ``function_call_output`` with its
  ``call_id`` (and the other call/output pairs of :data:`~memstore.core.carried_items.CALL_OUTPUTS`)
  are one unit: the API refuses an output whose call is missing, and a call kept without its
  output would leave the model waiting for a result it already had.
* **Reasoning and what it led to.** A ``reasoning`` item binds to the assistant's item that
  follows it (a message or a call), and, when that is a call, to the calls right after it
  (parallel calls of one response), with their outputs: the API refuses a reasoning item
  without its follower, and a reasoning model's call without its reasoning.

A unit is *complete* when each of its calls has its output and its reasoning its follower.
An incomplete unit is *pending* while the response it belongs to may still complete it, which
is judged per handle (the writer that added it: one agent worker): until that same handle adds
a message after it (its turn went on without the output), closes, or the unit's pending time
(``MemoryItem.pending_until``) passes, so a crashed worker's call does not hold the budget for
good. Other writers' messages change nothing: several processes share a session, and one
worker's question must not cut short another's tool call. Compaction never removes a pending
unit (its output would arrive with nothing to answer); an incomplete unit that is not pending
(a turn broken off, an output popped and never replaced) is removed like any other. An output
that arrives after its call left anyway is stored, and :func:`valid_input` leaves every
incomplete unit out of a model input, where the API would refuse it.

Units are found in the model's order (:func:`memstore.core.turns.turn_order`): a reasoning item
binds to what follows it in its own turn, never to another writer's item that was committed
in between.

Nothing here does I/O; the policy (:mod:`memstore.core.policy`) removes and protects whole units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from memstore.core.carried_items import CALL_OUTPUTS, OUTPUT_TYPES, REASONING, link_of
from memstore.core.turns import turn_order
from memstore.core.values import MemoryItem, MemoryKind


@dataclass(frozen=True)
class Unit:
    """Items compaction keeps or removes together, oldest first.

    Attributes:
        items: The members, by seq.
        pending: It waits for an item (a call's output, reasoning's follower).
    """

    items: tuple[MemoryItem, ...]
    pending: bool = False

    @property
    def cost(self) -> int:
        """Tokens the unit adds to the session total."""
        return sum(item.cost for item in self.items)

    @property
    def ids(self) -> frozenset[str]:
        """Its members' ids."""
        return frozenset(item.id for item in self.items)


E = TypeVar("E", bound=Mapping[str, Any])


@dataclass(frozen=True)
class _Entry:
    """What grouping needs to know of an item or a model-input entry."""

    type: str | None  # None: a text item or a plain message
    link: str | None  # call_id and kin
    assistant_side: bool  # what a reasoning item may lead to: the assistant's own output
    handle: str | None = None  # who added it (None: unknown, one writer for all such items)
    wait_until: float | None = None  # how long it may wait (None: no deadline)

    @property
    def is_call(self) -> bool:
        # A call without a link (server-executed) waits for nothing: complete alone.
        return self.type in CALL_OUTPUTS and self.link is not None

    @property
    def is_output(self) -> bool:
        return self.type in OUTPUT_TYPES and self.link is not None

    @property
    def closes(self) -> bool:
        """A message (or a hosted call): after it, a response's calls wait no longer."""
        return not (self.is_call or self.is_output or self.type == REASONING)


@dataclass(frozen=True)
class _Group:
    members: tuple[int, ...]  # indexes, ascending
    complete: bool
    pending: bool


def _groups(entries: Sequence[_Entry], now: float | None = None) -> list[_Group]:
    parent = list(range(len(entries)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(a: int, b: int) -> None:
        parent[root(a)] = root(b)

    calls: dict[str, int] = {}
    answered: set[str] = set()
    orphans: set[int] = set()  # outputs without a call, reasoning without a follower
    waiting: list[int] = []  # reasoning waiting for its follower
    anchor: int | None = None  # the reasoning-led call that parallel calls join
    for index, entry in enumerate(entries):
        if entry.type == REASONING:
            waiting.append(index)
            anchor = None
            continue
        if waiting and entry.assistant_side:
            for reasoning in waiting:
                join(reasoning, index)
            anchor = index if entry.is_call else None
        elif anchor is not None and entry.is_call:
            join(index, anchor)
        else:
            anchor = None
        orphans.update(waiting if not entry.assistant_side else ())
        waiting = []
        if entry.is_call and entry.link is not None:
            calls[entry.link] = index
        elif entry.is_output:
            call = calls.get(entry.link or "")
            if call is None or entry.link in answered:
                orphans.add(index)
            else:
                join(index, call)
                answered.add(entry.link or "")
    # Calls without their output, reasoning without its follower.
    blocked = {i for link, i in calls.items() if link not in answered} | set(waiting)
    members: dict[int, list[int]] = {}
    for index in range(len(entries)):
        members.setdefault(root(index), []).append(index)
    last_close: dict[str | None, int] | None = None  # per handle: its newest message
    out = []
    for group in members.values():
        waits = not blocked.isdisjoint(group)
        broken = not orphans.isdisjoint(group)
        pending = False
        if waits and not broken:
            if last_close is None:  # only an incomplete unit asks: most inputs have none
                last_close = {entry.handle: i for i, entry in enumerate(entries) if entry.closes}
            pending = _still_waiting([entries[i] for i in group], group[0], last_close, now)
        out.append(_Group(tuple(group), not waits and not broken, pending))
    return out


def _still_waiting(
    members: Sequence[_Entry], first: int, last_close: Mapping[str | None, int], now: float | None
) -> bool:
    """Whether an incomplete group may still be completed by the handle that began it: that
    handle added no message after it, and its deadline (if any) has not passed."""
    handle = members[0].handle
    if last_close.get(handle, -1) > first:
        return False  # its own writer went on without the output
    deadlines = [m.wait_until for m in members if m.wait_until is not None]
    return now is None or not deadlines or max(deadlines) > now


def _entry_of_item(item: MemoryItem) -> _Entry:
    side = item.payload is not None and item.kind is MemoryKind.ASSISTANT_MESSAGE
    return _Entry(item.item_type, item.call_id, side, item.handle, item.pending_until)


def _entry_of_input(entry: Mapping[str, Any]) -> _Entry:
    kind = entry.get("type")
    kind = "message" if kind is None else str(kind)
    if kind == "message":  # links nothing; the assistant's own is what reasoning leads to
        return _Entry(None, None, entry.get("role") == "assistant")
    link = link_of(entry)
    return _Entry(kind, link, kind != REASONING and (kind not in OUTPUT_TYPES or not link))


def units(items: Sequence[MemoryItem], now: float | None = None) -> tuple[Unit, ...]:
    """``items`` grouped into units, in the model's order (:func:`turn_order`), ordered by
    their first member in it.

    Args:
        items: A session's items.
        now: The time (seconds since 1970) pending deadlines are judged against; ``None``
            ignores them (replay judges by what was recorded).
    """
    ordered = turn_order(items)
    groups = _groups([_entry_of_item(item) for item in ordered], now)
    return tuple(Unit(tuple(ordered[i] for i in g.members), pending=g.pending) for g in groups)


def closure(groups: Iterable[Unit], ids: Iterable[str]) -> frozenset[str]:
    """``ids`` plus every item of a unit that holds one of them."""
    wanted = set(ids)
    out: set[str] = set()
    for unit in groups:
        if unit.ids & wanted:
            out |= unit.ids
    return frozenset(out)


def valid_input(entries: Sequence[E]) -> list[E]:
    """A model input without what the Responses API would refuse: every incomplete unit
    (an output without its call, a call without its output, reasoning without the
    assistant's item that followed it) is left out whole.

    Compaction removes whole units, so in a session's own input this leaves out only a
    response still in progress, and what ``pop_item`` or a cut (``get_items(limit=N)``)
    broke apart; those items stay stored.
    """
    groups = _groups([_entry_of_input(entry) for entry in entries])
    keep = sorted(i for g in groups if g.complete for i in g.members)
    return [entries[i] for i in keep]
