"""SPEC 6: every bad input gets a typed error naming the field, and nothing is written.

Each rejection is checked three ways: the exact ``MemstoreError`` subclass, the field it
names (attribute and message), and the database before/after (row counts *and* a full dump,
so a bumped version counter would be caught too) on a session that already holds one item.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import row_counts

from memstore import (
    ByteEstimator,
    ConfigurationError,
    DatabaseMissingError,
    EstimatorMismatchError,
    IdempotencyConflictError,
    KindRoleMismatchError,
    LockTimeoutError,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    MemoryStore,
    MemstoreError,
    NotADatabaseError,
    Priority,
    SchemaOutdatedError,
    SchemaTooNewError,
    SessionMemory,
    Settings,
    StorageFullError,
    ValidationError,
    WordEstimator,
)
from memstore.db.migrate import head_revision

REPO_ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 100
SESSION = "s1"
FIRST = "Investigate checkout latency."
LIMITS = MemoryLimits(hard=1000, target=500, keep_recent=2)
SIDECARS = ("-wal", "-shm", "-journal")


# -- helpers -------------------------------------------------------------------------------


def dump(path: Path) -> list[str]:
    """Every table's schema and rows, read with the raw sqlite3 module."""
    with closing(sqlite3.connect(path)) as conn:
        return list(conn.iterdump())


def counts(path: Path) -> dict[str, int]:
    return row_counts(path)


def close_leaked_connections() -> None:
    """``row_counts`` leaves its sqlite3 connection to the garbage collector; while it lives,
    closing a store does not checkpoint the WAL (it is not the last connection)."""
    gc.collect()


def state(path: Path) -> tuple[dict[str, int], list[str]]:
    return counts(path), dump(path)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecars(path: Path) -> list[str]:
    return [s for s in SIDECARS if Path(f"{path}{s}").exists()]


def check_error(error: BaseException, expected: type[MemstoreError], field: str) -> None:
    """The exact subclass, ``field`` set, and the field named in the message."""
    assert type(error) is expected, f"{type(error).__name__} is not {expected.__name__}"
    assert isinstance(error, MemstoreError)
    assert getattr(error, "field", None) == field
    assert field in str(error)


