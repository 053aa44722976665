"""The reader threads of a SQLite database: reads run here, never on the event loop.

A small pool of daemon threads taking calls from one queue. Not ``ThreadPoolExecutor``: it
refuses work once the interpreter begins to shut down, and a store may still be read and
closed from an ``atexit`` handler (a worker flushing its state as it exits).
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class ReaderThreads:
    """``threads`` daemon threads running submitted calls, started on first use.

    Args:
        threads: How many calls may run at once.
    """

    def __init__(self, threads: int) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._count = threads
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        # Stop the threads of a store that is collected without being closed; not at exit,
        # where an atexit handler may still read (daemon threads need no stopping there).
        weakref.finalize(self, _stop, self._calls, threads).atexit = False

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run ``fn()`` in a reader thread; a future of its outcome."""
        with self._lock:
            if not self._threads:
                for _ in range(self._count):
                    thread = threading.Thread(
                        target=_serve, args=(self._calls,), name="memstore-sqlite-reader"
                    )
                    thread.daemon = True  # a store never closed must not keep the process alive
                    thread.start()
                    self._threads.append(thread)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future

    def close(self) -> None:
        """Let every call queued so far run, then stop the threads (and wait for them)."""
        for thread in self.stop():
            thread.join()

    def stop(self) -> list[threading.Thread]:
        """Let every call queued so far run, then stop the threads; do not wait for them.

        Returns:
            The threads that are stopping.
        """
        with self._lock:
            threads, self._threads = self._threads, []
        _stop(self._calls, len(threads))
        return threads


def _stop(calls: queue.SimpleQueue[_Call | None], threads: int) -> None:
    for _ in range(threads):
        calls.put(None)


def _serve(calls: queue.SimpleQueue[_Call | None]) -> None:
    while (call := calls.get()) is not None:
        fn, future = call
        del call  # keep nothing of a finished call while idle
        if future.set_running_or_notify_cancel():  # else: cancelled before it started
            try:
                future.set_result(fn())
            except BaseException as error:  # the caller's to handle, in its own thread
                future.set_exception(error)
        del fn, future
