"""Which process holds a lease, and whether it still runs: host, pid and process start time.

A lease records its holder's machine (:func:`machine`: host name, boot and PID namespace),
pid and start time. A worker on the same machine can then see at once that the holder is
gone, instead of waiting for the lease to expire: the pid no longer exists, is a zombie, or
now belongs to another process (pids are reused), which a different start time gives away.
Holders elsewhere cannot be checked; there the short, renewed lease bounds the wait.

The start time is the kernel's (``/proc/PID/stat``, clock ticks since boot) where there is a
``/proc``; elsewhere it is ``None`` and only the pid is checked.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from field 3 on (``None``: no such file, or no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 is the command in parentheses and may itself hold spaces or parentheses.
    return stat[stat.rindex(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), ``None`` if unknown."""
    fields = _stat(pid)
    try:
        return None if fields is None else int(fields[19])  # field 22 of the whole line
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
    fields = _stat(pid)
    if fields is None:  # no /proc: the pid is all there is to go by
        return True
    if fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent: it runs no more
        return False
    return started is None or start_time(pid) == started


def machine() -> str:
    """Where pids mean the same: the host name, its boot, and this PID namespace.

    Containers can share a host name (``--network host``, replicas named alike) and still
    number their processes apart; a pid is only comparable where all three agree.
    """
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(f"pidns:{os.stat('/proc/self/ns/pid').st_ino}")
    return "#".join(parts)


def host_name(machine_id: str) -> str:
    """The host name part of a :func:`machine` identity, for people."""
    return machine_id.split("#", 1)[0]


@dataclass(frozen=True)
class ProcessIdentity:
    """This process, as a lease records it.

    Attributes:
        host: The :func:`machine` it runs on (host name, boot, PID namespace).
        pid: Its process id.
        started: Its start time (:func:`start_time`), when known.
    """

    host: str
    pid: int
    started: int | None

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process now (after a fork, the child is a process of its own)."""
        return _identity(os.getpid())


@functools.cache
def _identity(pid: int) -> ProcessIdentity:
    return ProcessIdentity(machine(), pid, start_time(pid))
