"""Long-term memory's bad input: every bad key, scope, value, version or expiry is a
ValidationError naming its field, and nothing is written (SQLite and PostgreSQL)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ltmsupport import FakeClock, install_clock, ltm_counts

from memstore import (
    ConfigurationError,
    MemoryStore,
    Settings,
    ValidationError,
)


@pytest.fixture
def clock(any_store: MemoryStore) -> FakeClock:
    return install_clock(any_store)


# -- validation: each bad input is a ValidationError naming its field, and writes nothing -----

BAD_KEYS = ["", "x" * 257, "line\nbreak", "nul\x00", "tab\tkey", " padded", "padded ", "zw\u200bsp"]
BAD_SCOPES = [
    "",
    "Global",
    "user:",
    ":alice",
    "user",
    "user alice",
    "user:al ice",
    "USER:alice",
    "user:alice\n",
    "user:" + "a" * 96,
    "k" * 33 + ":x",
]


@pytest.mark.parametrize("key", [*BAD_KEYS, 42, None], ids=repr)
async def test_bad_key_is_refused(any_store: MemoryStore, key: Any) -> None:
    for call in (
        any_store.ltm.set(key, "v"),
        any_store.ltm.get(key),
        any_store.ltm.delete(key),
        any_store.ltm.history(key),
    ):
        with pytest.raises(ValidationError) as raised:
            await call
        assert raised.value.field == "key"
    assert await ltm_counts(any_store) == (0, 0)


@pytest.mark.parametrize("scope", [*BAD_SCOPES, 7, None], ids=repr)
async def test_bad_scope_is_refused(any_store: MemoryStore, scope: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        await any_store.ltm.set("k", "v", scope=scope)
    assert raised.value.field == "scope"
    with pytest.raises(ValidationError) as raised:
        await any_store.ltm.get("k", scope=scope)
    assert raised.value.field == "scope"
    if scope is not None:  # list(scope=None) means every scope
        with pytest.raises(ValidationError) as raised:
            await any_store.ltm.list(scope=scope)
        assert raised.value.field == "scope"
    assert await ltm_counts(any_store) == (0, 0)


@pytest.mark.parametrize(
    "scope", ["global", "user:alice", "agent:code-reviewer", "project:checkout.v2", "t_1:A@b+c"]
)
async def test_valid_scopes(any_store: MemoryStore, scope: str) -> None:
    assert (await any_store.ltm.set("k", 1, scope=scope)).scope == scope


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> Any:
    looped: list[Any] = []
    looped.append(looped)
    return looped


BAD_VALUES = {
    "None": None,
    "NaN": math.nan,
    "inf": math.inf,
    "nested NaN": {"a": [1, -math.inf]},
    "set": {1, 2},
    "tuple": (1, 2),
    "bytes": b"raw",
    "object": object(),
    "datetime": datetime.now(UTC),
    "int key": {1: "one"},
    "NUL": "a\x00b",
    "NUL in key": {"a\x00": 1},
    "lone surrogate": "\ud800",
    "too deep": _nested(65),
    "cycle": _cycle(),
    "too large": "x" * (64 * 1024),
    "huge int": 10**5000,
}


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
async def test_bad_value_is_refused(any_store: MemoryStore, value: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        await any_store.ltm.set("k", value)
    assert raised.value.field == "value"
    assert await ltm_counts(any_store) == (0, 0)


async def test_nesting_up_to_the_limit_is_fine(any_store: MemoryStore) -> None:
    value = _nested(64)
    assert (await any_store.ltm.set("deep", value)).value == value


async def test_value_size_limit_is_configurable(tmp_path: Path) -> None:
    async with MemoryStore.open(
        tmp_path / "small.db", settings=Settings(ltm_max_value_bytes=20)
    ) as store:
        await store.ltm.set("fits", "x" * 18)  # "xxx…" is 20 bytes of JSON
        with pytest.raises(ValidationError, match="21 bytes of JSON, over the limit of 20"):
            await store.ltm.set("too-big", "x" * 19)
        with pytest.raises(ValidationError, match="over the limit"):
            await store.ltm.set("multibyte", "é" * 10)  # 22 bytes of UTF-8


def test_value_size_limit_from_the_environment() -> None:
    assert Settings.from_env({"MEMSTORE_LTM_MAX_VALUE_BYTES": "1000"}).ltm_max_value_bytes == 1000
    assert Settings().ltm_max_value_bytes == 64 * 1024
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_env({"MEMSTORE_LTM_MAX_VALUE_BYTES": "0"})
    assert raised.value.field == "MEMSTORE_LTM_MAX_VALUE_BYTES"


@pytest.mark.parametrize("expected", [-1, True, "1", 1.0], ids=repr)
async def test_bad_expected_version_is_refused(any_store: MemoryStore, expected: Any) -> None:
    for call in (
        any_store.ltm.set("k", "v", expected_version=expected),
        any_store.ltm.delete("k", expected_version=expected),
    ):
        with pytest.raises(ValidationError) as raised:
            await call
        assert raised.value.field == "expected_version"
    assert await ltm_counts(any_store) == (0, 0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"ttl": 0}, "ttl"),
        ({"ttl": -5}, "ttl"),
        ({"ttl": math.nan}, "ttl"),
        ({"ttl": math.inf}, "ttl"),
        ({"ttl": "10"}, "ttl"),
        ({"ttl": True}, "ttl"),
        ({"ttl": timedelta(0)}, "ttl"),
        ({"ttl": 1e300}, "ttl"),
        ({"ttl": 10, "expires_at": datetime(2031, 1, 1, tzinfo=UTC)}, "ttl"),
        ({"expires_at": datetime(2031, 1, 1)}, "expires_at"),
        ({"expires_at": datetime(2029, 1, 1, tzinfo=UTC)}, "expires_at"),
        ({"expires_at": "2031-01-01"}, "expires_at"),
    ],
)
async def test_bad_expiry_is_refused(
    any_store: MemoryStore, clock: FakeClock, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        await any_store.ltm.set("k", "v", **kwargs)
    assert raised.value.field == field
    assert await ltm_counts(any_store) == (0, 0)


async def test_bad_prefix_is_refused(any_store: MemoryStore) -> None:
    for prefix in ("line\nbreak", "x" * 257, 5):
        with pytest.raises(ValidationError) as raised:
            await any_store.ltm.list(prefix=prefix)  # type: ignore[arg-type]
        assert raised.value.field == "prefix"
