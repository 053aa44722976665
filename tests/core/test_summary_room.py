"""A summary's room (:func:`memstore.core.summary_room.summary_room`): the compaction's budget
less what stays and the summary's framing, never below nothing."""

from __future__ import annotations

from conftest import make_item

from memstore.core.summary_room import summary_room
from memstore.core.values import ITEM_OVERHEAD_TOKENS, SUMMARY_OVERHEAD_TOKENS


def test_the_room_is_the_budget_less_what_stays_and_the_framing() -> None:
    kept = make_item("five words stay right here", seq=3)
    leaving = [make_item("these three leave", seq=1), make_item("and these two", seq=2)]
    room = summary_room(100, [*leaving, kept], leaving)
    assert room == 100 - (5 + ITEM_OVERHEAD_TOKENS) - SUMMARY_OVERHEAD_TOKENS


def test_what_leaves_costs_the_room_nothing_and_the_room_is_never_negative() -> None:
    leaving = [make_item("word " * 50, seq=1)]
    assert summary_room(40, leaving, leaving) == 40 - SUMMARY_OVERHEAD_TOKENS
    assert summary_room(5, leaving, leaving) == 0
    staying = [make_item("word " * 50, seq=2)]
    assert summary_room(40, staying, []) == 0
