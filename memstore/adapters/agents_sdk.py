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

Unlike ``SQLiteSession.close()``, :meth:`MemstoreSession.close` is a coroutine and must be
awaited: it lets queued writes commit, then closes the database. A session dropped without
being closed still stops its database threads (nothing is left running), and a closed session
refuses further calls.

One session object may be used from several threads, each running its own event loop (the
SDK's ``run_sync`` does this). A SQLite store serves every loop (its connections live in
memstore's own threads); a PostgreSQL store's connections belong to one loop, so each loop
gets a store of its own, opened there and closed there.

This module never imports the SDK at import time: it is importable without it (``pip install
'.[agents]'`` in memstore's checkout for the SDK itself).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memstore import MemoryStore, SessionOptions
from memstore.core.units import valid_input
from memstore.errors import MemstoreError, SessionSettingsError, StorageError, ValidationError
from memstore.render.input import item_message

if TYPE_CHECKING:
    from memstore import SessionMemory

log = logging.getLogger("memstore")

CLOSED = "the session is closed"


def session_settings_of(value: Any) -> Any:
    """``value`` as the SDK's ``SessionSettings``, normalised as its own sessions do it: a
    dict becomes ``SessionSettings`` (unknown keys refused), ``None`` the defaults.

    Without the SDK installed, ``None`` stays ``None`` and anything else is kept as given.

    Raises:
        SessionSettingsError: the SDK refuses the settings (``field`` names them).
    """
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:
        return value
    if value is None:
        return SessionSettings()
    try:
        return coerce_session_settings(value)
    except (TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
        raise SessionSettingsError("session_settings", str(error)) from error


def _limit(value: Any) -> int | None:
    """``get_items``'s ``limit``: a whole number or ``None``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValidationError("limit", f"must be a whole number or None, got {value!r}")
    return value


@dataclass
class _Opened:
    store: MemoryStore
    memory: SessionMemory
    loop: asyncio.AbstractEventLoop


@dataclass
class _Stores:
    """The stores a :meth:`MemstoreSession.from_url` session opened, under one lock.

    Shared by the session and its finalizer (which must not hold the session itself).
    """

    guard: threading.Lock = field(default_factory=threading.Lock)
    shared: _Opened | None = None  # SQLite: one store serves every loop
    per_loop: dict[asyncio.AbstractEventLoop, _Opened] = field(default_factory=dict)
    opening: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = field(default_factory=dict)
    closed: bool = False

    def take_all(self) -> list[_Opened]:
        """Mark closed and hand over every store (to close them)."""
        with self.guard:
            self.closed = True
            opened = [*([self.shared] if self.shared else []), *self.per_loop.values()]
            self.shared, self.per_loop = None, {}
            return opened

    def release(self) -> None:
        """Stop every store's threads without waiting (dropped unclosed, or no loop to await
        on): queued writes still commit, nothing is left running."""
        for opened in self.take_all():
            opened.store.database.release()


class MemstoreSession:
    """An Agents SDK session backed by one memstore session.

    Args:
        memory: The session handle (``store.session("chat-1", limits=..., summarizer=...,
            ltm_scopes=[...], scope="user:alice")``): its limits, estimator, summarizer,
            long-term scopes and scope are what the agent's history is bounded and built
            with. The store stays the caller's: :meth:`close` does not close it.
        session_settings: The SDK's ``SessionSettings`` (or a dict of its fields); its
            ``limit`` applies when ``get_items`` is called without one.

    Raises:
        SessionSettingsError: ``session_settings`` has a key or value the SDK refuses.
    """

    def __init__(self, memory: SessionMemory, *, session_settings: Any = None) -> None:
        self._memory: SessionMemory | None = memory
        self.session_id: str = memory.session_id
        self.session_settings = session_settings_of(session_settings)
        self._opening: tuple[str | os.PathLike[str], SessionOptions] | None = None
        self._stores = _Stores()
        self._release = weakref.finalize(self, self._stores.release)

    @classmethod
    def from_url(
        cls,
        session_id: str,
        url: str | os.PathLike[str],
        *,
        session_settings: Any = None,
        options: SessionOptions | None = None,
        **session_options: Any,
    ) -> MemstoreSession:
        """A session on the database at ``url`` (a path or a database URL), opened on first
        use and owned by this object (:meth:`close` closes it).

        Args:
            session_id: The memstore session id.
            url: ``agent.db``, ``sqlite+aiosqlite:///agent.db``, ``postgresql+asyncpg://...``.
            session_settings: As for the constructor.
            options: What the memstore handle is opened with
                (:class:`~memstore.SessionOptions`), as for :meth:`MemoryStore.session`.
                Its ``scope`` is the long-term scope the session belongs to
                (``user:alice``): the sessions of one scope share recall
                (``recall_budget``, ``build_model_input(recall=..)`` on :meth:`memory`) and
                consolidate into that scope's long-term memory (``consolidate=False``: only
                when ``memory.consolidate()`` is called).
            session_options: Any of those options as keywords (``scope``, ``limits``,
                ``summarizer``, ...), replacing the ones ``options`` holds.

        Raises:
            ValidationError: a bad session id or ``scope`` (checked here, before anything
                is opened or written).
        """
        chosen = SessionOptions.merged(options, session_options)
        if chosen.scope is not None:
            from memstore.core.ltm_entries import validate_scope

            chosen = replace(chosen, scope=validate_scope(chosen.scope))
        self = cls.__new__(cls)
        self._open_on_use(session_id, url, session_settings, chosen)
        return self

    def _open_on_use(
        self,
        session_id: str,
        url: str | os.PathLike[str],
        session_settings: Any,
        options: SessionOptions,
    ) -> None:
        from memstore.core.validation import validate_session_id

        self._memory = None
        self.session_id = validate_session_id(session_id)
        self.session_settings = session_settings_of(session_settings)
        # One writer, whichever loop it runs on: every store it opens records the same handle.
        self._opening = (url, options.with_handle())
        self._stores = _Stores()
        self._release = weakref.finalize(self, self._stores.release)

    async def memory(self) -> SessionMemory:
        """The memstore session handle (opening the database on first use).

        Raises:
            StorageError: the session is closed.
        """
        if self._opening is None:
            if self._stores.closed or self._memory is None:
                raise StorageError(CLOSED)
            return self._memory
        loop = asyncio.get_running_loop()
        stores = self._stores
        while True:
            with stores.guard:
                if stores.closed:
                    raise StorageError(CLOSED)
                opened = stores.shared or stores.per_loop.get(loop)
                if opened is not None:
                    return opened.memory
                waiting = stores.opening.get(loop)
                if waiting is None:
                    stores.opening[loop] = loop.create_future()
                    break
            await asyncio.shield(waiting)  # another task of this loop is opening it
        try:
            return await self._open_here(loop)
        finally:
            with stores.guard:
                done = stores.opening.pop(loop)
            done.set_result(None)

    async def _open_here(self, loop: asyncio.AbstractEventLoop) -> SessionMemory:
        assert self._opening is not None
        url, options = self._opening
        store = await MemoryStore.open(url)
        try:
            opened = _Opened(store, store.session(self.session_id, options=options), loop)
        except BaseException:
            await store.close()
            raise
        stores = self._stores
        with stores.guard:
            spare = None
            if stores.closed:
                spare = opened
            elif store.database.dialect != "sqlite":
                stores.per_loop[loop] = opened  # its connections belong to this loop
            elif stores.shared is None:
                stores.shared = opened
            else:  # another thread opened one first: use that, close ours (ours alone)
                spare, opened = opened, stores.shared
        if spare is not None:
            await spare.store.close()
            if spare is opened:
                raise StorageError(CLOSED)
        return opened.memory

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The bounded model input, oldest first; ``limit=N``: the newest N of it, less any
        call, output or reasoning item the cut separated from its unit (the API would refuse
        it).

        Args:
            limit: How many of the newest items; ``None`` takes the session settings'
                ``limit`` (all if unset); ``0`` or less gives ``[]``.

        Raises:
            ValidationError: ``limit`` is not a whole number.
            StorageError: the session is closed.
        """
        limit = _limit(limit)
        if limit is None and self.session_settings is not None:
            limit = _limit(getattr(self.session_settings, "limit", None))
        memory = await self.memory()
        if limit is not None and limit <= 0:
            return []
        items = await memory.build_model_input()
        # A cut may split a call from its output: what it broke is left out, not sent.
        return items if limit is None else valid_input(items[-limit:])

    async def add_items(self, items: list[Any]) -> None:
        """Append one SDK turn's items in one transaction, then compact if needed.

        Raises:
            ValidationError: an item the Responses API would refuse (nothing of the turn is
                written).
            StorageError: the session is closed.
        """
        await (await self.memory()).add_items(items)

    async def pop_item(self) -> dict[str, Any] | None:
        """Take back the newest active item this session added; return it as it was added
        (``None``: it has none). Another process's items are never taken back."""
        item = await (await self.memory()).pop_item()
        return None if item is None else item_message(item)

    async def clear_session(self) -> None:
        """Empty working memory (items and summary), on the record: nothing is deleted."""
        await (await self.memory()).clear()

    async def _end_pending(self, here: asyncio.AbstractEventLoop) -> None:
        """The calls this session added wait no more (its runs are over)."""
        memory = self._memory
        if self._opening is not None:
            with self._stores.guard:
                opened = self._stores.shared or self._stores.per_loop.get(here)
            memory = None if opened is None else opened.memory
        if memory is not None and not self._stores.closed:
            try:
                await memory.end_pending()
            except MemstoreError as error:  # closing goes on: the deadline still ends them
                log.warning(
                    "memstore: could not end %s's pending calls (%s)", self.session_id, error
                )

    async def close(self) -> None:
        """Let queued writes commit, then close what this object opened; a coroutine, to be
        awaited (``SQLiteSession.close()`` is not). Later calls raise :class:`StorageError`.

        A store passed to the constructor stays open (it is the caller's). Stores opened on
        another thread's loop are closed on that loop while it runs; one whose loop has
        ended has only its threads stopped (its loop took its connections with it).
        """
        here = asyncio.get_running_loop()
        self._release.detach()
        await self._end_pending(here)
        for opened in self._stores.take_all():
            if opened.loop is here or opened.store.database.dialect == "sqlite":
                await opened.store.close()
            elif not opened.loop.is_closed() and opened.loop.is_running():
                done = asyncio.run_coroutine_threadsafe(opened.store.close(), opened.loop)
                await asyncio.wrap_future(done)
            else:
                opened.store.database.release()
