"""memstore's Alembic migrations (installed as the ``memstore._migrations`` package)."""
