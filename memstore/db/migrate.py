"""Schema versions: find the migrations, read the database's revision, upgrade or refuse.

The migrations live in the repository's top-level ``migrations/`` folder; the wheel carries
them as the ``memstore._migrations`` package (see ``pyproject.toml``), so a plain
``pip install`` can create and upgrade databases without the checkout.

Opening a store must stay cheap (every CLI command and every worker start does it), so the
common case, a database already at :data:`SCHEMA_HEAD`, is one ``SELECT`` and never imports
Alembic; Alembic and its script directory are loaded only to upgrade or to refuse.

Many processes may open one new database at once. One of them runs the migrations, holding
the write lock; the others wait for the schema, not just for the lock: a wait for the lock
ends at the busy timeout (sized for one write), and creating the schema on a loaded machine
can outlast it several times over. So an opener that times out reads the revision again and,
while the schema is not at head yet, waits again, up to :data:`SCHEMA_WAIT_S`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, text

from memstore.db.engine import Database
from memstore.errors import LockTimeoutError, SchemaOutdatedError, SchemaTooNewError, StorageError

if TYPE_CHECKING:
    from alembic.config import Config

#: The newest revision in migrations/versions (a test checks it against Alembic's own view).
SCHEMA_HEAD = "0016"
#: How long an opener waits, at most, for another process to finish creating or upgrading the
#: schema (each wait for the lock itself ends at the busy timeout). Creating a new database's
#: schema takes well under a second on an idle machine; a migration that rewrites a large
#: database can take longer: run those with ``memstore db upgrade`` (docs/operations.md).
SCHEMA_WAIT_S = 120.0


def migrations_dir() -> Path:
    """The Alembic script directory: the installed package, else the source checkout's."""
    spec = importlib.util.find_spec("memstore._migrations")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").is_file():
        return checkout
    raise StorageError("memstore's migrations are missing from this installation")


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at our migrations (and, if given, at ``connection``)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this code knows, as Alembic reads it from the scripts."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations folder has no revisions"
    return head


def too_new(current: str, head: str) -> str:
    """What to do about a schema a newer memstore wrote (``db upgrade`` and ``db current``
    say the same)."""
    return (
        f"the database schema ({current}) is newer than this memstore ({head}); "
        "upgrade memstore to use it"
    )


def known_revision(revision: str | None) -> bool:
    """Whether this code's migrations hold ``revision`` (``None``, an empty database: yes);
    an unknown one was written by a newer memstore."""
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    if revision is None:
        return True
    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(connection: Connection) -> str | None:
    """The database's revision, ``None`` for an empty database."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def _check_and_upgrade(connection: Connection, upgrade: bool) -> str | None:
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    current = current_revision(connection)
    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    if current == head:
        return None
    if current is not None:
        try:
            script.get_revision(current)
        except CommandError:
            raise SchemaTooNewError(too_new(current, str(head))) from None
    if not upgrade:
        raise SchemaOutdatedError(
            f"the database schema ({current or 'empty'}) is older than this memstore ({head}); "
            "run `memstore db upgrade`"
        )
    command.upgrade(alembic_config(connection), "head")
    return head


async def ensure_schema(database: Database, *, upgrade: bool = True) -> str | None:
    """Bring the schema to head, or refuse (newer schema, or ``upgrade=False``).

    The revision is first read without locking; only when an upgrade is needed is the write
    lock taken (and the revision read again under it), so concurrent openers of a new
    database run the migrations once, and the others wait for the schema (module docstring).

    Returns:
        The revision upgraded to, or ``None`` when the schema was already at head.

    Raises:
        LockTimeoutError: the schema was still not at head after :data:`SCHEMA_WAIT_S`, and
            the write lock still taken.
    """
    if await _stamped_revision(database) == SCHEMA_HEAD:
        return None
    if not upgrade:  # only to refuse, with the reason: a read does (a read-only store too)
        return await database.run_read(partial(_check_and_upgrade, upgrade=False))

    def check_and_upgrade(conn: Connection) -> str | None:
        if conn.dialect.name == "postgresql":
            # Concurrent first opens would race on CREATE TABLE; serialize them.
            conn.execute(text("SELECT pg_advisory_xact_lock(7243520190)"))
        return _check_and_upgrade(conn, upgrade)

    # Alembic and the scripts are loaded before the lock is taken, not while holding it:
    # loading them takes longer than running every migration of a new database.
    await asyncio.to_thread(head_revision)
    deadline = time.monotonic() + SCHEMA_WAIT_S
    while True:
        try:
            return await database.run_write(check_and_upgrade)
        except LockTimeoutError:
            # Another process holds the lock: most likely it is creating or upgrading the
            # schema, and then it is at head once it commits.
            if await _stamped_revision(database) == SCHEMA_HEAD:
                return None
            if time.monotonic() >= deadline:
                raise LockTimeoutError(
                    f"the database schema was still being created or upgraded by another "
                    f"process after {SCHEMA_WAIT_S:.0f} s"
                ) from None


async def _stamped_revision(database: Database) -> str | None:
    """``alembic_version`` read directly (``None`` when the table is missing or empty)."""
    try:
        query = text("SELECT version_num FROM alembic_version")
        rows = await database.run_read(lambda conn: conn.execute(query).all())
    except StorageError:
        return None  # no such table yet: a new database
    return rows[0][0] if len(rows) == 1 else None


async def database_revision(database: Database) -> str | None:
    """The revision the database is at (``None``: empty)."""
    revision: str | None = await database.run_read(current_revision)
    return revision
