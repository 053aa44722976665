"""The SQLite writer's shortcut for the common append (``Append.run_sqlite``).

It binds its parameter tuples itself instead of going through the step generator, so these
tests pin down that it stores exactly what the generator stores, declines (writing nothing)
whenever the generator has more to do, and is really the path the writer takes.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import sqlite as sqlite_dialect

from memstore import EstimatorMismatchError, MemoryLimits, MemoryStore, WordEstimator
from memstore.db import append as appends
from memstore.db.append import INSERT_ITEM, Append, NewItem, append_steps
from memstore.db.sqlite_statements import compile_once, sqlite_timestamp
from memstore.db.steps import run_steps
from memstore.db.tables import UTCDateTime
from memstore.model import MemoryKind, MemoryRole, Priority

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
WORDS = WordEstimator()
SEEDS = 6  # appends before the compared ones, then a compaction


def new_item(text: str, kind: MemoryKind = MemoryKind.USER_MESSAGE) -> NewItem:
    role = MemoryRole.USER if kind is MemoryKind.USER_MESSAGE else MemoryRole.TOOL
    return NewItem(role, kind, Priority.HIGH, text, WORDS.count(text))


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 12, 1, 8, 0, 0, 0, tzinfo=UTC),  # no microseconds: isoformat drops them
        datetime(2026, 12, 1, 8, 0, 0, 123456, tzinfo=UTC),
        datetime(2026, 12, 1, 9, 30, 5, 7, tzinfo=timezone(timedelta(hours=1, minutes=30))),
    ],
)
def test_timestamps_are_stored_as_utc_datetime_and_the_stdlib_adapter_store_them(
    moment: datetime,
) -> None:
    """The text the SQLite writer has always stored: ``UTCDateTime``'s naive UTC, as the
    driver's (deprecated) datetime adapter writes it; both append paths bind exactly it."""
    naive = UTCDateTime().process_bind_param(moment, sqlite_dialect.dialect())
    conn = sqlite3.connect(":memory:")
    try:
        (adapted,) = conn.execute("SELECT ?", (naive,)).fetchone()
    finally:
        conn.close()
    assert sqlite_timestamp(moment) == adapted
    compiled = compile_once(INSERT_ITEM)
    params = dict.fromkeys(compiled.order, 0) | {"created_at": moment}
    assert compiled.values(params)[compiled.order.index("created_at")] == adapted


def test_a_naive_timestamp_is_refused_as_utc_datetime_refuses_it() -> None:
    with pytest.raises(ValueError, match="naive"):
        sqlite_timestamp(datetime(2026, 12, 1, 8, 0))


