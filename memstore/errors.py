"""The memstore error tree.

Every failure memstore expects is a :class:`MemstoreError`; callers can catch the root or a
branch. Context travels as attributes (``field``, ``session_id``, ``expected``, ``actual``)
so that programs never parse messages. Builtin bases are added where they help callers
(``except ValueError`` still catches a validation error)::

    MemstoreError
    ├── ValidationError (ValueError)          bad input; .field names it
    │   ├── KindRoleMismatchError             kind and role disagree
    │   └── ConfigurationError                invalid limits or settings
    │       ├── ModelConfigurationError       no API key (or model) for the model side
    │       └── SessionSettingsError (TypeError)  Agents SDK session_settings it does not know
    ├── NotFoundError (LookupError)
    │   ├── SessionNotFoundError
    │   └── EntryNotFoundError                no such long-term entry (CLI get/delete)
    ├── ConflictError                         a compare-and-set lost; .expected / .actual
    │   ├── CompactionConflictError           another compaction committed first
    │   │   └── LeaseLostError                this worker's lease was taken over (fenced off)
    │   ├── LeaseHeldError                    another worker holds the compaction lease
    │   ├── IdempotencyConflictError          same key, different content
    │   ├── EstimatorMismatchError            session counted by another estimator
    │   ├── EmbedderMismatchError             an embedder name stored with other dimensions
    │   ├── VersionConflictError              long-term entry at another version
    │   ├── SessionExistsError                a fork's new session id is taken
    │   ├── ForkedHistoryError                purge refused: forks hold copies of the history
    │   └── ConversationConflictError         a stored conversation changed since it was read
    ├── ModelError                            the model side failed (agent, chat, summaries)
    │   ├── ModelCallError                    HTTP error, timeout, unreachable or malformed reply
    │   ├── EmbeddingError                    an embedder failed or returned unusable vectors
    │   └── ToolLoopError                     the model kept calling tools past the round limit
    └── StorageError                          the database refused or failed
        ├── ConnectionFailedError             the database server could not be reached or refused us
        ├── CorruptDatabaseError              the file is damaged; the store no longer writes to it
        ├── NotADatabaseError                 the file is not an SQLite database (untouched)
        ├── DatabaseMissingError (FileNotFoundError)  opened with create=False
        ├── ReadOnlyDatabaseError
        ├── StorageFullError
        ├── LockTimeoutError (TimeoutError)   busy timeout elapsed
        └── SchemaError
            ├── SchemaTooNewError             written by a newer memstore
            └── SchemaOutdatedError           older schema and upgrades were disabled
"""

from __future__ import annotations

from typing import Any


class MemstoreError(Exception):
    """Root of every error memstore raises on purpose."""


class ValidationError(MemstoreError, ValueError):
    """An argument was rejected before anything was written.

    Attributes:
        field: The name of the offending argument or setting.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class KindRoleMismatchError(ValidationError):
    """The item's kind does not allow its role."""

    def __init__(self, kind: str, role: str, allowed: tuple[str, ...]) -> None:
        super().__init__(
            "role",
            f"kind {kind} requires role {' or '.join(allowed)}, got {role!r}",
        )
        self.kind = kind
        self.role = role


class ConfigurationError(ValidationError):
    """A limit or setting is invalid; ``field`` names the setting."""


class ModelConfigurationError(ConfigurationError):
    """The model side is not configured: ``field`` names the variable (``OPENAI_API_KEY``)."""


class SessionSettingsError(ConfigurationError, TypeError):
    """An Agents SDK ``session_settings`` the SDK refuses (an unknown key, a wrong type).

    A ``TypeError`` too, as the SDK's own sessions raise for the same input.
    """


class NotFoundError(MemstoreError, LookupError):
    """Something that was asked for does not exist."""


class SessionNotFoundError(NotFoundError):
    """No session with this id has been written yet.

    Attributes:
        field: The argument that named it, when one did (``session_id`` of a fork).
    """

    def __init__(self, session_id: str, *, field: str | None = None) -> None:
        prefix = "" if field is None else f"{field}: "
        super().__init__(f"{prefix}session {session_id!r} does not exist")
        self.session_id = session_id
        self.field = field


