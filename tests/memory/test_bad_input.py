"""Bad inputs: content, role/kind/priority, keys, session ids, limits, estimators.

Every bad input gets a typed error naming the field, and nothing is written (see
``badinput.py`` for how that is checked).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from badinput import (
    FIRST,
    LIMITS,
    MAX_BYTES,
    SESSION,
    assert_rejected,
    check_error,
    counts,
    state,
)

from memstore import (
    ByteEstimator,
    ConfigurationError,
    EstimatorMismatchError,
    IdempotencyConflictError,
    KindRoleMismatchError,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    MemoryStore,
    Priority,
    SessionMemory,
    ValidationError,
    WordEstimator,
)
from memstore.core.values import parse_kind, parse_priority, parse_role

# -- content ---------------------------------------------------------------------------------

BAD_CONTENT = {
    "empty": "",
    "blank": " \t\n  ",
    "int": 42,
    "bytes": b"payment-service is degraded",
    "none": None,
    "list": ["a", "b"],
    "nul": "before\x00after",
    "only-nul": "\x00",
    "lone-high-surrogate": "\ud800",
    "surrogate-inside": "ok \udfff ok",
    "over-limit-ascii": "x" * (MAX_BYTES + 1),
    "over-limit-utf8": "é" * (MAX_BYTES // 2 + 1),  # 51 characters, 102 bytes
}


@pytest.mark.parametrize("content", BAD_CONTENT.values(), ids=BAD_CONTENT.keys())
async def test_bad_content_is_rejected(
    memory: SessionMemory, db_path: Path, content: object
) -> None:
    await assert_rejected(
        db_path,
        ValidationError,
        "content",
        lambda: memory.add("user", content),  # type: ignore[arg-type]
    )


async def test_over_limit_message_gives_size_and_limit(
    memory: SessionMemory, db_path: Path
) -> None:
    error = await assert_rejected(
        db_path, ValidationError, "content", lambda: memory.add("user", "é" * 51)
    )
    assert "102" in str(error) and str(MAX_BYTES) in str(error)


@pytest.mark.parametrize(
    "content",
    ["x" * MAX_BYTES, "é" * (MAX_BYTES // 2), "  \n" + "y" * MAX_BYTES + "\t "],
    ids=["ascii", "utf8", "surrounding-white-space"],
)
async def test_content_exactly_at_the_limit_is_accepted(
    memory: SessionMemory, db_path: Path, content: str
) -> None:
    item = await memory.add("user", content)
    assert item.content == content.strip()
    assert len(item.content.encode("utf-8")) == MAX_BYTES
    assert counts(db_path)["items"] == 2
    assert [i.content for i in await memory.items()] == [FIRST, content.strip()]


async def test_default_limit_is_one_mebibyte(store: MemoryStore, db_path: Path) -> None:
    assert store.settings.max_item_bytes == 1 << 20
    handle = store.session(SESSION, estimator=WordEstimator())
    await handle.add("user", FIRST)
    await assert_rejected(
        db_path, ValidationError, "content", lambda: handle.add("tool", "a" * ((1 << 20) + 1))
    )
    await handle.add("tool", "a" * (1 << 20))
    assert counts(db_path)["items"] == 2


# -- role, kind, priority --------------------------------------------------------------------

BAD_ENUMS = [
    ("role", {"role": "robot"}),
    ("role", {"role": 7}),
    ("role", {"role": None}),
    ("role", {"role": True}),
    ("role", {"role": "USER_MESSAGE"}),  # a kind is not a role
    ("kind", {"kind": "NOPE"}),
    ("kind", {"kind": 3}),
    ("kind", {"kind": True}),
    ("kind", {"kind": "user"}),  # a role is not a kind
    ("priority", {"priority": 42}),
    ("priority", {"priority": "URGENT"}),
    ("priority", {"priority": True}),
    ("priority", {"priority": 10.5}),
    ("priority", {"priority": None}),
    ("priority", {"priority": "10"}),
]


@pytest.mark.parametrize(("field", "bad"), BAD_ENUMS, ids=[f"{f}={b}" for f, b in BAD_ENUMS])
async def test_unknown_role_kind_priority(
    memory: SessionMemory, db_path: Path, field: str, bad: dict[str, Any]
) -> None:
    args: dict[str, Any] = {"role": "user", "content": "hello", **bad}
    role = args.pop("role")
    error = await assert_rejected(db_path, ValidationError, field, lambda: memory.add(role, **args))
    assert repr(bad[field]) in str(error)  # the message shows the rejected value


MISMATCHES = [
    ("user", "TOOL_OBSERVATION"),
    ("user", "ASSISTANT_MESSAGE"),
    ("user", "DECISION"),
    ("tool", "USER_MESSAGE"),
    ("tool", "DECISION"),
    ("assistant", "USER_MESSAGE"),
    ("assistant", "TOOL_OBSERVATION"),
    ("developer", "ASSISTANT_MESSAGE"),
    ("developer", "USER_MESSAGE"),
]


@pytest.mark.parametrize(("role", "kind"), MISMATCHES, ids=[f"{r}-{k}" for r, k in MISMATCHES])
async def test_kind_role_mismatch(
    memory: SessionMemory, db_path: Path, role: str, kind: str
) -> None:
    error = await assert_rejected(
        db_path, KindRoleMismatchError, "role", lambda: memory.add(role, "hello", kind=kind)
    )
    assert isinstance(error, ValidationError)
    assert kind in str(error) and repr(role) in str(error)
    assert (error.kind, error.role) == (kind, role)  # type: ignore[attr-defined]


async def test_kind_role_mismatch_with_enums(memory: SessionMemory, db_path: Path) -> None:
    await assert_rejected(
        db_path,
        KindRoleMismatchError,
        "role",
        lambda: memory.add(MemoryRole.USER, "hi", kind=MemoryKind.TOOL_OBSERVATION),
    )


@pytest.mark.parametrize("role", ["developer", "assistant", MemoryRole.DEVELOPER])
async def test_decision_accepts_developer_and_assistant(
    memory: SessionMemory, db_path: Path, role: str
) -> None:
    item = await memory.add(role, "Use the canary rollout.", kind="DECISION")
    assert item.kind is MemoryKind.DECISION
    assert item.role is MemoryRole(role)
    assert counts(db_path)["items"] == 2


async def test_enum_values_and_names_are_accepted(memory: SessionMemory, db_path: Path) -> None:
    """Enum arguments also accept their values (the other side of the checks above)."""
    low = await memory.add("tool", "noise", kind="TOOL_OBSERVATION", priority=10)
    high = await memory.add(MemoryRole.TOOL, "signal", priority="HIGH")
    decision = await memory.add("developer", "Decided.")
    assert (low.priority, low.kind) == (Priority.LOW, MemoryKind.TOOL_OBSERVATION)
    assert (high.priority, high.kind) == (Priority.HIGH, MemoryKind.TOOL_OBSERVATION)
    assert decision.kind is MemoryKind.DECISION
    assert counts(db_path)["items"] == 4


def spellings(member: Enum) -> set[object]:
    """Every way a caller may name ``member``: itself, its value, its name in any case."""
    names = {member.name, member.name.lower(), member.name.title(), member.name.swapcase()}
    if isinstance(member.value, str):
        names |= {member.value, member.value.upper(), member.value.title()}
    return {member, member.value, *names}


@pytest.mark.parametrize(
    ("parse", "enum"),
    [(parse_role, MemoryRole), (parse_kind, MemoryKind), (parse_priority, Priority)],
    ids=["role", "kind", "priority"],
)
def test_every_enum_accepts_every_case_of_its_names_alike(parse: Any, enum: type[Enum]) -> None:
    for member in enum:
        assert {parse(spelling) for spelling in spellings(member)} == {member}
    for wrong in (" user", "user ", "TOOL OBSERVATION", "10", 10.0, True, None):
        if wrong in {s for m in enum for s in spellings(m)}:
            continue
        with pytest.raises(ValidationError):
            parse(wrong)


# -- idempotency keys ------------------------------------------------------------------------

BAD_KEYS = {"empty": "", "too-long": "k" * 201, "newline": "a\nb", "nul": "a\x00b", "int": 5}


@pytest.mark.parametrize("key", BAD_KEYS.values(), ids=BAD_KEYS.keys())
async def test_invalid_idempotency_key(memory: SessionMemory, db_path: Path, key: object) -> None:
    await assert_rejected(
        db_path,
        ValidationError,
        "idempotency_key",
        lambda: memory.add("user", "hello", idempotency_key=key),  # type: ignore[arg-type]
    )


async def test_idempotency_key_reuse(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    first = await memory.add("tool", "p95 is 1720ms", idempotency_key="call-1")
    after_first = state(db_path)
    assert after_first[0]["items"] == 2

    # A retry (even with different surrounding white space) returns the stored item.
    for content in ("p95 is 1720ms", "  p95 is 1720ms\n"):
        again = await memory.add("tool", content, idempotency_key="call-1")
        assert again.id == first.id and again.seq == first.seq
        assert state(db_path) == after_first  # no row, no version bump

    # The same key for anything else is a conflict, and writes nothing.
    for kwargs in (
        {"content": "p95 is 90ms"},
        {"content": "p95 is 1720ms", "priority": "HIGH"},
        {"content": "p95 is 1720ms", "role": "developer", "kind": "DECISION"},
    ):
        role = kwargs.pop("role", "tool")
        error = await assert_rejected(
            db_path,
            IdempotencyConflictError,
            "idempotency_key",
            lambda role=role, kwargs=kwargs: memory.add(role, idempotency_key="call-1", **kwargs),
        )
        assert "call-1" in str(error)

    # Keys are scoped to their session.
    other = bad_store.session("s2", limits=LIMITS, estimator=WordEstimator())
    elsewhere = await other.add("tool", "p95 is 90ms", idempotency_key="call-1")
    assert elsewhere.id != first.id
    assert counts(db_path)["items"] == 3


# -- session ids -----------------------------------------------------------------------------

BAD_SESSION_IDS = {
    "empty": "",
    "leading-space": " x",
    "trailing-space": "x ",
    "trailing-newline": "x\n",
    "too-long": "a" * 129,
    "inner-space": "bad id",
    "leading-dash": "-x",
    "leading-dot": ".x",
    "path": "../etc/passwd",
    "slash": "user/alice",
    "non-ascii": "sessión",
    "int": 42,
    "none": None,
    "bytes": b"abc",
}


@pytest.mark.parametrize("session_id", BAD_SESSION_IDS.values(), ids=BAD_SESSION_IDS.keys())
async def test_invalid_session_id(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path, session_id: object
) -> None:
    store = bad_store
    before = state(db_path)
    for call in (
        lambda: store.session(session_id, estimator=WordEstimator()),  # type: ignore[arg-type]
        lambda: store.session(session_id),  # type: ignore[arg-type]
    ):
        with pytest.raises(ValidationError) as info:
            call()
        check_error(info.value, ValidationError, "session_id")
    with pytest.raises(ValidationError) as info:
        await store.session_info(session_id)  # type: ignore[arg-type]
    check_error(info.value, ValidationError, "session_id")
    assert state(db_path) == before


async def test_longest_session_id_is_accepted(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    longest = "a" + "b.c:d@e-f-g_" * 10 + "h" * 7
    assert len(longest) == 128
    handle = bad_store.session(longest, limits=LIMITS, estimator=WordEstimator())
    await handle.add("user", "hello")
    assert (await bad_store.session_info(longest)).items_total == 1
    assert counts(db_path)["sessions"] == 2


# -- limits and settings ---------------------------------------------------------------------

BAD_LIMITS = [
    ("hard", {"hard": 1500.0}),
    ("hard", {"hard": True}),
    ("hard", {"hard": "1500"}),
    ("hard", {"hard": None}),
    ("hard", {"hard": 0}),
    ("hard", {"hard": -5}),
    ("target", {"target": 900.5}),
    ("target", {"target": False}),
    ("target", {"target": 0}),
    ("target", {"target": 1500}),  # equal to hard
    ("target", {"hard": 100, "target": 101}),
    ("keep_recent", {"keep_recent": -1}),
    ("keep_recent", {"keep_recent": 2.0}),
    ("keep_recent", {"keep_recent": True}),
    ("summarize_every", {"summarize_every": 0}),
    ("summarize_every", {"summarize_every": True}),
]


@pytest.mark.parametrize(("field", "kwargs"), BAD_LIMITS, ids=[f"{k}" for _, k in BAD_LIMITS])
def test_invalid_limits(field: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        MemoryLimits(**kwargs)
    check_error(info.value, ConfigurationError, field)
    assert isinstance(info.value, ValidationError)


def test_limit_edges_are_accepted() -> None:
    assert MemoryLimits(hard=2, target=1, keep_recent=0) == MemoryLimits(2, 1, 0)
    assert MemoryLimits().hard == 1500 and MemoryLimits().target == 900
    assert MemoryLimits(summarize_every=1).summarize_every == 1


BAD_ENV = [
    ({"MEMORY_HARD_LIMIT": "abc"}, "MEMORY_HARD_LIMIT"),
    ({"MEMORY_HARD_LIMIT": "1.5"}, "MEMORY_HARD_LIMIT"),
    ({"MEMORY_HARD_LIMIT": "0"}, "MEMORY_HARD_LIMIT"),
    ({"MEMORY_TARGET_LIMIT": "ninety"}, "MEMORY_TARGET_LIMIT"),
    ({"MEMORY_TARGET_LIMIT": "0"}, "MEMORY_TARGET_LIMIT"),
    ({"MEMORY_TARGET_LIMIT": "1500"}, "MEMORY_TARGET_LIMIT"),
    ({"MEMORY_KEEP_RECENT": "-1"}, "MEMORY_KEEP_RECENT"),
    ({"MEMORY_KEEP_RECENT": "four"}, "MEMORY_KEEP_RECENT"),
]


@pytest.mark.parametrize(("env", "var"), BAD_ENV, ids=[json.dumps(e) for e, _ in BAD_ENV])
def test_invalid_limits_from_env_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        MemoryLimits.from_env(env)
    check_error(info.value, ConfigurationError, var)


def test_limits_from_env() -> None:
    assert MemoryLimits.from_env({}) == MemoryLimits()
    env = {"MEMORY_HARD_LIMIT": " 100 ", "MEMORY_TARGET_LIMIT": "50", "MEMORY_KEEP_RECENT": "0"}
    assert MemoryLimits.from_env(env) == MemoryLimits(hard=100, target=50, keep_recent=0)


async def test_session_with_bad_env_limits_writes_nothing(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_TARGET_LIMIT", "lots")
    before = state(db_path)
    with pytest.raises(ConfigurationError) as info:
        bad_store.session(SESSION, estimator=WordEstimator())
    check_error(info.value, ConfigurationError, "MEMORY_TARGET_LIMIT")
    assert state(db_path) == before


# -- the estimator a session was counted with -------------------------------------------------


async def test_estimator_mismatch_is_refused(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    await bad_store.close()
    async with MemoryStore.open(db_path) as store:
        other = store.session(SESSION, limits=LIMITS, estimator=ByteEstimator())
        error = await assert_rejected(
            db_path, EstimatorMismatchError, "estimator", lambda: other.add("user", "more")
        )
        assert (error.expected, error.actual) == ("words", "utf8-bytes")  # type: ignore[attr-defined]
        assert "words" in str(error) and "utf8-bytes" in str(error)
        await assert_rejected(db_path, EstimatorMismatchError, "estimator", other.build_model_input)
        # The same estimator still works.
        same = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
        await same.add("user", "more")
        assert counts(db_path)["items"] == 2


async def test_refused_compaction_writes_nothing(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    other = bad_store.session(SESSION, limits=LIMITS, estimator=ByteEstimator())
    await assert_rejected(db_path, EstimatorMismatchError, "estimator", other.compact)
