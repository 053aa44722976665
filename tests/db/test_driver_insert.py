"""The append's insert on SQLite runs on the DB-API connection (memstore.db.driver_insert):
its rows must be byte-identical to what SQLAlchemy Core stores for the same values."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table

from memstore import MemoryStore, Settings, WordEstimator
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.db.append import INSERT_ITEM, NewItem, _insert_values, insert_items
from memstore.db.connection import WRITE_OPTION, sqlite_engine
from memstore.db.driver_insert import compiled_insert
from memstore.db.tables import items

#: Every column of ``items``, each read back as an SQL literal: the exact text, number or NULL.
QUOTED = ", ".join(f"quote({column.name}), typeof({column.name})" for column in items.columns)
IST = timezone(timedelta(hours=5, minutes=30))


def cases() -> list[tuple[MemoryItem, NewItem]]:
    """Items that exercise every kind of value an append writes."""
    moments = [
        datetime(2026, 12, 1, 17, 0, 0, tzinfo=UTC),  # no microseconds: one text form still
        datetime(2026, 12, 1, 17, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 12, 1, 22, 30, 0, 250_000, tzinfo=IST),  # converted to UTC on the way
    ]
    payload = json.dumps(
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "lookup",
            "arguments": '{"q": "Zürich ✓"}',
        },
        ensure_ascii=False,
    )
    out = []
    for seq, moment in enumerate(moments, start=10):
        carried = seq == 11
        item = MemoryItem(
            id=f"00000000-0000-4000-8000-0000000000{seq}",
            session_id="s",
            seq=seq,
            role=MemoryRole.ASSISTANT if carried else MemoryRole.USER,
            kind=MemoryKind.ASSISTANT_MESSAGE if carried else MemoryKind.USER_MESSAGE,
            priority=Priority.HIGH if carried else Priority.NORMAL,
            content="lookup(q=Zürich ✓)" if carried else f"question {seq}: naïve café?",
            timestamp=moment,
            estimated_tokens=seq,
            version=seq + 1,
            handle="h-1",
            turn=10,
            pending_until=1_790_000_000.123456 if carried else None,
        )
        new = NewItem(
            role=item.role,
            kind=item.kind,
            priority=item.priority,
            content=item.content,
            estimated_tokens=item.estimated_tokens,
            idempotency_key="k#2" if carried else None,
            payload_json=payload if carried else None,
            call_id="c1" if carried else None,
            handle="h-1",
        )
        out.append((item, new))
    return out


async def _with_session(path: Path) -> None:
    async with MemoryStore.open(path) as store:
        await store.session("s", estimator=WordEstimator()).add("user", "the session's first")


def _stored(path: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(f"SELECT {QUOTED} FROM items WHERE seq >= 10 ORDER BY seq").fetchall()


async def test_both_paths_store_byte_identical_rows(tmp_path: Path) -> None:
    core_db, driver_db = tmp_path / "core.db", tmp_path / "driver.db"
    rows = cases()
    for path in (core_db, driver_db):
        await _with_session(path)
        engine = sqlite_engine(path, Settings())
        try:
            with engine.connect().execution_options(**{WRITE_OPTION: True}) as conn, conn.begin():
                if path == core_db:  # what every append stored before the driver path
                    conn.execute(INSERT_ITEM, [_insert_values(i, n) for i, n in rows])
                else:
                    insert_items(conn, [i for i, _ in rows], [n for _, n in rows])
        finally:
            engine.dispose()
    stored = _stored(driver_db)
    assert len(stored) == 3
    assert stored == _stored(core_db)
    created_at = [column.name for column in items.columns].index("created_at")
    assert [row[2 * created_at] for row in stored] == [
        "'2026-12-01 17:00:00.000000'",
        "'2026-12-01 17:00:00.000001'",
        "'2026-12-01 17:00:00.250000'",
    ]


async def test_appends_take_the_driver_path_on_sqlite_only(tmp_path: Path) -> None:
    from sqlalchemy.dialects import postgresql

    engine = sqlite_engine(tmp_path / "any.db", Settings())
    try:
        columns = tuple(_insert_values(*cases()[0]))
        compiled = compiled_insert(items, columns, engine.dialect)
        assert compiled is not None and compiled.sql.startswith("INSERT INTO items (")
        assert set(compiled.columns) == set(columns)
        assert compiled_insert(items, columns, postgresql.dialect()) is None
    finally:
        engine.dispose()


def test_an_insert_that_needs_a_computed_default_is_refused(tmp_path: Path) -> None:
    table = Table(
        "t", MetaData(), Column("a", Integer, primary_key=True), Column("b", Integer, default=5)
    )
    engine = sqlite_engine(tmp_path / "t.db", Settings())
    try:
        with pytest.raises(ValueError, match=r"the insert needs \['b'\]"):
            compiled_insert(table, ("a",), engine.dialect)
    finally:
        engine.dispose()
