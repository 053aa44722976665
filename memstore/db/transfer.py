"""Export a session's rows as JSON-ready records, and import them into another database.

The records are the rows themselves (every column but the lease, which is per-deployment
state), so an import rebuilds the exact ledger: replay verifies it and ``show --all`` matches
the original. The format is versioned (``format`` on the first record).

An import is untrusted input. Each record is checked against its column here (types, numbers
within 0..the column's largest value, storable text, items the API would have accepted, within
the store's ``max_item_bytes``); what the records say together (recounted tokens, counters,
fates) is checked by :mod:`memstore.core.import_checks`, and what they claim about other rows
(free item ids, the parent of a fork and the origins of its copies) by
:mod:`memstore.db.import_lineage`, in the import's transaction. Nothing is written unless all
pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import JSON, BigInteger, Connection, Table, insert, select

from memstore.config import DEFAULT_MAX_ITEM_BYTES
from memstore.core.carried_items import parse_item
from memstore.core.import_checks import Record, check_import
from memstore.core.ltm_entries import validate_scope
from memstore.core.tokens import RecordedEstimator
from memstore.core.validation import (
    check_storable,
    validate_idempotency_key,
    validate_session_id,
    validate_text,
)
from memstore.core.values import Fate, check_kind_role, parse_kind, parse_priority, parse_role
from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.import_lineage import check_against_database
from memstore.db.search_index import index_tail
from memstore.db.tables import UTCDateTime, compactions, items, sessions, summaries
from memstore.errors import ConflictError, SessionNotFoundError, ValidationError

EXPORT_FORMAT = 1
#: Lease columns describe who is compacting *here, now*; they never travel.
_LOCAL_COLUMNS = {"lease_owner", "lease_expires_at", "lease_host", "lease_pid", "lease_started"}
#: Record type -> table, in the order an import must insert them (foreign keys).
TABLES: dict[str, Table] = {
    "session": sessions,
    "compaction": compactions,
    "item": items,
    "summary": summaries,
}

#: The largest value an ``Integer`` column holds on every backend (PostgreSQL's ``integer``),
#: and a ``BigInteger`` one: a larger number would fail inside the driver, not here.
MAX_INTEGER = 2**31 - 1
MAX_BIG_INTEGER = 2**63 - 1


def _to_json(table: Table, row: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in table.columns:
        if column.name in _LOCAL_COLUMNS or (table is summaries and column.name == "id"):
            continue
        value = row[column.name]
        out[column.name] = value.isoformat() if isinstance(value, datetime) else value
    return out


async def export_records(db: Database, session_id: str) -> list[dict[str, Any]]:
    """The session's rows as records (``type`` first), in import order.

    Raises:
        SessionNotFoundError: no such session.
    """
    out = await db.run_read(partial(_export_records, session_id=session_id))
    if not out:
        raise SessionNotFoundError(session_id)
    return out


def _export_records(conn: Connection, session_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, table in TABLES.items():
        id_column = table.c.id if table is sessions else table.c.session_id
        order = table.c.number if table is compactions else None
        query = select(table).where(id_column == session_id)
        if table is items:
            order = items.c.seq
        elif table is summaries:
            order = summaries.c.compaction_number
        for row in conn.execute(query.order_by(order) if order is not None else query).all():
            record = {"type": kind, **_to_json(table, row._mapping)}
            if kind == "session":
                record["format"] = EXPORT_FORMAT
            out.append(record)
    return out


def _check_value(column: Any, value: Any, field: str) -> Any:
    """A record value checked against its column's type (an import is untrusted input)."""
    if value is None:
        if not column.nullable:
            raise ValidationError(field, "must not be null")
        return None
    if isinstance(column.type, UTCDateTime):
        try:
            moment = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise ValidationError(field, "is not an ISO 8601 time") from None
        if moment.tzinfo is None:
            raise ValidationError(field, "needs a time zone")
        return moment
    python_type = (
        getattr(column.type, "python_type", None) if not isinstance(column.type, JSON) else None
    )
    if python_type is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValidationError(field, "must be an integer")
    if python_type is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValidationError(field, "must be a number")
    if python_type in (int, float):
        largest = MAX_BIG_INTEGER if isinstance(column.type, BigInteger) else MAX_INTEGER
        if not math.isfinite(value) or value < 0:
            raise ValidationError(field, f"must be a number >= 0, got {value!r}")
        if python_type is int and value > largest:
            raise ValidationError(field, f"must be at most {largest}, got {value}")
    if python_type is str:
        if not isinstance(value, str):
            raise ValidationError(field, "must be text")
        check_storable(field, value)
    return value


