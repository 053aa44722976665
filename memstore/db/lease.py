"""The per-session compaction lease: take it, keep it alive, give it back, see who holds it.

Only the lease holder calls the summarizer, so workers racing to compact one session waste no
model calls. The lease is short (``Settings.lease_s``, 10 s by default) and its holder renews
it while it works (:func:`renew_lease`, every third of the lease); a holder that dies stops
renewing, and its lease runs out within one lease time. Two things make that wait shorter or
safer:

* **A dead holder on the same host is replaced at once.** The lease records its holder's
  host, pid and process start time; a worker on that host that finds the holder's process
  gone (or its pid reused by another process) takes the lease over without waiting.
* **One clock.** Expiry is judged by the database's clock (SQLite: the machine's; PostgreSQL:
  the server's ``clock_timestamp()``), never a worker's: a worker whose clock runs ahead can
  neither steal live leases nor stretch its own.

Taking the lease increments ``lease_token``, the fencing token: the compaction commit checks
it (:mod:`memstore.db.compaction`), so a holder whose lease was taken over (it paused past the
lease, or lost its heartbeats) commits nothing. Whoever takes over an abandoned lease learns
whose it was (:attr:`Lease.took_over_from`) for the report of its compaction. The lease is
coordination metadata: taking or renewing it does not change the session's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import Connection, extract, func, select, update

from memstore.db.engine import Database
from memstore.db.tables import sessions
from memstore.processes import ProcessIdentity, is_running

#: The lease columns cleared when it is released or its compaction commits.
CLEARED = {
    "lease_owner": None,
    "lease_expires_at": None,
    "lease_host": None,
    "lease_pid": None,
    "lease_started": None,
}


@dataclass(frozen=True)
class Lease:
    """A lease this worker took: its fencing token, and whose abandoned lease it replaced."""

    token: int
    took_over_from: str | None = None


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds a session's lease now, and for how much longer (by the database's clock)."""

    owner: str
    host: str | None
    pid: int | None
    expires_in: float


def database_now(conn: Connection) -> Any:
    """The database's clock as seconds since 1970, as an SQL expression."""
    if conn.dialect.name == "postgresql":
        return extract("epoch", func.clock_timestamp())
    return (func.julianday("now") - 2440587.5) * 86400.0


def _holder(row: Any) -> LeaseHolder:
    return LeaseHolder(row.lease_owner, row.lease_host, row.lease_pid, row.expires_in)


def _acquire(
    conn: Connection, session_id: str, owner: str, me: ProcessIdentity, lease_s: float
) -> Lease | LeaseHolder | None:
    now = database_now(conn)
    row = conn.execute(
        select(
            sessions.c.lease_owner,
            sessions.c.lease_host,
            sessions.c.lease_pid,
            sessions.c.lease_started,
            sessions.c.lease_token,
            (func.coalesce(sessions.c.lease_expires_at, 0.0) - now).label("expires_in"),
        ).where(sessions.c.id == session_id)
    ).first()
    if row is None:
        return None  # no such session (yet)
    took_over = None
    if row.lease_owner is not None:
        holder_gone = (
            row.lease_host == me.host
            and row.lease_pid is not None
            and not is_running(row.lease_pid, row.lease_started)
        )
        if row.expires_in > 0 and not holder_gone:
            return _holder(row)
        took_over = row.lease_owner  # expired or dead, and never released: abandoned
    token = conn.execute(
        update(sessions)
        # The token seen above: of two workers taking a free lease at once, one matches.
        .where(sessions.c.id == session_id, sessions.c.lease_token == row.lease_token)
        .values(
            lease_owner=owner,
            lease_host=me.host,
            lease_pid=me.pid,
            lease_started=me.started,
            lease_token=sessions.c.lease_token + 1,
            lease_expires_at=now + lease_s,
        )
        .returning(sessions.c.lease_token)
    ).scalar()
    if token is None:  # another worker took it between the read and the update (PostgreSQL)
        return LeaseHolder("another worker", None, None, lease_s)
    return Lease(int(token), took_over)


async def acquire_lease(
    db: Database, session_id: str, owner: str, lease_s: float
) -> Lease | LeaseHolder | None:
    """Take the session's compaction lease if it is free, expired, or held by a process of
    this host that no longer runs.

    Returns:
        The :class:`Lease` taken; or the :class:`LeaseHolder` that holds it; or ``None``
        when the session does not exist.
    """
    return await db.run_write(
        partial(
            _acquire,
            session_id=session_id,
            owner=owner,
            me=ProcessIdentity.current(),
            lease_s=lease_s,
        )
    )


def _renew(conn: Connection, session_id: str, owner: str, token: int, lease_s: float) -> bool:
    renewed = conn.execute(
        update(sessions)
        .where(
            sessions.c.id == session_id,
            sessions.c.lease_owner == owner,
            sessions.c.lease_token == token,
        )
        .values(lease_expires_at=database_now(conn) + lease_s)
    )
    return renewed.rowcount == 1


async def renew_lease(
    db: Database, session_id: str, owner: str, token: int, lease_s: float
) -> bool:
    """Extend this worker's lease by ``lease_s`` from now (a heartbeat).

    Returns:
        ``False`` when the lease is no longer this worker's (taken over: stop, commit nothing).
    """
    return await db.run_write(
        partial(_renew, session_id=session_id, owner=owner, token=token, lease_s=lease_s)
    )


def _release(conn: Connection, session_id: str, owner: str, token: int) -> None:
    conn.execute(
        update(sessions)
        .where(
            sessions.c.id == session_id,
            sessions.c.lease_owner == owner,
            sessions.c.lease_token == token,
        )
        .values(**CLEARED)
    )


async def release_lease(db: Database, session_id: str, owner: str, token: int) -> None:
    """Give the lease back early (a no-op if it was taken over meanwhile)."""
    await db.run_write(partial(_release, session_id=session_id, owner=owner, token=token))


def _current_holder(conn: Connection, session_id: str) -> LeaseHolder | None:
    row = conn.execute(
        select(
            sessions.c.lease_owner,
            sessions.c.lease_host,
            sessions.c.lease_pid,
            (func.coalesce(sessions.c.lease_expires_at, 0.0) - database_now(conn)).label(
                "expires_in"
            ),
        ).where(sessions.c.id == session_id)
    ).first()
    if row is None or row.lease_owner is None:
        return None
    return _holder(row)


async def lease_holder(db: Database, session_id: str) -> LeaseHolder | None:
    """Who holds the session's lease (``None``: nobody; an expired holder is still shown,
    with ``expires_in <= 0``: it never released it)."""
    return await db.run_read(partial(_current_holder, session_id=session_id))
