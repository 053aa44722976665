"""Alembic environment for memstore.

Two ways in:

* from memstore itself (``MemoryStore.open``, ``memstore db upgrade``): a live connection is
  passed in ``config.attributes["connection"]`` and used as is, inside the caller's
  transaction;
* from the command line (``alembic upgrade head`` in the checkout): the URL comes from
  ``-x url=...`` or ``MEMSTORE_DB`` (default ``./memstore.db``); ``alembic.ini`` names none.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection

from memstore.config import Settings, default_database
from memstore.db.engine import open_database
from memstore.db.search import modelled
from memstore.db.tables import metadata

config = context.config


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=modelled,  # the search index is the migrations' alone
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_from_url(url: str) -> None:
    database = open_database(url, Settings.from_env())
    try:
        await database.run_write(run_on)
    finally:
        await database.close()


def main() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    if context.is_offline_mode():
        raise SystemExit("memstore migrations run online only (give a database URL)")
    url = context.get_x_argument(as_dictionary=True).get("url") or default_database()
    asyncio.run(run_from_url(url))


main()