async def test_the_shortcut_stores_what_the_step_generator_stores(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions, the same appends at the same moments: one through the shortcut, one
    through the generator alone; every stored column but the ids is equal."""
    moments = iter(
        datetime(2026, 12, 1, 8, 0, second, micro, tzinfo=UTC)
        for second, micro in [(1, 0), (1, 0), (2, 250), (2, 250), (3, 999999), (3, 999999)]
    )
    texts = [("first", MemoryKind.USER_MESSAGE), ("a tool said this", MemoryKind.TOOL_OBSERVATION)]
    texts.append(("third", MemoryKind.USER_MESSAGE))
    async with MemoryStore.open(db_path) as store:
        for session in ("short", "generic"):  # both exist, compacted once: version != seq
            memory = store.session(session, estimator=WORDS, limits=LIMITS)
            for i in range(SEEDS):
                await memory.add("user", f"seed {i}")
            assert await memory.compact() is not None
        monkeypatch.setattr(appends, "utcnow", lambda: next(moments))
        results = {}
        for text, kind in texts:
            new = new_item(text, kind)
            results["short"] = await run_steps(
                store.database, Append("short", WORDS.name, LIMITS, new)
            )
            results["generic"] = await run_steps(  # a plain factory: no shortcut to take
                store.database,
                lambda dialect, new=new: append_steps(dialect, "generic", WORDS.name, LIMITS, new),
            )
            short, generic = results["short"], results["generic"]
            assert (short.total_tokens, short.user_turns) == (
                generic.total_tokens,
                generic.user_turns,
            )
            assert short.item.timestamp == generic.item.timestamp
        assert await store.check() == []
    item_columns = (
        "seq, role, kind, priority, content, created_at, typeof(created_at), estimated_tokens, "
        "added_version, idempotency_key, fate, removed_by, removed_version, version"
    )
    compared = [
        rows(db_path, f"SELECT {item_columns} FROM items WHERE session_id = '{session}' "
             f"AND seq > {SEEDS} ORDER BY seq")  # after the seeds
        for session in ("short", "generic")
    ]  # fmt: skip
    assert len(compared[0]) == len(texts) and compared[0] == compared[1]
    assert [(row[0], row[8]) for row in compared[0]] == [(7, 8), (8, 9), (9, 10)]  # seq, version
    assert [row[5] for row in compared[0]] == [  # isoformat(" "): no ".000000"
        "2026-12-01 08:00:01",
        "2026-12-01 08:00:02.000250",
        "2026-12-01 08:00:03.999999",
    ]
    session_columns = (
        "version, estimator, last_seq, active_items, active_tokens, user_turns, hard_limit, "
        "target_limit, keep_recent, updated_at"
    )
    assert rows(db_path, f"SELECT {session_columns} FROM sessions WHERE id = 'short'") == rows(
        db_path, f"SELECT {session_columns} FROM sessions WHERE id = 'generic'"
    )


async def test_the_shortcut_declines_and_writes_nothing_when_the_generator_has_more_to_do(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        await store.session("s", estimator=WORDS, limits=LIMITS).add("user", "seed")
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        before = rows(db_path, "SELECT * FROM sessions") + rows(db_path, "SELECT * FROM items")
        conn.execute("BEGIN IMMEDIATE")
        keyed = new_item("hello")._replace(idempotency_key="k")
        assert Append("s", WORDS.name, LIMITS, keyed).run_sqlite(conn) is None  # look up first
        assert Append("missing", WORDS.name, LIMITS, new_item("hi")).run_sqlite(conn) is None
        assert Append("s", "o200k_base", LIMITS, new_item("hi")).run_sqlite(conn) is None
        assert conn.total_changes == 0
        conn.execute("COMMIT")
    finally:
        conn.close()
    assert rows(db_path, "SELECT * FROM sessions") + rows(db_path, "SELECT * FROM items") == before


async def test_the_writer_takes_the_shortcut_alone_and_in_batches(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[bool] = []
    shortcut = Append.run_sqlite

    def counting(self: Append, conn: sqlite3.Connection) -> Any:
        outcome = shortcut(self, conn)
        answered.append(outcome is not None)
        return outcome

    monkeypatch.setattr(Append, "run_sqlite", counting)
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WORDS, limits=LIMITS)
        await memory.add("user", "creates the session")  # declined: the generator creates it
        for i in range(5):
            await memory.add("user", f"alone {i}")
        await asyncio.gather(*(memory.add("user", f"together {i}") for i in range(16)))
        await memory.add("user", "keyed", idempotency_key="k")  # declined: looked up first
        assert answered == [False] + [True] * 21 + [False]
        assert [item.seq for item in await memory.items()] == list(range(1, 24))
        assert await store.check() == []


async def test_a_declined_append_that_fails_in_a_batch_fails_alone(db_path: Path) -> None:
    """In a batch, a job the shortcut declined and the generator then failed is rolled back
    to its own savepoint; the shortcut's writes around it commit."""
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WORDS, limits=LIMITS)
        await memory.add("user", "seed")
        other = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        other.estimator = _Renamed()
        outcomes = await asyncio.gather(
            *(memory.add("user", f"fine {i}") for i in range(8)),
            other.add("user", "counted by another estimator"),
            *(memory.add("user", f"also fine {i}") for i in range(8)),
            return_exceptions=True,
        )
        errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], EstimatorMismatchError)
        assert (await store.session_info("s")).items_total == 17
        assert await store.check() == []


class _Renamed(WordEstimator):
    """Counts as WordEstimator does, under another name (a session it did not count)."""

    name = "words-renamed"
