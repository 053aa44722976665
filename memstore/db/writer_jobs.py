"""A write waiting for the SQLite writer, and how its caller hears the outcome.

A caller's loop may be another thread's than the one that commits its write (the writer's
thread, or another loop's commit in a batch): :func:`answer_all` hands each outcome to the
caller's own loop, directly when that is the running one.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
from dataclasses import dataclass
from typing import Any

from memstore.db.steps import StepsFactory
from memstore.errors import StorageError


@dataclass
class Job:
    """One write: its step generator, and the future its caller awaits on its loop."""

    factory: StepsFactory[Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    size: int = 0  # about how much the write stores, in characters of text


def _answer(job: Job, outcome: Any, failed: bool) -> None:
    """Hand the outcome to the caller's loop; a loop closed meanwhile has no one to tell.

    The thread must survive that (the write itself stands, committed or rolled back): a
    writer that died here would leave every later caller waiting forever.
    """
    with contextlib.suppress(RuntimeError):  # "Event loop is closed"
        job.loop.call_soon_threadsafe(_deliver, job.future, outcome, failed)


def answer_all(batch: list[Job], outcomes: list[tuple[Any, bool]]) -> None:
    """Answer every job: directly on the running loop's own jobs, thread-safely otherwise."""
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # the writer thread
        here = None
    for job, (outcome, failed) in zip(batch, outcomes, strict=True):
        if job.loop is here:
            _deliver(job.future, outcome, failed)
        else:
            _answer(job, outcome, failed)


def unknown_outcome(interruption: BaseException) -> StorageError:
    """What a caller hears whose write was in a commit that another caller's Ctrl-C stopped."""
    error = StorageError("the commit was interrupted: the write may or may not be stored")
    error.__cause__ = interruption
    return error


def writer_stopped(ran: bool) -> StorageError:
    """What a caller hears whose write a writer thread that stopped by itself (a bug) could
    not finish: ``ran`` if the thread had taken it (it may be stored), else it never ran
    (queued for the thread, or handed to it once stopped)."""
    if ran:
        return StorageError(
            "the SQLite writer thread stopped while handling this write: "
            "it may or may not be stored"
        )
    return StorageError(
        "the SQLite writer thread stopped before this write ran: nothing was written"
    )


def take_queued(jobs: queue.SimpleQueue[Job | None]) -> list[Job]:
    """Empty a writer thread's queue: the jobs it held (a stop signal, ``None``, is dropped)."""
    taken: list[Job] = []
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return taken
        if job is not None:
            taken.append(job)


def _deliver(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    if future.done():  # the caller was cancelled; what committed stays committed
        return
    if failed:
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
