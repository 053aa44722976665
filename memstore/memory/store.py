"""MemoryStore: opening a database (creating or upgrading it) and handing out sessions.

The per-session work (append, compaction, model input) lives in :mod:`memstore.memory.session`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import uuid
from types import TracebackType
from typing import TYPE_CHECKING

from memstore.config import Settings
from memstore.core.records import SessionHistory, SessionInfo
from memstore.core.validation import validate_session_id
from memstore.db import Database, open_database, reads
from memstore.db.migrate import ensure_schema
from memstore.errors import CorruptDatabaseError, SessionNotFoundError, StorageFullError
from memstore.memory.history_actions import StoreHistory, check_export
from memstore.memory.opening import Opening, OpenOptions
from memstore.memory.options import SessionOptions
from memstore.memory.parts import delegate
from memstore.memory.schema import schema_status
from memstore.memory.store_search import StoreSearch

# What a method needs only when it runs is imported there: a CLI command (``memstore show``)
# loads the store without the compaction machinery, replay, audits or long-term memory.
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Unpack

    from memstore.core.embedder import Embedder
    from memstore.core.input_counts import CountFit
    from memstore.core.invariants import Violation
    from memstore.core.tokens import TokenEstimator
    from memstore.db.engine import AsyncEngine
    from memstore.db.lease import LeaseHolder
    from memstore.memory.conversations import Conversations
    from memstore.memory.embedding import EmbeddingService
    from memstore.memory.long_term import LongTermMemory
    from memstore.memory.options import SessionFields
    from memstore.memory.session import SessionMemory


class MemoryStore:
    """A memstore database: many sessions, shared safely by many processes.

    Open with ``store = await MemoryStore.open(url_or_path)`` or
    ``async with MemoryStore.open(url_or_path) as store:``.
    """

    def __init__(
        self, database: Database, settings: Settings, embedding: EmbeddingService | None = None
    ) -> None:
        self._db = database
        self.settings = settings
        #: The embedder and its background run (``None``: full-text search alone).
        self.embedding = embedding
        from memstore.memory.worker import Worker

        self.worker = Worker(socket.gethostname(), uuid.uuid4().hex[:8])
        # The store's parts: their methods are the store's (below).
        self._history = StoreHistory(database, settings, embedding, lambda: self.ltm)
        self._search = StoreSearch(database, embedding)

    export_session = delegate("_history", StoreHistory.export_session)
    import_session = delegate("_history", StoreHistory.import_session)
    prune = delegate("_history", StoreHistory.prune)
    purge = delegate("_history", StoreHistory.purge)
    derived_entries = delegate("_history", StoreHistory.derived_entries)
    search = delegate("_search", StoreSearch.search)
    embedding_status = delegate("_search", StoreSearch.embedding_status)
    embed_pending = delegate("_search", StoreSearch.embed_pending)
    index_lag = delegate("_search", StoreSearch.index_lag)
    # Before a store is open: an export checked before the database is touched, and a
    # database's schema read (or upgraded) without opening a store on it.
    check_export = staticmethod(check_export)
    schema_status = staticmethod(schema_status)

    @functools.cached_property
    def ltm(self) -> LongTermMemory:
        """Long-term memory: scoped, versioned entries shared by every session."""
        from memstore.memory.long_term import LongTermMemory

        return LongTermMemory(self._db, self.settings, embedding=self.embedding)

    @functools.cached_property
    def conversations(self) -> Conversations:
        """pydantic-ai conversations stored here (:mod:`memstore.memory.conversations`)."""
        from memstore.memory.conversations import Conversations

        return Conversations(self._db)

    @staticmethod
    def open(
        url_or_path: str | os.PathLike[str] | None = None,
        *,
        engine: AsyncEngine | None = None,
        upgrade: bool = True,
        create: bool = True,
        verify: bool = False,
        read_only: bool = False,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
    ) -> Opening[MemoryStore]:
        """Open (creating or upgrading) a store.

        Args:
            url_or_path: ``sqlite+aiosqlite:///agent.db``, ``postgresql+asyncpg://...`` or a
                plain file path (``memstore.db`` when neither this nor ``engine`` is given).
            engine: Your own SQLAlchemy ``AsyncEngine``, never disposed (docs/operations.md).
            upgrade: Upgrade an older schema to head; if ``False``, refuse it instead.
            create: Create a missing SQLite file; if ``False``, raise DatabaseMissingError.
            verify: Run SQLite's ``quick_check`` first and refuse a damaged file (a start-up
                check that reads the whole file, about 2 s per GiB from the page cache; see
                docs/operations.md); ``memstore check`` is the full audit. Not on PostgreSQL.
            read_only: Every write raises :class:`ReadOnlyDatabaseError`, a SQLite file is
                opened read-only (its WAL untouched: a read-only copy or a mounted backup can
                be inspected), and an outdated schema is refused instead of upgraded.
            settings: Store-wide settings; :meth:`Settings.from_env` by default.
            embedder: Also search by meaning: anything with ``name``, ``dimensions`` and
                ``async embed(texts)`` (:class:`memstore.Embedder`). Searches and recall then
                rank hybrid; vectors are made in the background, never on the append path
                (docs/recall.md).

        Returns:
            An awaitable that is also an async context manager (closing the store on exit).

        Raises:
            NotADatabaseError: the file exists and is not an SQLite database (untouched).
            CorruptDatabaseError: ``verify`` found the file damaged (untouched).
            SchemaTooNewError: a newer memstore wrote this database.
            SchemaOutdatedError: the schema is older and ``upgrade`` is ``False``.
            ValidationError: ``embedder`` lacks a member of the protocol (``embedder``).
            EmbedderMismatchError: vectors of the embedder's name are stored here with
                another dimension count.
        """
        if embedder is not None:
            from memstore.core.embedder import check_embedder

            check_embedder(embedder)
        options = OpenOptions(
            url_or_path, engine, upgrade, create, verify, read_only, settings, embedder
        )
        return Opening(functools.partial(MemoryStore._open, options))

    @classmethod
    async def _open(cls, options: OpenOptions) -> MemoryStore:
        settings = options.settings or Settings.from_env()
        # Opening checks and prepares the file (header, permissions, WAL): disk I/O, so not
        # on the event loop.
        database = await asyncio.to_thread(
            open_database,
            options.url_or_path,
            settings,
            create=options.create,
            read_only=options.read_only,
            engine=options.engine,
        )
        try:
            if options.verify:
                from memstore.db import audit

                damage = await audit.quick_check(database)
                if damage:
                    raise CorruptDatabaseError(f"quick_check found the file damaged ({damage[0]})")
            await ensure_schema(database, upgrade=options.upgrade and not options.read_only)
            embedding = None
            if options.embedder is not None:
                from memstore.memory.embedding import EmbeddingService

                embedding = EmbeddingService(
                    database, options.embedder, read_only=options.read_only
                )
                await embedding.check_dimensions()
        except BaseException as error:
            await database.close()
            if isinstance(error, StorageFullError):  # not a lock: another may be creating it
                await database.remove_created_file()  # no room to finish it: leave nothing
            raise
        return cls(database, settings, embedding)

    @property
    def database(self) -> Database:
        """The database layer (for the CLI and tools; not needed by agent code)."""
        return self._db

    @property
    def worker_id(self) -> str:
        """This worker's identity in leases: ``host:pid:nonce``."""
        return self.worker.id

    def session(
        self,
        session_id: str,
        *,
        options: SessionOptions | None = None,
        **fields: Unpack[SessionFields],
    ) -> SessionMemory:
        """A handle on one session; the session is created by its first append.

        Args:
            session_id: 1-128 characters of letters, digits and ``._:@-`` (no ``/``).
            options: What the handle is opened with (:class:`~memstore.SessionOptions`:
                limits, estimator, summarizer, extractor, ltm_scopes, ltm_budget,
                recall_budget, handle, scope, consolidate); the defaults by default.
            fields: Any of those options as keywords, replacing the ones ``options`` holds.

        Raises:
            ValidationError: a bad session id, scope or handle; ``ltm_budget`` or
                ``recall_budget`` not in 1..hard-1.
        """
        from memstore.memory.session import SessionMemory

        return SessionMemory(
            validate_session_id(session_id),
            SessionOptions.merged(options, fields),
            database=self._db,
            settings=self.settings,
            worker=self.worker,
            long_term=lambda: self.ltm,
            embedding=self.embedding,
        )

    async def attach(
        self,
        session_id: str,
        *,
        create: bool = False,
        options: SessionOptions | None = None,
        **fields: Unpack[SessionFields],
    ) -> SessionMemory:
        """A handle on an existing session, counted with the estimator and limits it
        recorded, in the scope it recorded; or, with ``create``, a new session's.

        This is what operator tools use (they must count the way the session was counted),
        and the one call that attaches to a session or creates it. The options are as for
        :meth:`session`; on an existing session its recorded ``limits``, ``estimator`` and
        ``scope`` take the place of the given ones, which are for a session this call
        creates (a session is counted one way for good, and its scope is recorded once).

        Args:
            session_id: The session.
            create: A missing session gets a handle as :meth:`session` gives (created by
                its first append) instead of :class:`SessionNotFoundError`.
            options: What the handle is opened with (:class:`~memstore.SessionOptions`).
            fields: Any option as a keyword, replacing the one ``options`` holds.

        Raises:
            SessionNotFoundError: no such session, and not ``create``.
            ValidationError: a bad session id; a ``scope`` given for a session recorded in
                another scope or in none (``scope``: nothing is written).
        """
        chosen = SessionOptions.merged(options, fields)
        try:
            info = await self.session_info(session_id)
        except SessionNotFoundError:
            if not create:
                raise
            return self.session(session_id, options=chosen)
        return self.session(info.id, options=chosen.of_record(info))

    async def session_info(self, session_id: str) -> SessionInfo:
        """The header of one session (counters, totals, limits).

        Raises:
            SessionNotFoundError: no such session.
        """
        return await reads.session_info(self._db, validate_session_id(session_id))

    async def preview(
        self,
        session_id: str,
        scopes: Sequence[str] = (),
        *,
        estimator: TokenEstimator | None = None,
    ) -> SessionMemory:
        """A handle whose ``build_model_input`` is the input ``session_id`` gets with
        ``scopes``, the session existing or not (``memstore input``); it writes nothing.

        Args:
            session_id: The session, existing or not.
            scopes: Long-term scopes; the first is the scope of a session that records none
                (docs/long-term-memory.md).
            estimator: How a session that does not exist yet would be counted.

        Raises:
            SessionNotFoundError: the session does not exist and no scope says what it would
                be.
            ValidationError: a bad session id or scope.
        """
        from memstore.memory.preview import preview_options

        try:
            info: SessionInfo | None = await self.session_info(session_id)
        except SessionNotFoundError:
            info = None
        chosen = preview_options(session_id, info, scopes, estimator=estimator)
        return self.session(session_id, options=chosen)

    async def lease_holder(self, session_id: str) -> LeaseHolder | None:
        """Who holds the session's compaction lease now (``None``: nobody).

        A holder whose lease has expired but was never released (it died or stalled) is
        still returned, with ``expires_in <= 0``: the next compaction takes it over.
        """
        from memstore.db.lease import lease_holder

        return await lease_holder(self._db, validate_session_id(session_id))

    async def sessions(self) -> list[SessionInfo]:
        """Every session's header, most recently updated first."""
        return await reads.session_infos(self._db)

    async def check(self, session_id: str | None = None) -> list[Violation]:
        """Verify the ledger invariants (:mod:`memstore.core.invariants`) without writing.

        Args:
            session_id: One session, or every session when ``None`` (which also runs
                SQLite's ``integrity_check`` and ``foreign_key_check``).

        Returns:
            Every violation found; empty when the database is sound.

        Raises:
            SessionNotFoundError: ``session_id`` does not exist.
        """
        from memstore.core.invariants import Violation, check_ledger
        from memstore.db import audit

        found: list[Violation] = []
        if session_id is None:
            ids = await audit.session_ids(self._db)
            found += [
                Violation("*", "database", p) for p in await audit.integrity_problems(self._db)
            ]
        else:
            ids = [validate_session_id(session_id)]
        one = None if session_id is None else ids[0]
        found += [
            Violation(one or "*", "search index", p)
            for p in await audit.index_problems(self._db, one)
        ]
        for sid in ids:
            ledger = await audit.load_ledger(self._db, sid)
            if ledger is None:
                raise SessionNotFoundError(sid)
            found += check_ledger(ledger)
        return found

    async def history(self, session_id: str) -> SessionHistory:
        """Everything recorded about a session (for replay and audits).

        Raises:
            SessionNotFoundError: no such session.
        """
        from memstore.db.history import load_history

        return await load_history(self._db, validate_session_id(session_id))

    async def fork(
        self,
        session_id: str,
        new_session_id: str,
        *,
        at: int | None = None,
        options: SessionOptions | None = None,
        **fields: Unpack[SessionFields],
    ) -> SessionMemory:
        """A new session that starts as ``session_id`` was at version ``at`` (the latest by
        default): :func:`memstore.memory.branches.fork_ledger`. Returns its handle, as
        :meth:`attach` gives (``options``, ``fields``: its ``summarizer``, ``ltm_scopes``,
        ...)."""
        from memstore.memory.branches import fork_ledger

        info = await fork_ledger(self._db, session_id, new_session_id, at)
        chosen = SessionOptions.merged(options, fields)
        return self.session(info.id, options=chosen.of_record(info))

    async def forks(self, session_id: str) -> list[str]:
        """The session's forks, and theirs, nearest first."""
        from memstore.memory.branches import forks_of

        return await forks_of(self._db, session_id)

    async def input_counts(self, session_id: str) -> CountFit | None:
        """How memstore's counts of an agent's requests compared with the model's."""
        from memstore.memory.branches import count_fit

        return await count_fit(self._db, session_id)

    async def close(self) -> None:
        """Stop the background embedding, if any, and close the store's connections."""
        if self.embedding is not None:
            await self.embedding.close()
        await self._db.close()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