async def assert_rejected(
    db_path: Path,
    expected: type[MemstoreError],
    field: str,
    call: Callable[[], Awaitable[Any]],
) -> MemstoreError:
    before = state(db_path)
    with pytest.raises(expected) as info:
        await call()
    check_error(info.value, expected, field)
    assert state(db_path) == before, "a rejected input wrote to the database"
    return info.value


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database whose session ``s1`` holds one item (copied by each test)."""

    async def build(path: Path) -> None:
        async with MemoryStore.open(path) as store:
            handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
            await handle.add("user", FIRST)

    path = tmp_path_factory.mktemp("template") / "memory.db"
    asyncio.run(build(path))
    assert sidecars(path) == []
    return path


@pytest.fixture
async def memory(template: Path, db_path: Path) -> AsyncIterator[SessionMemory]:
    """A session with one item, in a store whose items may be at most 100 bytes."""
    shutil.copy2(template, db_path)
    async with MemoryStore.open(db_path, settings=Settings(max_item_bytes=MAX_BYTES)) as store:
        handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
        assert [i.content for i in await handle.items()] == [FIRST]
        assert counts(db_path)["items"] == 1
        yield handle


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
    """SPEC 8: enum arguments also accept their values (the other side of the checks above)."""
    low = await memory.add("tool", "noise", kind="TOOL_OBSERVATION", priority=10)
    high = await memory.add(MemoryRole.TOOL, "signal", priority="HIGH")
    decision = await memory.add("developer", "Decided.")
    assert (low.priority, low.kind) == (Priority.LOW, MemoryKind.TOOL_OBSERVATION)
    assert (high.priority, high.kind) == (Priority.HIGH, MemoryKind.TOOL_OBSERVATION)
    assert decision.kind is MemoryKind.DECISION
    assert counts(db_path)["items"] == 4


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


async def test_idempotency_key_reuse(memory: SessionMemory, db_path: Path) -> None:
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
    other = memory.store.session("s2", limits=LIMITS, estimator=WordEstimator())
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
async def test_invalid_session_id(memory: SessionMemory, db_path: Path, session_id: object) -> None:
    store = memory.store
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


async def test_longest_session_id_is_accepted(memory: SessionMemory, db_path: Path) -> None:
    longest = "a" + "b.c:d@e-f-g_" * 10 + "h" * 7
    assert len(longest) == 128
    handle = memory.store.session(longest, limits=LIMITS, estimator=WordEstimator())
    await handle.add("user", "hello")
    assert (await memory.store.session_info(longest)).items_total == 1
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
    memory: SessionMemory, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_TARGET_LIMIT", "lots")
    before = state(db_path)
    with pytest.raises(ConfigurationError) as info:
        memory.store.session(SESSION, estimator=WordEstimator())
    check_error(info.value, ConfigurationError, "MEMORY_TARGET_LIMIT")
    assert state(db_path) == before


BAD_SETTINGS = [
    ("max_item_bytes", {"max_item_bytes": 0}),
    ("max_item_bytes", {"max_item_bytes": True}),
    ("max_item_bytes", {"max_item_bytes": 1.5}),
    ("busy_timeout_s", {"busy_timeout_s": 0}),
    ("busy_timeout_s", {"busy_timeout_s": -1.0}),
    ("busy_timeout_s", {"busy_timeout_s": "5"}),
    ("summarizer_timeout_s", {"summarizer_timeout_s": 0}),
    ("lease_s", {"lease_s": False}),
    ("sqlite_synchronous", {"sqlite_synchronous": "SOMETIMES"}),
]


@pytest.mark.parametrize(("field", "kwargs"), BAD_SETTINGS, ids=[f"{k}" for _, k in BAD_SETTINGS])
def test_invalid_settings(field: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings(**kwargs)
    check_error(info.value, ConfigurationError, field)


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"MEMSTORE_MAX_ITEM_BYTES": "big"}, "MEMSTORE_MAX_ITEM_BYTES"),
        ({"MEMSTORE_BUSY_TIMEOUT": "soon"}, "MEMSTORE_BUSY_TIMEOUT"),
        ({"MEMSTORE_BUSY_TIMEOUT": "-1"}, "MEMSTORE_BUSY_TIMEOUT"),
        ({"MEMSTORE_LEASE_SECONDS": "0"}, "MEMSTORE_LEASE_SECONDS"),
    ],
)
def test_invalid_settings_from_env(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env(env)
    check_error(info.value, ConfigurationError, var)


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"MEMSTORE_MAX_ITEM_BYTES": "0"}, "MEMSTORE_MAX_ITEM_BYTES"),
        ({"MEMSTORE_SQLITE_SYNCHRONOUS": "fast"}, "MEMSTORE_SQLITE_SYNCHRONOUS"),
    ],
)
def test_out_of_range_settings_from_env_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env(env)
    assert var in str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("busy_timeout_s", float("nan")),
        ("busy_timeout_s", float("inf")),
        ("lease_s", float("nan")),
        ("summarizer_timeout_s", float("nan")),
    ],
)
def test_non_finite_settings_are_rejected(field: str, value: float) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings(**{field: value})
    check_error(info.value, ConfigurationError, field)


# -- the estimator a session was counted with -------------------------------------------------


async def test_estimator_mismatch_is_refused(memory: SessionMemory, db_path: Path) -> None:
    await memory.store.close()
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


async def test_refused_compaction_writes_nothing(memory: SessionMemory, db_path: Path) -> None:
    other = memory.store.session(SESSION, limits=LIMITS, estimator=ByteEstimator())
    await assert_rejected(db_path, EstimatorMismatchError, "estimator", other.compact)


# -- database files --------------------------------------------------------------------------


def _not_a_database(path: Path, kind: str) -> None:
    if kind == "random-bytes":
        data = os.urandom(8192)
        path.write_bytes(b"\x01" + data[1:])  # never the SQLite header by accident
    elif kind == "text":
        path.write_text("name,latency\npayment-service,1720\ncheckout,90\n")
    elif kind == "short-text":
        path.write_text("hi")
    elif kind == "sqlite-header-then-garbage":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(8000))
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["random-bytes", "text", "short-text", "sqlite-header-then-garbage"]
)
@pytest.mark.parametrize("options", [{}, {"upgrade": False}, {"create": False}])
async def test_file_that_is_not_a_database_is_left_untouched(
    tmp_path: Path, kind: str, options: dict[str, bool]
) -> None:
    path = tmp_path / "notes.db"
    _not_a_database(path, kind)
    before, mode, listing = digest(path), path.stat().st_mode, sorted(os.listdir(tmp_path))
    with pytest.raises(NotADatabaseError) as info:
        await MemoryStore.open(path, **options)
    assert type(info.value) is NotADatabaseError
    assert digest(path) == before, "the file was modified"
    assert path.stat().st_mode == mode
    assert sorted(os.listdir(tmp_path)) == listing, "files were created next to it"


async def test_truncated_database_is_refused_and_untouched(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        handle = store.session(SESSION, estimator=WordEstimator())
        for n in range(40):
            await handle.add("user", f"message {n} " + "padding " * 40)
    data = db_path.read_bytes()
    assert len(data) > 8 * 4096
    db_path.write_bytes(data[: len(data) // 2])
    before = digest(db_path)
    with pytest.raises(NotADatabaseError) as info:
        async with MemoryStore.open(db_path) as store:
            await store.session(SESSION, estimator=WordEstimator()).items()
    assert "corrupt" in str(info.value) or "not an SQLite database" in str(info.value)
    assert digest(db_path) == before


async def test_directory_is_not_a_database(tmp_path: Path) -> None:
    target = tmp_path / "a-directory.db"
    target.mkdir()
    with pytest.raises(NotADatabaseError):
        await MemoryStore.open(target)
    assert target.is_dir() and os.listdir(target) == []


def _set_revision(path: Path, revision: str) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))


@pytest.mark.parametrize("upgrade", [True, False])
async def test_schema_newer_than_the_code_is_refused(
    memory: SessionMemory, db_path: Path, upgrade: bool
) -> None:
    await memory.store.close()
    close_leaked_connections()
    _set_revision(db_path, "9999zz")
    before_state = state(db_path)
    close_leaked_connections()
    before_bytes = digest(db_path)
    with pytest.raises(SchemaTooNewError) as info:
        await MemoryStore.open(db_path, upgrade=upgrade)
    assert type(info.value) is SchemaTooNewError
    assert "9999zz" in str(info.value) and head_revision() in str(info.value)
    assert sidecars(db_path) == []  # the refused open closed every connection it made
    assert digest(db_path) == before_bytes
    assert state(db_path) == before_state
    # Back at head, the same file opens with its item intact.
    _set_revision(db_path, head_revision())
    async with MemoryStore.open(db_path) as store:
        items = await store.session(SESSION, estimator=WordEstimator()).items()
        assert [i.content for i in items] == [FIRST]


@pytest.mark.parametrize("existing", [False, True], ids=["missing-file", "empty-file"])
async def test_upgrade_false_on_an_empty_database(db_path: Path, existing: bool) -> None:
    if existing:
        db_path.touch(mode=0o600)
    with pytest.raises(SchemaOutdatedError) as info:
        await MemoryStore.open(db_path, upgrade=False)
    assert type(info.value) is SchemaOutdatedError
    assert "empty" in str(info.value) and head_revision() in str(info.value)
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


@pytest.mark.parametrize("missing_dir", [False, True])
async def test_create_false_on_a_missing_file(tmp_path: Path, missing_dir: bool) -> None:
    path = tmp_path / "nowhere" / "memory.db" if missing_dir else tmp_path / "memory.db"
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises(DatabaseMissingError) as info:
        await MemoryStore.open(path, create=False)
    assert type(info.value) is DatabaseMissingError
    assert isinstance(info.value, FileNotFoundError)
    assert str(path) in str(info.value)
    assert not path.exists() and sidecars(path) == []
    assert sorted(os.listdir(tmp_path)) == listing


async def test_create_false_opens_an_existing_database(
    memory: SessionMemory, db_path: Path
) -> None:
    await memory.store.close()
    async with MemoryStore.open(db_path, create=False, upgrade=False) as store:
        items = await store.session(SESSION, estimator=WordEstimator()).items()
        assert [i.content for i in items] == [FIRST]


# -- locks -----------------------------------------------------------------------------------


async def test_lock_timeout_is_typed_and_writes_nothing(db_path: Path) -> None:
    settings = Settings(busy_timeout_s=0.2)
    async with MemoryStore.open(db_path, settings=settings) as store:
        handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
        await handle.add("user", FIRST)
        before = state(db_path)
        holder = sqlite3.connect(db_path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            secret = "confidential-content-4242"
            started = time.perf_counter()
            with pytest.raises(LockTimeoutError) as info:
                await handle.add("user", secret)
            waited = time.perf_counter() - started
            assert type(info.value) is LockTimeoutError
            assert isinstance(info.value, TimeoutError)
            assert secret not in str(info.value)  # SPEC 7: no stored content in errors
            assert 0.1 < waited < 3.0, f"waited {waited:.2f}s for a 0.2s busy timeout"
            with pytest.raises(LockTimeoutError):
                await handle.compact()
            # Readers are not blocked by the writer (WAL).
            assert [i.content for i in await handle.items()] == [FIRST]
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert state(db_path) == before
        # The store is still usable once the lock is gone.
        await handle.add("user", "after the lock")
        assert counts(db_path)["items"] == 2


async def test_open_while_another_process_writes(memory: SessionMemory, db_path: Path) -> None:
    await memory.store.close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        before = state(db_path)
        async with MemoryStore.open(db_path, settings=Settings(busy_timeout_s=0.2)) as store:
            handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
            assert [i.content for i in await handle.items()] == [FIRST]
            with pytest.raises(LockTimeoutError):
                await handle.add("user", "blocked")
        assert state(db_path) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- read-only databases and file permissions ------------------------------------------------

_READ_ONLY_CHILD = r"""
import asyncio, json, os, sys
from pathlib import Path
from memstore import MemoryStore, WordEstimator

