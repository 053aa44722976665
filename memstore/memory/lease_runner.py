"""Work under a session's lease: take it (waiting if asked), keep it alive, give it back.

Compaction and consolidation take the same lease (:mod:`memstore.db.lease`), the same way:

1. :meth:`LeaseRunner.take` takes it if it is free, expired, or held by a dead process of
   this host. While a live worker holds it, the caller may wait: the runner looks again
   after :data:`FIRST_POLL_S`, doubling the pause up to :data:`MAX_POLL_S`, until the lease
   is free or the wait runs out;
2. :meth:`LeaseRunner.hold` runs the work while a :class:`Heartbeat` renews the lease every
   third of its length; a renewal that finds the lease taken over cancels the work it
   guards, which then commits nothing;
3. work that did not commit gives the lease back (a commit releases it in its own
   transaction); a release that fails is no error: the lease expires anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from memstore.db.lease import Lease, LeaseHolder, acquire_lease, release_lease, renew_lease
from memstore.errors import LeaseHeldError, LeaseLostError, StorageError

if TYPE_CHECKING:
    from memstore.memory.context import SessionContext

log = logging.getLogger("memstore")
T = TypeVar("T")

#: Heartbeats per lease length: two may fail (a busy database) before the lease runs out.
HEARTBEATS_PER_LEASE = 3
#: First and longest pause between looks at a lease another worker holds: short enough that
#: a waiting caller starts soon after the holder finishes, long enough to cost nothing.
FIRST_POLL_S = 0.05
MAX_POLL_S = 0.5


class Heartbeat:
    """Renews a lease in the background; cancels the work it guards once the lease is lost."""

    def __init__(self, context: SessionContext, lease: Lease) -> None:
        db, session_id, owner = context.database, context.session_id, context.worker.id
        lease_s = context.settings.lease_s
        self._renew: Callable[[], Awaitable[bool]] = lambda: renew_lease(
            db, session_id, owner, lease.token, lease_s
        )
        self._interval = lease_s / HEARTBEATS_PER_LEASE
        self._lease_s = lease_s
        self._session_id = session_id
        self._guarded: asyncio.Future[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self.lost = False

    async def __aenter__(self) -> Heartbeat:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the cancellation was the caller's too, not only the heartbeat's

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self._interval)
            try:
                renewed = await self._renew()
            except Exception as error:  # a busy database: the next beat tries again...
                log.warning(
                    "memstore: renewing the lease of %s failed: %s", self._session_id, error
                )
                # ...unless a whole lease went by unrenewed: another worker may hold it now.
                renewed = loop.time() - renewed_at < self._lease_s
            else:
                renewed_at = loop.time()
            if not renewed:
                self.lost = True
                if self._guarded is not None:
                    self._guarded.cancel()
                return

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the heartbeat lost the lease (taken over, or not
        renewed for a whole lease time)."""
        if self.lost:
            raise LeaseLostError(self._session_id, taken_by=None, token=None)

    async def guard(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work``, cancelled (and :class:`LeaseLostError` raised) if the lease is lost."""
        if self.lost:
            work.close()  # never started: closed, or asyncio warns it was never awaited
            self.check()
        task = asyncio.ensure_future(work)
        self._guarded = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.lost and (current is None or not current.cancelling()):
                self.check()
            raise
        finally:
            self._guarded = None


class LeaseRunner:
    """Takes and holds one session's lease for its handle's compactions and consolidations.

    Args:
        context: The session (its database, worker and lease length).
    """

    def __init__(self, context: SessionContext) -> None:
        self._context = context

    async def take(self, *, wait: float = 0.0) -> Lease | LeaseHolder | None:
        """Take the lease, waiting up to ``wait`` seconds while another worker holds it.

        Returns:
            The lease; the :class:`LeaseHolder` when it was still held after the wait;
            ``None`` when the session does not exist.
        """
        context = self._context
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        pause = FIRST_POLL_S
        while True:
            taken = await acquire_lease(
                context.database, context.session_id, context.worker.id, context.settings.lease_s
            )
            left = deadline - loop.time()
            if not isinstance(taken, LeaseHolder) or left <= 0:
                return taken
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, MAX_POLL_S)

    async def hold(
        self,
        lease: Lease,
        work: Callable[[Heartbeat], Awaitable[T]],
        *,
        committed: Callable[[T], bool],
    ) -> T:
        """``work(heartbeat)`` under ``lease``, kept alive meanwhile; the lease is given back
        unless ``committed(result)`` (a commit releases it itself).

        Raises:
            LeaseLostError: the lease was lost while the work ran (what ``work`` raises, too).
        """
        context = self._context
        kept = False
        try:
            async with Heartbeat(context, lease) as heartbeat:
                result = await work(heartbeat)
            kept = committed(result)
            return result
        finally:
            if not kept:
                with contextlib.suppress(StorageError):  # it expires anyway
                    await release_lease(
                        context.database, context.session_id, context.worker.id, lease.token
                    )


def lease_held(session_id: str, holder: LeaseHolder) -> LeaseHeldError:
    """The error that says who holds the session's lease, and for how long yet."""
    return LeaseHeldError(
        session_id,
        holder=holder.owner,
        host=holder.host,
        pid=holder.pid,
        expires_in=holder.expires_in,
    )
