"""memstore as an OpenAI Agents SDK session: bounded, audited, shared by many processes.

``MemstoreSession`` satisfies the SDK's ``agents.memory.Session`` protocol (the SDK checks it
structurally), so it drops in where ``SQLiteSession`` was::

    from memstore.adapters.agents_sdk import MemstoreSession

    session = MemstoreSession.from_url("chat-1", "agent.db")
    result = await Runner.run(agent, "Where is order 4?", session=session)

What the SDK gets:

* ``get_items()`` is the session's *bounded* model input (never above the hard limit): the
  summary and the relevant long-term memories first, as developer messages, then the active
  items, each Responses item exactly as it was added.
* ``add_items(items)`` appends one SDK turn (a model response and the tool calls it made,
  or the user's input) in one transaction, then compacts if a limit is reached. Compaction
  keeps a call with its output and reasoning with what it led to.
* ``pop_item()`` takes back the newest item (the SDK rewinds a failed turn this way) and
  returns it as it was added; ``clear_session()`` empties working memory. Neither deletes
  anything: the rows keep the fates ``popped`` and ``cleared``, and ``memstore show --all``,
  ``replay`` and ``check`` account for them.

This module never imports the SDK: it is importable without it (``pip install
'memstore[agents]'`` for the SDK itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING, Any

from memstore.core.units import valid_input
from memstore.memory.store import MemoryStore
from memstore.render.input import item_message

if TYPE_CHECKING:
    from memstore.memory.session import SessionMemory


class MemstoreSession:
    """An Agents SDK session backed by one memstore session.

    Args:
        memory: The session handle (``store.session("chat-1", limits=..., summarizer=...,
            ltm_scopes=[...])``): its limits, estimator, summarizer and long-term scopes are
            what the agent's history is bounded and built with.
        session_settings: The SDK's ``SessionSettings``; its ``limit`` applies when
            ``get_items`` is called without one.
    """

    def __init__(self, memory: SessionMemory, *, session_settings: Any = None) -> None:
        self._memory: SessionMemory | None = memory
        self.session_id: str = memory.session_id
        self.session_settings = session_settings
        self._store: MemoryStore | None = None
        self._opening: tuple[str | os.PathLike[str], dict[str, Any]] | None = None
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(
        cls,
        session_id: str,
        url: str | os.PathLike[str],
        *,
        session_settings: Any = None,
        **session_options: Any,
    ) -> MemstoreSession:
        """A session on the database at ``url`` (a path or a database URL), opened on first
        use and owned by this object (:meth:`close` closes it).

        Args:
            session_id: The memstore session id.
            url: ``agent.db``, ``sqlite+aiosqlite:///agent.db``, ``postgresql+asyncpg://...``.
            session_settings: As for the constructor.
            session_options: Passed to :meth:`MemoryStore.session` (``limits``,
                ``estimator``, ``summarizer``, ``ltm_scopes``, ``ltm_budget``).
        """
        from memstore.core.validation import validate_session_id

        self = cls.__new__(cls)
        self._memory = None
        self.session_id = validate_session_id(session_id)
        self.session_settings = session_settings
        self._store = None
        self._opening = (url, session_options)
        self._lock = asyncio.Lock()
        self._loop = None
        return self

    async def memory(self) -> SessionMemory:
        """The memstore session handle (opening the database on first use).

        A database connection belongs to the event loop it was opened on; when a
        :meth:`from_url` session is used from another loop (two ``asyncio.run`` calls), it
        opens the database again there (the first loop's connections went with that loop).
        """
        loop = asyncio.get_running_loop()
        if self._opening is not None and self._loop is not loop:
            stale, self._memory, self._store, self._loop = self._store, None, None, loop
            self._lock = asyncio.Lock()
            if stale is not None:
                with contextlib.suppress(Exception):  # its loop is gone; nothing to flush
                    await stale.close()
        if self._memory is not None:
            return self._memory
        async with self._lock:
            if self._memory is None:
                assert self._opening is not None
                url, options = self._opening
                store = await MemoryStore.open(url)
                try:
                    self._memory = store.session(self.session_id, **options)
                except BaseException:
                    await store.close()
                    raise
                self._store = store
        return self._memory

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The bounded model input, oldest first; ``limit=N``: the newest N of it, less any
        call, output or reasoning item the cut separated from its unit (the API would refuse
        it).

        Args:
            limit: How many of the newest items; ``None`` takes the session settings'
                ``limit`` (all if unset); ``0`` or less gives ``[]``.
        """
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        if limit is not None and limit <= 0:
            return []
        items = await (await self.memory()).build_model_input()
        # A cut may split a call from its output: what it broke is left out, not sent.
        return items if limit is None else valid_input(items[-limit:])

    async def add_items(self, items: list[Any]) -> None:
        """Append one SDK turn's items in one transaction, then compact if needed.

        Raises:
            ValidationError: an item memstore cannot carry (nothing of the turn is written).
        """
        await (await self.memory()).add_items(items)

    async def pop_item(self) -> dict[str, Any] | None:
        """Take back the newest active item; return it as it was added (``None``: empty)."""
        item = await (await self.memory()).pop_item()
        return None if item is None else item_message(item)

    async def clear_session(self) -> None:
        """Empty working memory (items and summary), on the record: nothing is deleted."""
        await (await self.memory()).clear()

    async def close(self) -> None:
        """Close the database this object opened (:meth:`from_url`); otherwise a no-op."""
        if self._store is not None:
            store, self._store, self._memory = self._store, None, None
            await store.close()
