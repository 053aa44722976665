"""Which process holds a lease, and whether it still runs: host, pid and process start time.

A lease records its holder's host, pid and start time. A worker on the same host can then see
at once that the holder is gone, instead of waiting for the lease to expire: the pid no longer
exists, or it now belongs to another process (pids are reused), which a different start time
gives away. Holders on other hosts cannot be checked; there the short, renewed lease bounds
the wait.

The start time is the kernel's (``/proc/PID/stat``, clock ticks since boot) where there is a
``/proc``; elsewhere it is ``None`` and only the pid is checked.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path


def start_time(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), ``None`` if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 is the command in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def is_running(pid: int, started: int | None) -> bool:
    """Whether process ``pid`` exists and, when ``started`` is known, is the one that started
    then (not a newer process that got the same pid)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as error:
        if error.errno == errno.ESRCH:
            return False
        # EPERM: it exists, under another user. Anything else: assume it runs (never steal).
    if started is None:
        return True
    now = start_time(pid)
    return now is None or now == started


@dataclass(frozen=True)
class ProcessIdentity:
    """This process, as a lease records it."""

    host: str
    pid: int
    started: int | None

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process now (after a fork, the child is a process of its own)."""
        return _identity(os.getpid())


@functools.cache
def _identity(pid: int) -> ProcessIdentity:
    return ProcessIdentity(socket.gethostname(), pid, start_time(pid))
