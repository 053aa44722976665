"""A summary's room (:func:`memstore.core.summary_room.summary_room`): the compaction's budget
less what stays and the summary's framing, never below nothing."""

from __future__ import annotations

from conftest import make_item

from memstore.core.summary_room import ENDED, KEPT, WROTE, summary_fate, summary_room
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


# -- what the next fold starts from ------------------------------------------------------------


def test_a_summary_written_by_a_summarizer_is_what_a_fold_resumes() -> None:
    assert summary_fate("hard_limit", "replaced", 3, None) == WROTE
    # trimmed in the compaction that wrote it: the untrimmed answer was never stored
    assert summary_fate("hard_limit", "trimmed", 3, None) == WROTE


def test_a_summary_trimmed_or_removed_for_room_is_kept_for_the_next_fold() -> None:
    assert summary_fate("hard_limit", "trimmed", 0, None) == KEPT
    assert summary_fate("hard_limit", "removed", 0, None) == KEPT  # the newest items filled it
    assert summary_fate("hard_limit", "removed", 0, "RuntimeError: down") == KEPT
    assert summary_fate("hard_limit", "kept", 0, None) == KEPT


def test_a_summarizer_that_kept_nothing_or_a_clear_ends_it() -> None:
    assert summary_fate("hard_limit", "removed", 4, None) == ENDED
    assert summary_fate("clear", "removed", 0, None) == ENDED
    assert summary_fate("clear", "kept", 0, None) == ENDED  # one set aside ends too
