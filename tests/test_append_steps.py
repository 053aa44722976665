"""The append's statements, driven by hand: interleavings that need a precise race to happen."""

from __future__ import annotations

import pytest

from memstore import EstimatorMismatchError, MemoryLimits
from memstore.db.append import BUMP, ESTIMATOR, INSERT_ITEM, NewItem, append_steps, create_session
from memstore.db.steps import StepResult
from memstore.model import MemoryKind, MemoryRole, Priority

LIMITS = MemoryLimits(hard=1000, target=500, keep_recent=2)
NEW = NewItem(MemoryRole.USER, MemoryKind.USER_MESSAGE, Priority.NORMAL, "hello", 1)
BUMPED = {"version": 1, "last_seq": 1, "active_tokens": 5, "summary_tokens": None, "user_turns": 1}


def test_a_session_committed_between_the_bump_and_the_lookup_is_not_a_mismatch() -> None:
    """PostgreSQL, READ COMMITTED: another worker's new session shows up between two reads."""
    steps = append_steps("postgresql", "s", "words", LIMITS, NEW)
    assert next(steps)[0] is BUMP
    assert steps.send(StepResult([]))[0] is ESTIMATOR  # not there yet...
    statement, _ = steps.send(StepResult([{"estimator": "words"}]))  # ...committed meanwhile
    assert statement is create_session("postgresql")  # a no-op now (ON CONFLICT DO NOTHING)
    assert steps.send(StepResult([]))[0] is BUMP
    assert steps.send(StepResult([BUMPED]))[0] is INSERT_ITEM


def test_a_session_counted_by_another_estimator_is_a_mismatch() -> None:
    steps = append_steps("sqlite", "s", "words", LIMITS, NEW)
    next(steps)
    steps.send(StepResult([]))
    with pytest.raises(EstimatorMismatchError) as info:
        steps.send(StepResult([{"estimator": "o200k_base"}]))
    assert info.value.field == "estimator"