def _from_json(table: Table, record: Mapping[str, Any], where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for column in table.columns:
        name = column.name
        if name in _LOCAL_COLUMNS or (table is summaries and name == "id"):
            continue
        if name == "lease_token":
            values[name] = 0
            continue
        if name not in record:
            if column.nullable or column.server_default is not None:
                continue
            raise ValidationError(f"{where}.{name}", "is missing")
        values[name] = _check_value(column, record[name], f"{where}.{name}")
    return values


def _check_semantics(kind: str, values: dict[str, Any], where: str, max_bytes: int) -> None:
    """The rules the API enforces on the way in, enforced on an import too."""
    if kind == "session":
        validate_session_id(values["id"])
        RecordedEstimator(values["estimator"])  # a known estimator name
        if (values.get("parent_id") is None) != (values.get("parent_version") is None):
            raise ValidationError(f"{where}.parent_id", "a fork names its parent and version")
        if values.get("parent_id") is not None:
            validate_session_id(values["parent_id"], f"{where}.parent_id")
        if values.get("scope") is not None:
            validate_scope(values["scope"], f"{where}.scope")
    elif kind == "item":
        role, item_kind = parse_role(values["role"]), parse_kind(values["kind"])
        check_kind_role(item_kind, role)
        parse_priority(values["priority"])
        validate_text(f"{where}.content", values["content"], max_bytes=max_bytes)
        validate_idempotency_key(values.get("idempotency_key"))
        if values.get("fate") not in (None, *(fate.value for fate in Fate)):
            raise ValidationError(f"{where}.fate", f"unknown fate {values.get('fate')!r}")
        if values.get("payload") is not None:
            _check_payload(values, where, max_bytes)


def _check_payload(values: Mapping[str, Any], where: str, max_bytes: int) -> None:
    """A carried item must be one the API would have accepted, its call_id its own."""
    try:
        payload = json.loads(values["payload"])
        parsed = parse_item(payload, f"{where}.payload", max_bytes=max_bytes)
    except RecursionError:
        raise ValidationError(f"{where}.payload", "is nested too deeply") from None
    except ValidationError:
        raise
    except ValueError:
        raise ValidationError(f"{where}.payload", "is not JSON") from None
    if parsed.link != values.get("call_id"):
        raise ValidationError(f"{where}.call_id", "does not match the item's payload")


def parse_records(
    records: Iterable[Mapping[str, Any]], max_bytes: int = DEFAULT_MAX_ITEM_BYTES
) -> tuple[str, list[Record]]:
    """Check and convert records for :func:`import_records`: the session id, and the records
    (their column values) in the order they are inserted.

    Args:
        records: The export's records, in its order.
        max_bytes: The largest item content (and carried item) accepted, in UTF-8 bytes.

    Raises:
        ValidationError: naming the record (``record 3``) and the field that is wrong.
    """
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise ValidationError("records", "must be a list of export records (JSON objects)")
    checked: list[Record] = []
    session_id: str | None = None
    for number, record in enumerate(records, 1):
        where = f"record {number}"
        if not isinstance(record, Mapping):
            raise ValidationError(where, "must be a JSON object")
        kind = record.get("type")
        if kind not in TABLES:
            raise ValidationError(f"{where}.type", f"unknown record type {kind!r}")
        if number == 1:
            if kind != "session":
                raise ValidationError(where, "the first record must be the session")
            if record.get("format") != EXPORT_FORMAT:
                raise ValidationError(
                    f"{where}.format", f"unsupported format {record.get('format')!r}"
                )
            session_id = record.get("id")
        elif kind == "session":
            raise ValidationError(where, "an export holds exactly one session")
        values = _from_json(TABLES[kind], record, where)
        _check_semantics(kind, values, where, max_bytes)
        if kind != "session" and values.get("session_id") != session_id:
            raise ValidationError(f"{where}.session_id", "belongs to another session")
        checked.append(Record(where, kind, values))
    if session_id is None or not isinstance(session_id, str):
        raise ValidationError("record 1", "no session record")
    estimator = RecordedEstimator(checked[0].values["estimator"])
    check_import(checked, estimator.count, max_bytes)
    order = list(TABLES)
    checked.sort(key=lambda record: order.index(record.kind))
    return session_id, checked


async def import_records(
    db: Database, records: Iterable[Mapping[str, Any]], max_bytes: int = DEFAULT_MAX_ITEM_BYTES
) -> str:
    """Insert an exported session in one transaction; return its id.

    Raises:
        ValidationError: a malformed record, a ledger ``memstore check`` would refuse, an item
            id the database holds already, or fork and origin metadata the database does not
            bear out (nothing written).
        ConflictError: the database already has a session with that id (nothing written).
    """
    session_id, checked = parse_records(records, max_bytes)
    await insert_records(db, session_id, checked)
    return session_id


#: What :func:`parse_records` makes of an export: its records, checked, in insertion order.
Rows = list[Record]


async def insert_records(db: Database, session_id: str, rows: Rows) -> None:
    """Insert what :func:`parse_records` returned, in one transaction (checked against the
    database there: ids, parent, origins), and index it.

    Raises:
        ConflictError: the database already has a session with that id (nothing written).
        ValidationError: the records do not fit the database (nothing written).
    """
    await db.run_write(partial(_insert_rows, session_id=session_id, records=rows))


def _insert_rows(conn: Connection, session_id: str, records: Rows) -> None:
    # The session row first, ON CONFLICT DO NOTHING: an import of the same session racing
    # this one is a ConflictError either way, never a constraint violation.
    created = conn.execute(
        dialect_insert(conn.dialect.name)(sessions)
        .values(records[0].values)
        .on_conflict_do_nothing()
    )
    if created.rowcount != 1:
        raise ConflictError(f"session {session_id!r} already exists in this database")
    check_against_database(conn, records)
    for kind, table in TABLES.items():
        batch = [record.values for record in records if record.kind == kind]
        if batch and table is not sessions:
            conn.execute(insert(table), batch)
    index_tail(conn)  # searches use the index at once, not a scan of every imported row
