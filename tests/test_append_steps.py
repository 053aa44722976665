"""The append's statements, driven by hand: interleavings that need a precise race to happen."""

from __future__ import annotations

import os
import sys
import threading
import uuid

import pytest

from memstore import EstimatorMismatchError, MemoryLimits
from memstore.db.append import (
    BUMP,
    ESTIMATOR,
    INSERT_ITEM,
    NewItem,
    append_steps,
    create_session,
    new_item_id,
)
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


def test_item_ids_are_random_version_4_uuids_as_uuid4_writes_them() -> None:
    ids = [new_item_id() for _ in range(1000)]  # several batches
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case, dashed: the text uuid4() gives
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
    # Every bit but the version's and the variant's is random: each value of each hex digit
    # outside them shows up across 1000 ids (the chance that one does not is below 1e-25).
    digits = [text.replace("-", "") for text in ids]
    for position in range(32):
        seen = {digit[position] for digit in digits}
        if position == 12:
            assert seen == {"4"}
        elif position == 16:
            assert seen == set("89ab")
        else:
            assert seen == set("0123456789abcdef"), position


def test_a_forked_child_never_hands_out_its_parents_ids() -> None:
    new_item_id()  # the parent holds ids made ahead
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first id, to the parent
        try:
            os.write(writer, new_item_id().encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        child_id = pipe.read()
    os.waitpid(pid, 0)
    assert uuid.UUID(child_id).version == 4
    assert child_id != new_item_id()  # without the fork hook, both would pop the same one


def test_threads_drawing_ids_at_once_never_fail_or_share_one() -> None:
    """Other threads may empty the pool between a batch being made and its maker's own pop."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    drawn: list[list[str]] = [[] for _ in range(8)]
    errors: list[BaseException] = []

    def draw(into: list[str]) -> None:
        try:
            for _ in range(20_000):
                into.append(new_item_id())
        except BaseException as error:  # any failure is the finding
            errors.append(error)

    threads = [threading.Thread(target=draw, args=(ids,)) for ids in drawn]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    ids = [i for thread_ids in drawn for i in thread_ids]
    assert errors == []
    assert len(ids) == 8 * 20_000
    assert len(set(ids)) == len(ids)
