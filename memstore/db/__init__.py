"""The only package that imports SQLAlchemy: engine, tables, migrations and queries.

Callers get plain values (:mod:`memstore.core.values`, :mod:`memstore.core.records`) and
memstore errors; no SQLAlchemy object or exception crosses this boundary.
"""

from __future__ import annotations

from memstore.db.engine import Database, database_on, open_database

__all__ = ["Database", "database_on", "open_database"]
