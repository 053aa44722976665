"""Turns: the order in which a model reads a session that several processes write at once.

A session is one history, but its writers are many: each agent worker appends through its own
*handle* (a :class:`~memstore.memory.session.SessionMemory`, an Agents SDK session object),
and their appends interleave in commit order. Read in that order, one worker's question can
land between another's question and its answer.

A **turn** begins when a handle adds a user message, and holds that handle's later items
until its next user message. An output joins the turn of its call, whoever adds it. Each item
records the seq of the message that began its turn (``MemoryItem.turn``), set when it is
appended, so a turn stays one turn after compaction removed part of it.

The **model's order** (:func:`turn_order`) shows each turn whole, turns in the order they
began, and the items of a turn in commit order. It is what ``build_model_input()`` returns,
what ``keep_recent`` counts and what ``get_items(limit=N)`` cuts. The audit (``show``,
``replay``, export) keeps the commit order: it records what happened when.

One writer's session, and every item stored before turns were recorded (``turn`` is
``None``: a turn of its own), read the same in both orders. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.core.values import MemoryItem


def turn_of(item: MemoryItem) -> int:
    """The seq that began ``item``'s turn (its own seq when none was recorded)."""
    return item.seq if item.turn is None else item.turn


def turn_order(items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """``items`` in the model's order: by the turn they belong to, then by commit order.

    Args:
        items: Any items of one session (active ones, a plan's kept ones), in any order.
    """
    return sorted(items, key=lambda item: (turn_of(item), item.seq))
