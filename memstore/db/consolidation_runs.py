"""Consolidation in SQL: what a run reads, and the one transaction that commits it.

The protocol, in the order a run meets it (:mod:`memstore.memory.consolidation` drives it):

1. the session's lease (:mod:`memstore.db.lease`), the same one compactions take: one worker
   at a time consolidates a session, so two workers never extract and write the same facts;
2. :func:`unconsumed_items`: the session's items no committed run consumed yet;
3. the extractor runs with no transaction open; :func:`slot_states` reads what the slots it
   names hold now;
4. :func:`commit_run`, one write transaction: a fence on the lease (this worker still holds
   it, or nothing is written), the run's record and its report, one ``consolidated_items``
   row per consumed item (their primary key makes consuming an item twice impossible), and
   each entry written by compare-and-set on the version the plan saw
   (:func:`memstore.db.ltm.write_entry`). A person who wrote a slot after the plan read it
   makes the commit roll back (:class:`RunConflict`), and the run plans again. A worker
   killed at any point leaves either the whole run or nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Connection, exists, func, insert, select, update

from memstore.config import fault_point
from memstore.core.consolidation_report import Decision
from memstore.core.ltm_entries import LongTermEntry
from memstore.core.values import MemoryItem
from memstore.db.engine import Database
from memstore.db.lease import CLEARED
from memstore.db.ltm import ENTRY_COLUMNS, EntryRaced, write_entry
from memstore.db.reads import ITEM_COLUMNS, row_to_item
from memstore.db.tables import (
    consolidated_facts,
    consolidated_items,
    consolidations,
    items,
    ltm_entries,
    ltm_history,
    sessions,
)
from memstore.errors import LeaseLostError, VersionConflictError
from memstore.extraction.slots import SlotState, fact_digest, normalized_text


class RunConflict(Exception):
    """A slot changed between the plan and the commit (a person wrote it): plan again."""


@dataclass(frozen=True)
class Consumed:
    """The session's unconsumed items and the scope they consolidate into."""

    scope: str | None
    items: tuple[MemoryItem, ...]


# -- reads ------------------------------------------------------------------------------------


def _not_consumed() -> Any:
    return ~exists().where(
        consolidated_items.c.session_id == items.c.session_id,
        consolidated_items.c.seq == items.c.seq,
    )


async def session_scope(db: Database, session_id: str) -> tuple[bool, str | None]:
    """Whether the session exists, and the scope it recorded."""
    stmt = select(sessions.c.scope).where(sessions.c.id == session_id)
    row = await db.run_read(lambda conn: conn.execute(stmt).first())
    return (row is not None, None if row is None else row.scope)


async def session_totals(db: Database, session_id: str) -> tuple[int, int]:
    """What the session's committed runs consumed and wrote, in tokens."""
    stmt = select(
        func.coalesce(func.sum(consolidations.c.source_tokens), 0),
        func.coalesce(func.sum(consolidations.c.entry_tokens), 0),
    ).where(consolidations.c.session_id == session_id)
    row = await db.run_read(lambda conn: conn.execute(stmt).one())
    return int(row[0]), int(row[1])


async def unconsumed_items(
    db: Database, session_id: str, *, forgotten_only: bool
) -> tuple[MemoryItem, ...]:
    """The session's items no run consumed yet, by seq (``forgotten_only``: only those that
    left working memory)."""
    stmt = select(*ITEM_COLUMNS).where(items.c.session_id == session_id, _not_consumed())
    if forgotten_only:
        stmt = stmt.where(items.c.fate.is_not(None))
    stmt = stmt.order_by(items.c.seq)
    rows = await db.run_read(lambda conn: conn.execute(stmt).all())
    return tuple(row_to_item(row) for row in rows)


