"""The schema's shared parts: the metadata every table is declared on (with the naming
convention migrations follow) and the column types that read back exactly what was written
(:class:`UTCDateTime`, :class:`JSONDocument`), on every backend."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]


class JSONDocument(TypeDecorator[Any]):
    """JSON that reads back exactly as it was written, on every backend.

    SQLite gives a column declared ``JSON`` NUMERIC affinity, so a stored ``1.0`` came back as
    the integer 1 and ``2**80`` as a float. On SQLite this type is a TEXT column holding the
    JSON text (encoded and decoded here); elsewhere it is the backend's JSON type. ``None``
    is SQL NULL, not the JSON text ``null``.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Text())
        return dialect.type_descriptor(JSON(none_as_null=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name != "sqlite" or value is None:
            return value
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name != "sqlite" or not isinstance(value, str):
            return value
        return json.loads(value)
