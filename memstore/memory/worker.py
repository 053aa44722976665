"""Who holds a lease and runs a compaction: this host, this process, one store.

A small value of its own so that opening a store does not import the session stack: the store
names its worker once, and every handle it gives out compacts as that worker.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Worker:
    """This host, this process, and a nonce for the case of two stores in one process."""

    host: str
    nonce: str

    @property
    def id(self) -> str:
        """``host:pid:nonce``: the pid read now, so a forked child is a worker of its own."""
        return f"{self.host}:{os.getpid()}:{self.nonce}"


def new_handle_id() -> str:
    """A fresh session-handle id, recorded on every item the handle adds (random: two
    handles never share one)."""
    return uuid.uuid4().hex
