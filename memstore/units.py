"""Units: the items the Responses API needs together, which compaction never splits.

Most items are a unit of their own. Carried Responses items bind in two ways:

* **A call and its output.** A ``function_call`` and the ``function_call_output`` with its
  ``call_id`` (and the other call/output pairs of :data:`~memstore.response_items.CALL_OUTPUTS`)
  are one unit: the API refuses an output whose call is missing, and a call kept without its
  output would leave the model waiting for a result it already had.
* **Reasoning and what it led to.** A ``reasoning`` item binds to the item that follows it,
  and, when that is a call, to the calls right after it (parallel calls of one response), with
  their outputs: the API refuses a reasoning item without its follower, and a reasoning
  model's call without its reasoning.

A unit is *pending* while it waits for something: a call whose output has not arrived, or
reasoning whose follower has not. Compaction never removes a pending unit (the item that
completes it would arrive orphaned), and :func:`valid_input` leaves pending reasoning out of
a model input, where it would be refused.

Nothing here does I/O; the policy (:mod:`memstore.policy`) removes and protects whole units.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memstore.model import MemoryItem
from memstore.response_items import CALL_OUTPUTS, OUTPUT_TYPES, REASONING


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


def _is_call(item: MemoryItem) -> bool:
    return item.item_type in CALL_OUTPUTS


def _is_output(item: MemoryItem) -> bool:
    return item.item_type in OUTPUT_TYPES


def units(items: Sequence[MemoryItem]) -> tuple[Unit, ...]:
    """``items`` (oldest first) grouped into units, ordered by their oldest member."""
    parent = {item.id: item.id for item in items}

    def root(item_id: str) -> str:
        while parent[item_id] != item_id:
            parent[item_id] = parent[parent[item_id]]
            item_id = parent[item_id]
        return item_id

    def join(a: str, b: str) -> None:
        parent[root(a)] = root(b)

    calls: dict[str, str] = {}  # call_id -> the call's item id
    answered: set[str] = set()
    waiting: list[str] = []  # reasoning items waiting for their follower
    anchor: str | None = None  # the reasoning-led call that parallel calls join
    for item in items:
        if item.item_type == REASONING:
            waiting.append(item.id)
            anchor = None
            continue
        for reasoning_id in waiting:
            join(reasoning_id, item.id)
        if waiting and _is_call(item):
            anchor = item.id
        elif anchor is not None and _is_call(item):
            join(item.id, anchor)
        else:
            anchor = None
        waiting = []
        if item.call_id is not None:
            if _is_call(item):
                calls[item.call_id] = item.id
            elif _is_output(item) and item.call_id in calls:
                join(item.id, calls[item.call_id])
                answered.add(item.call_id)
    members: dict[str, list[MemoryItem]] = {}
    for item in items:
        members.setdefault(root(item.id), []).append(item)
    pending_roots = {root(i) for i in waiting}
    pending_roots |= {root(i) for call_id, i in calls.items() if call_id not in answered}
    return tuple(Unit(tuple(group), pending=key in pending_roots) for key, group in members.items())


def closure(groups: Iterable[Unit], ids: Iterable[str]) -> frozenset[str]:
    """``ids`` plus every item of a unit that holds one of them."""
    wanted = set(ids)
    out: set[str] = set()
    for unit in groups:
        if unit.ids & wanted:
            out |= unit.ids
    return frozenset(out)


def valid_input(items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """``items`` without what the Responses API would refuse: outputs whose call is not among
    them, and reasoning items with no follower among them.

    Compaction removes whole units, so this only drops anything when rows were changed by
    other means (a ``pop_item`` of a call's output leaves the call pending, which is valid).
    """
    calls = {item.call_id for item in items if _is_call(item)}
    kept = [item for item in items if not (_is_output(item) and item.call_id not in calls)]
    while kept and kept[-1].item_type == REASONING:
        kept.pop()
    return kept
