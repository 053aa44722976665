"""The gathering tick of the SQLite writer's commits on the loop: wait for it, or not.

Writers that are ready in the same pass of the event loop commit together (group commit on
the loop, :mod:`memstore.db.sqlite_writer`): a writer yields the loop once, so the others can
join it. :func:`may_be_joined` tells when no other can, so the tick is skipped.
"""

from __future__ import annotations

import asyncio
import threading
import time

_BASE_CALL_SOON = asyncio.BaseEventLoop.call_soon
#: This thread's run of writes that skipped the tick (:func:`may_be_joined`): the loop's
#: ``marker`` callback, the ``loop`` and ``since`` when. Shared by every writer: it is the
#: loop's pass that ends a run, whichever store wrote.
_RUN = threading.local()


def _end_run(loop: asyncio.AbstractEventLoop) -> None:
    """The marker of a run of writes that skipped the tick: ``loop`` made a pass."""
    if getattr(_RUN, "loop", None) is loop:  # not a later loop's run (nor another thread's)
        _RUN.marker = _RUN.loop = None


def may_be_joined(loop: asyncio.AbstractEventLoop, budget_s: float) -> bool:
    """Whether another writer may join this one in the next pass of ``loop``: then wait
    for it. ``budget_s`` is the loop-commit budget (``Settings.sqlite_loop_commit_ms``).

    The tick is what group commit on the loop is made of, but it costs a pass of the loop, a
    poll of its selector included: 10 us of a 320 us durable append on this project's disk.
    When no callback is ready on the loop, no other task can run before this writer's next
    step, so no writer can join: it commits at once.

    A run of such writes, with no pass of the loop between them (a task appending in a tight
    loop), lasts the budget at most; the next write waits a tick, so the loop still runs its
    timers and polls its sockets that often (plus one commit). A run ends when the loop makes
    a pass: the first skip of a run schedules a marker callback, which the ready-queue check
    ignores and the pass runs. The run is the thread's loop's, shared by the writers of every
    store (``_RUN``).

    Only the ready queue of a loop that schedules with ``BaseEventLoop.call_soon`` (the
    standard library's loops) is trusted, and only without a task factory: with eager tasks
    (``asyncio.eager_task_factory``) the writers of a ``gather`` start one by one inside
    ``create_task``, after the first has suspended, so its queue looks empty. Elsewhere
    (uvloop, qasync, a task factory) every write waits a tick. Python 3.14's
    ``create_task(eager_start=True)`` cannot be seen here: such writers commit one by one.
    """
    ready = getattr(loop, "_ready", None)
    if (
        ready is None
        or type(loop).call_soon is not _BASE_CALL_SOON
        or loop.get_task_factory() is not None
    ):
        return True
    marker = getattr(_RUN, "marker", None)
    if getattr(_RUN, "loop", None) is not loop:  # a run of another loop of this thread
        marker = None
    if ready and not (len(ready) == 1 and ready[0] is marker):
        return True  # another callback runs in this tick: it may write
    now = time.perf_counter()
    if marker is None:  # the loop made a pass since this thread's last skip
        _RUN.since = now
        _RUN.loop = loop
        _RUN.marker = loop.call_soon(_end_run, loop)
        return False
    since: float = _RUN.since
    return now - since >= budget_s