async def slot_states(
    db: Database, scope: str, keys: Iterable[str], now: datetime
) -> dict[str, SlotState]:
    """What each of ``keys`` holds in ``scope``: the live entry and every text it ever held."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}

    def read(conn: Connection) -> dict[str, SlotState]:
        live = {
            row.key: row
            for row in conn.execute(
                select(
                    ltm_entries.c.key,
                    ltm_entries.c.value,
                    ltm_entries.c.version,
                    ltm_entries.c.source,
                ).where(
                    ltm_entries.c.scope == scope,
                    ltm_entries.c.key.in_(wanted),
                    (ltm_entries.c.expires_at.is_(None)) | (ltm_entries.c.expires_at > now),
                )
            )
        }
        seen: dict[str, set[str]] = {key: set() for key in wanted}
        considered: dict[str, set[str]] = {key: set() for key in wanted}
        settled = select(consolidated_facts.c.key, consolidated_facts.c.digest).where(
            consolidated_facts.c.scope == scope, consolidated_facts.c.key.in_(wanted)
        )
        for row in conn.execute(settled):
            considered[row.key].add(row.digest)
        history = select(ltm_history.c.key, ltm_history.c.value).where(
            ltm_history.c.scope == scope,
            ltm_history.c.key.in_(wanted),
            ltm_history.c.value.is_not(None),
        )
        for row in conn.execute(history):
            seen[row.key].add(normalized_text(str(row.value)))
        return {
            key: SlotState(
                version=live[key].version if key in live else 0,
                value=live[key].value if key in live else None,
                source=live[key].source if key in live else None,
                seen=frozenset(seen[key]),
                considered=frozenset(considered[key]),
            )
            for key in wanted
        }

    return await db.run_read(read)


# -- the commit -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """What :func:`commit_run` writes besides the entries."""

    session_id: str
    scope: str
    owner: str
    lease_token: int
    extractor: str
    compaction: int | None
    worker: str
    started_at: datetime
    finished_at: datetime
    seqs: tuple[int, ...]
    source_tokens: int
    entry_tokens: int


def _fence(conn: Connection, record: RunRecord) -> None:
    released = conn.execute(
        update(sessions)
        .where(
            sessions.c.id == record.session_id,
            sessions.c.lease_owner == record.owner,
            sessions.c.lease_token == record.lease_token,
        )
        .values(**CLEARED)
    )
    if released.rowcount != 1:
        raise LeaseLostError(record.session_id, taken_by=None, token=record.lease_token)


def _commit(
    conn: Connection,
    record: RunRecord,
    decisions: Sequence[Decision],
    sources: Mapping[str, Mapping[str, Any]],
    report: Callable[[int], dict[str, Any]],
) -> int:
    _fence(conn, record)
    number = 1 + int(
        conn.execute(
            select(func.coalesce(func.max(consolidations.c.number), 0)).where(
                consolidations.c.session_id == record.session_id
            )
        ).scalar_one()
    )
    conn.execute(
        insert(consolidations).values(
            session_id=record.session_id,
            number=number,
            scope=record.scope,
            extractor=record.extractor,
            compaction=record.compaction,
            worker=record.worker,
            started_at=record.started_at,
            finished_at=record.finished_at,
            source_tokens=record.source_tokens,
            entry_tokens=record.entry_tokens,
            report=report(number),
        )
    )
    for decision in decisions:
        if not decision.writes:
            continue
        source = dict(sources[decision.key], run=number)
        try:
            write_entry(
                conn,
                record.scope,
                decision.key,
                decision.text,
                expected_version=decision.expected_version,
                expires_at=None,
                now=record.finished_at,
                source=source,
            )
        except (VersionConflictError, EntryRaced) as changed:
            raise RunConflict(str(changed)) from None
    facts = {
        (decision.key, fact_digest(decision.text)) for decision in decisions if decision.settled
    }
    if facts:
        conn.execute(
            insert(consolidated_facts),
            [
                {
                    "scope": record.scope,
                    "key": key,
                    "digest": digest,
                    "session_id": record.session_id,
                    "run": number,
                }
                for key, digest in sorted(facts)
            ],
        )
    # A worker killed here (or anywhere in this function) leaves nothing: the transaction
    # rolls back, entries and record alike.
    fault_point("consolidation-mid-commit")
    if record.seqs:
        conn.execute(
            insert(consolidated_items),
            [{"session_id": record.session_id, "seq": seq, "run": number} for seq in record.seqs],
        )
    return number


def _fact_row(record: RunRecord, key: str, digest: str, number: int) -> dict[str, Any]:
    return {
        "scope": record.scope,
        "key": key,
        "digest": digest,
        "session_id": record.session_id,
        "run": number,
    }


async def commit_run(
    db: Database,
    record: RunRecord,
    decisions: Sequence[Decision],
    sources: Mapping[str, Mapping[str, Any]],
    report: Callable[[int], dict[str, Any]],
) -> int:
    """Commit a run in one write transaction; return its number.

    Args:
        record: The run (its lease, consumed seqs, times).
        decisions: What to write (skips are only reported).
        sources: Each written key's provenance (``run`` is filled in here).
        report: Builds the stored report from the run's number.

    Raises:
        LeaseLostError: the lease is no longer this worker's (nothing written).
        RunConflict: a slot changed since the plan (nothing written; plan again).
    """
    return await db.run_write(
        partial(_commit, record=record, decisions=decisions, sources=sources, report=report)
    )


# -- reading runs back, and what sessions derived -----------------------------------------------


async def run_reports(db: Database, session_id: str) -> list[dict[str, Any]]:
    """Every committed run's stored report, oldest first."""
    stmt = (
        select(consolidations.c.report)
        .where(consolidations.c.session_id == session_id)
        .order_by(consolidations.c.number)
    )
    return await db.run_read(lambda conn: [row.report for row in conn.execute(stmt)])


async def derived_entries(
    db: Database, session_id: str, now: datetime, deleted_items_only: bool = False
) -> list[LongTermEntry]:
    """Live entries whose current version consolidation derived from the session, by scope and
    key (``deleted_items_only``: from items of it that no longer exist, after a prune)."""

    def read(conn: Connection) -> list[LongTermEntry]:
        stmt = select(*ENTRY_COLUMNS).where(
            ltm_entries.c.source.is_not(None),
            (ltm_entries.c.expires_at.is_(None)) | (ltm_entries.c.expires_at > now),
        )
        found = []
        for row in conn.execute(stmt):
            source = row.source
            if isinstance(source, Mapping) and source.get("session") == session_id:
                found.append(LongTermEntry(**row._mapping))
        if deleted_items_only and found:
            wanted = {seq for entry in found for seq in (entry.source or {}).get("seqs") or ()}
            kept = set(
                conn.execute(
                    select(items.c.seq).where(
                        items.c.session_id == session_id, items.c.seq.in_(sorted(wanted))
                    )
                ).scalars()
            )
            found = [
                entry for entry in found if not set((entry.source or {}).get("seqs") or ()) <= kept
            ]
        return sorted(found, key=lambda entry: (entry.scope, entry.key))

    return await db.run_read(read)