path = Path(sys.argv[1])
try:
    os.close(os.open(path.parent / "probe", os.O_CREAT | os.O_WRONLY, 0o600))
    writable = True
except PermissionError:
    writable = os.access(path, os.W_OK)
if writable:
    print(json.dumps({"skip": "this process can still write the read-only directory"}))
    raise SystemExit(0)

async def main():
    stage = "open"
    try:
        async with MemoryStore.open(path) as store:
            stage = "read"
            handle = store.session("s1", estimator=WordEstimator())
            items = [i.content for i in await handle.items()]
            stage = "add"
            await handle.add("user", "must not be stored")
            return {"stage": "none", "items": items}
    except BaseException as error:
        return {"stage": stage, "error": type(error).__name__, "module": type(error).__module__,
                "message": str(error)}

print(json.dumps(asyncio.run(main())))
"""


def _unprivileged(command: list[str]) -> list[str]:
    """``command`` run without the capabilities that let root ignore permission bits."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root (euid 0) and setpriv is unavailable to drop privileges")
    drop = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, "--bounding-set", drop, "--inh-caps", "-all", *command]


async def test_read_only_database(memory: SessionMemory, db_path: Path) -> None:
    await memory.store.close()
    close_leaked_connections()
    assert sidecars(db_path) == []
    before_state, before_bytes = state(db_path), digest(db_path)
    folder = db_path.parent
    db_path.chmod(0o444)
    folder.chmod(0o555)
    try:
        paths = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        run = subprocess.run(
            _unprivileged([sys.executable, "-c", _READ_ONLY_CHILD, str(db_path)]),
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    finally:
        folder.chmod(0o755)
        db_path.chmod(0o600)
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in outcome:
        pytest.skip(f"root (euid {os.geteuid()}) ignores permission bits: {outcome['skip']}")
    assert outcome.get("error") == "ReadOnlyDatabaseError", outcome
    assert outcome["module"] == "memstore.errors"
    assert outcome["stage"] in ("open", "add")
    assert digest(db_path) == before_bytes
    assert state(db_path) == before_state


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_new_database_files_are_private(db_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        async with MemoryStore.open(db_path) as store:
            await store.session(SESSION, estimator=WordEstimator()).add("user", FIRST)
            created = [db_path, *(Path(f"{db_path}{s}") for s in sidecars(db_path))]
            assert len(created) >= 2, "expected the WAL files while the store is open"
            modes = {p.name: oct(p.stat().st_mode & 0o777) for p in created}
    finally:
        os.umask(previous)
    assert set(modes.values()) == {"0o600"}, modes
    assert oct(db_path.stat().st_mode & 0o777) == "0o600"


# -- a full disk -------------------------------------------------------------------------------


async def test_full_database_is_a_typed_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLITE_FULL, produced the portable way: a page budget the next write cannot fit."""
    from memstore.db import sqlite_writer

    connect = sqlite_writer.SqliteWriter._connect

    def capped(self: sqlite_writer.SqliteWriter) -> sqlite3.Connection:
        conn = connect(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    path = tmp_path / "full.db"
    async with MemoryStore.open(path) as store:
        memory = store.session("s", limits=LIMITS, estimator=WordEstimator())
        await memory.add("user", "first item")
    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_connect", capped)
    before = state(path)
    async with MemoryStore.open(path) as store:  # a new writer thread: its connection is capped
        memory = store.session("s", limits=LIMITS, estimator=WordEstimator())
        with pytest.raises(StorageFullError) as info:
            await memory.add("user", "x " * 20_000)
        assert "full" in str(info.value)
        assert "x x x" not in str(info.value)  # the message never echoes stored content
    assert state(path) == before