class EntryNotFoundError(NotFoundError):
    """No live long-term entry has this key in this scope (never written, deleted or expired)."""

    def __init__(self, scope: str, key: str) -> None:
        super().__init__(f"no long-term entry {key!r} in scope {scope!r}")
        self.scope = scope
        self.key = key


class ConflictError(MemstoreError):
    """A compare-and-set found another version than it expected; nothing was written."""

    def __init__(self, message: str, *, expected: Any = None, actual: Any = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class CompactionConflictError(ConflictError):
    """Another compaction committed after this one took its snapshot (or its lease expired)."""

    def __init__(self, session_id: str, *, expected: Any = None, actual: Any = None) -> None:
        super().__init__(
            f"session {session_id!r}: compaction lost the race "
            f"(expected compaction count {expected}, found {actual})",
            expected=expected,
            actual=actual,
        )
        self.session_id = session_id


class LeaseLostError(CompactionConflictError):
    """This worker's compaction lease was taken over (it paused, or its heartbeats failed,
    past the lease): its compaction is fenced off and wrote nothing.

    Attributes:
        taken_by: The worker that holds the lease now (``None``: nobody; it was released).
        token: The lease's fencing token now.
    """

    def __init__(self, session_id: str, *, taken_by: str | None, token: int | None) -> None:
        now = "" if token is None else f" (now held by {taken_by or 'nobody'}, token {token})"
        ConflictError.__init__(
            self,
            f"session {session_id!r}: this worker's compaction lease was taken over{now}, or "
            "could not be renewed in time; nothing was written",
        )
        self.session_id = session_id
        self.taken_by = taken_by
        self.token = token


class LeaseHeldError(ConflictError):
    """Another worker holds the session's compaction lease: it is compacting right now.

    Attributes:
        holder: That worker (``host:pid:nonce``).
        host, pid: Its host and process id, when known.
        expires_in: Seconds its lease has left by the database's clock (it renews it while
            it works; one that died stops renewing, or is replaced at once on its own host).
    """

    def __init__(
        self, session_id: str, *, holder: str, host: str | None, pid: int | None,
        expires_in: float,
    ) -> None:  # fmt: skip
        super().__init__(
            f"session {session_id!r}: another worker ({holder}) holds the compaction lease, "
            f"for {max(expires_in, 0):.1f}s more unless it renews it; it is compacting now"
        )
        self.session_id = session_id
        self.holder, self.host, self.pid, self.expires_in = holder, host, pid, expires_in


class IdempotencyConflictError(ConflictError):
    """An idempotency key was reused for different content."""

    def __init__(self, session_id: str, key: str) -> None:
        super().__init__(
            f"idempotency_key: {key!r} was already used in session {session_id!r} "
            "for different content"
        )
        self.session_id = session_id
        self.field = "idempotency_key"


class EstimatorMismatchError(ConflictError):
    """The session's tokens were counted by another estimator; mixing counts is refused."""

    def __init__(self, session_id: str, *, expected: str, actual: str) -> None:
        super().__init__(
            f"estimator: session {session_id!r} was counted with {expected!r}, "
            f"this handle uses {actual!r}; open it with the same estimator",
            expected=expected,
            actual=actual,
        )
        self.session_id = session_id
        self.field = "estimator"


class EmbedderMismatchError(ConflictError):
    """Vectors of this embedder name are stored with another dimension count: one name,
    one vector size (give a new model or size a new name)."""

    def __init__(self, embedder: str, *, expected: int, actual: int) -> None:
        super().__init__(
            f"embedder: {embedder!r} stored vectors of {expected} dimensions here, this one "
            f"has {actual}; give a different model or size a name of its own",
            expected=expected,
            actual=actual,
        )
        self.embedder = embedder
        self.field = "embedder"


class VersionConflictError(ConflictError):
    """A long-term entry's compare-and-set found another version; nothing was written.

    ``expected`` is the version the caller gave, ``actual`` the entry's live version
    (0: there is no live entry: never written, deleted or expired).
    """

    def __init__(self, scope: str, key: str, *, expected: int, actual: int) -> None:
        found = "no live entry (version 0)" if actual == 0 else f"version {actual}"
        super().__init__(
            f"expected_version: long-term entry {key!r} in scope {scope!r} is at {found}, "
            f"not version {expected}",
            expected=expected,
            actual=actual,
        )
        self.scope = scope
        self.key = key
        self.field = "expected_version"


class SessionExistsError(ConflictError):
    """A session with this id exists already (a fork must start a new one)."""

    def __init__(self, session_id: str, *, field: str = "new_session_id") -> None:
        super().__init__(f"{field}: session {session_id!r} already exists")
        self.session_id = session_id
        self.field = field


class ForkedHistoryError(ConflictError):
    """Purging the session would leave forks holding copies of its history; nothing was
    deleted.

    Attributes:
        forks: Those forks (and theirs), nearest first.
    """

    def __init__(self, session_id: str, forks: tuple[str, ...]) -> None:
        super().__init__(
            f"with_forks: session {session_id!r} has forks that hold copies of its history "
            f"({', '.join(forks)}); purge them first, or purge with its forks "
            "(`memstore purge --with-forks`)"
        )
        self.session_id = session_id
        self.forks = forks
        self.field = "with_forks"


class ConversationConflictError(ConflictError):
    """A stored conversation (pydantic-ai's conversation store) was saved, deleted or created
    since it was read, or a write names an entry stored nowhere; nothing was written.

    Attributes:
        conversation_id: The conversation.
        reason: What was found instead of what the write expected.
    """

    def __init__(self, conversation_id: str, reason: str) -> None:
        super().__init__(f"conversation {conversation_id[:80]!r}: {reason}")
        self.conversation_id = conversation_id
        self.reason = reason


class ModelError(MemstoreError):
    """A call to a model, or the agent loop around it, failed."""


class ModelCallError(ModelError):
    """The model server failed: an HTTP error, a timeout, no connection or a malformed reply.

    Attributes:
        status_code: The HTTP status, when the server answered with one.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class EmbeddingError(ModelError):
    """An embedder failed, or returned something other than one vector of its dimensions per
    text. A search falls back to full text; the background embedding records it."""


class ToolLoopError(ModelError):
    """The model still asked for tools after the agent's last allowed round."""

    def __init__(self, rounds: int) -> None:
        super().__init__(f"the model still called tools after {rounds} rounds; turn abandoned")
        self.rounds = rounds


class StorageError(MemstoreError):
    """The database could not do what was asked."""


class ConnectionFailedError(StorageError):
    """The database server could not be reached, or refused the connection.

    The message names what failed (authentication for a user, a missing database, nothing
    listening on host:port), never a password.

    Attributes:
        host, port, database, user: Where memstore tried to connect, and as whom.
    """

    def __init__(
        self, message: str, *, host: str | None, port: int | None, database: str | None,
        user: str | None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.host, self.port, self.database, self.user = host, port, database, user


class CorruptDatabaseError(StorageError):
    """The database file is damaged (SQLite found it malformed).

    Once a store meets this, it refuses every later write until it is reopened: writing to a
    damaged b-tree can spread the damage. Reads may go on, to inspect and export.
    """

    #: What an operator can do about it, appended to every message.
    ADVICE = (
        "run `memstore check` to see the damage, and save what is readable "
        "(`memstore export SESSION`, or `sqlite3 FILE .recover`) into a new database"
    )

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}; {self.ADVICE}")


class NotADatabaseError(StorageError):
    """The target file exists but is not an SQLite database; it was not modified."""


class DatabaseMissingError(StorageError, FileNotFoundError):
    """The database file does not exist and the store was opened with ``create=False``."""


class ReadOnlyDatabaseError(StorageError):
    """The database (or its directory) cannot be written."""


class StorageFullError(StorageError):
    """The disk or database is full; the transaction was rolled back."""


class LockTimeoutError(StorageError, TimeoutError):
    """Another writer held the lock for longer than the busy timeout."""


class SchemaError(StorageError):
    """The database schema does not match this version of memstore."""


class SchemaTooNewError(SchemaError):
    """The database was migrated by a newer memstore; this one refuses to touch it."""


class SchemaOutdatedError(SchemaError):
    """The schema is older than the code and the store was opened with ``upgrade=False``."""
