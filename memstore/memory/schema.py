"""Where a database's schema stands, read (and on request upgraded) without opening a store.

``memstore db current`` and ``memstore db upgrade`` use this: unlike
:meth:`~memstore.memory.store.MemoryStore.open` it works on an outdated database without
upgrading it.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from memstore.config import Settings
from memstore.db import open_database
from memstore.db.migrate import (
    database_revision,
    ensure_schema,
    head_revision,
    known_revision,
    too_new,
)


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database's schema stands: its revision and the newest this code knows."""

    current: str | None
    head: str
    known: bool = True

    @property
    def up_to_date(self) -> bool:
        """True when the database is at head."""
        return self.current == self.head

    @property
    def newer(self) -> bool:
        """True when a newer memstore wrote the database: upgrade memstore, not the schema."""
        return not self.known

    def advice(self) -> str:
        """What to do, in one phrase: nothing, ``memstore db upgrade``, or upgrade memstore."""
        if self.up_to_date:
            return "up to date"
        if self.newer:
            return too_new(str(self.current), self.head)
        return "needs `memstore db upgrade`"


async def schema_status(
    url_or_path: str | os.PathLike[str], *, upgrade: bool = False, settings: Settings | None = None
) -> tuple[SchemaStatus, SchemaStatus]:
    """Read (and with ``upgrade``, bring to head) a database's schema revision.

    Unlike :meth:`MemoryStore.open` this works on an outdated database without upgrading it.

    Returns:
        The status before and after (the same unless an upgrade ran).

    Raises:
        DatabaseMissingError: there is no database there.
        SchemaTooNewError: a newer memstore wrote it (with ``upgrade``).
    """
    settings = settings or Settings.from_env()
    database = await asyncio.to_thread(
        open_database, url_or_path, settings, create=upgrade, read_only=not upgrade
    )
    try:
        head = head_revision()
        current = await database_revision(database)
        before = SchemaStatus(current, head, await asyncio.to_thread(known_revision, current))
        if upgrade:
            await ensure_schema(database, upgrade=True)
            return before, SchemaStatus(await database_revision(database), head)
        return before, before
    finally:
        await database.close()
