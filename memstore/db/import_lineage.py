"""What an imported session's ids, fork and origin metadata must match in the database.

The records are checked among themselves first
(:func:`memstore.core.import_checks.check_lineage`); what they say about other rows is
checked here, inside the import's write transaction, before any row is inserted. Each
refusal is a :class:`~memstore.errors.ValidationError` naming the record and the field, and
the transaction writes nothing:

* **an item id is free.** The id is the row's key: an export imported twice under another
  session id, or one that reuses another export's ids, is refused by name here rather than by
  the database's constraint;
* **the parent exists and reached the fork's version.** Its row is read ``FOR SHARE``
  (PostgreSQL), as a fork reads it: a purge of the parent running at the same moment either
  committed first (the parent is missing: refused) or waits for the import, and then finds
  the new fork like any other (:func:`memstore.db.fork.descendants`);
* **the copies are the parent's.** A fork's copy of an item the parent still holds has the
  origin that item has (its own id, or the origin it was copied with); when no copy matches,
  the ``parent_id`` names another session. A copy of an item the parent no longer holds (a
  prune since) may not name an existing item outside the parent's line (the parent, its
  parent, ...). The origin is how a search across sessions lists a passage shared by a
  parent and its forks once: an origin naming another session's item would hide that item;
* **a copied summary's origin is the parent's** summary of the same compaction. A summary's
  row id is local to its database, so the file's own value means nothing here: it is set
  from the parent (or cleared, for a summary the parent no longer holds).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, func, select

from memstore.core.import_checks import Record
from memstore.db.tables import items, sessions, summaries
from memstore.errors import ValidationError

#: Ids per ``IN (...)`` list: under SQLite's oldest limit of 999 bound parameters a statement.
CHUNK = 500


def check_against_database(conn: Connection, records: Sequence[Record]) -> None:
    """Refuse what the records claim about other rows and does not hold (module docstring);
    set each copied summary's ``origin_id`` from the parent.

    Args:
        conn: The import's write transaction.
        records: The checked records, the session first.

    Raises:
        ValidationError: naming the record and field whose claim does not hold.
    """
    session = records[0]
    item_records = [record for record in records if record.kind == "item"]
    _check_ids_free(conn, item_records)
    summary_records = [record for record in records if record.kind == "summary"]
    parent = session.values.get("parent_id")
    if parent is None:
        for record in summary_records:
            record.values["origin_id"] = None
        return
    row = conn.execute(
        select(sessions.c.version).where(sessions.c.id == parent).with_for_update(read=True)
    ).first()
    if row is None:
        raise ValidationError(
            session.field("parent_id"),
            f"names session {parent!r}, which this database does not hold: import it first",
        )
    at = session.values["parent_version"]
    if at > row.version:
        raise ValidationError(
            session.field("parent_version"),
            f"is past the end of {parent!r}, whose latest version is {row.version}",
        )
    _check_copies(conn, session, item_records, parent, at)
    copied = {
        record.values["number"]
        for record in records
        if record.kind == "compaction" and record.values["committed_version"] <= at
    }
    origins = _summary_origins(conn, parent, sorted(copied))
    for record in summary_records:
        number = record.values["compaction_number"]
        record.values["origin_id"] = origins.get(number) if number in copied else None


def _chunks(values: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])


def _check_ids_free(conn: Connection, item_records: Sequence[Record]) -> None:
    by_id = {record.values["id"]: record for record in item_records}
    for chunk in _chunks(list(by_id)):
        taken = dict(
            conn.execute(  # type: ignore[arg-type]
                select(items.c.id, items.c.session_id).where(items.c.id.in_(chunk))
            ).all()
        )
        for item_id in chunk:  # the first one in the file's order
            if item_id in taken:
                raise ValidationError(
                    by_id[item_id].field("id"),
                    f"item {item_id!r} is already in this database (session "
                    f"{taken[item_id]!r}): this export was imported before, or reuses its ids",
                )


def _check_copies(
    conn: Connection, session: Record, item_records: Sequence[Record], parent: str, at: int
) -> None:
    copies = [record for record in item_records if record.values.get("origin_id") is not None]
    held: dict[int, str] = dict(
        conn.execute(  # type: ignore[arg-type]
            select(items.c.seq, func.coalesce(items.c.origin_id, items.c.id)).where(
                items.c.session_id == parent, items.c.added_version <= at
            )
        ).all()
    )
    compared = [record for record in copies if record.values["seq"] in held]
    wrong = [r for r in compared if held[r.values["seq"]] != r.values["origin_id"]]
    if wrong and len(wrong) == len(compared):
        raise ValidationError(
            session.field("parent_id"),
            f"names {parent!r}, but the fork's copies are not its items ({wrong[0].where} "
            f"is no copy of its item #{wrong[0].values['seq']})",
        )
    if wrong:
        raise ValidationError(
            wrong[0].field("origin_id"),
            f"is not the origin of {parent!r}'s item #{wrong[0].values['seq']}, "
            "which the fork copied",
        )
    _check_unheld_origins(conn, [r for r in copies if r.values["seq"] not in held], parent)


def _check_unheld_origins(conn: Connection, copies: Sequence[Record], parent: str) -> None:
    """Copies of items the parent no longer holds: their origin may not be an existing item
    of a session outside the parent's line."""
    if not copies:
        return
    line = _line_of(conn, parent)
    by_origin = {record.values["origin_id"]: record for record in copies}
    for chunk in _chunks(list(by_origin)):
        rows = conn.execute(
            select(items.c.id, items.c.session_id).where(items.c.id.in_(chunk))
        ).all()
        for row in rows:
            if row.session_id not in line:
                raise ValidationError(
                    by_origin[row.id].field("origin_id"),
                    f"names an item of session {row.session_id!r}, which is not {parent!r} "
                    "or one of its ancestors",
                )


def _line_of(conn: Connection, session_id: str) -> set[str]:
    """The session and its ancestors (parent, parent's parent, ...)."""
    line: set[str] = set()
    current: str | None = session_id
    while current is not None and current not in line:
        line.add(current)
        current = conn.execute(
            select(sessions.c.parent_id).where(sessions.c.id == current)
        ).scalar()
    return line


def _summary_origins(conn: Connection, parent: str, numbers: Sequence[int]) -> dict[int, int]:
    origins: dict[int, int] = {}
    for chunk in _chunks(numbers):
        rows = conn.execute(
            select(
                summaries.c.compaction_number,
                func.coalesce(summaries.c.origin_id, summaries.c.id),
            ).where(summaries.c.session_id == parent, summaries.c.compaction_number.in_(chunk))
        ).all()
        origins.update({int(number): int(origin) for number, origin in rows})
    return origins
