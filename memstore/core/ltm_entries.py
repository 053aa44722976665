"""Long-term memory's plain values and the rules its input must follow.

Nothing here does I/O: :class:`LongTermEntry` and :class:`LongTermChange` are what
:mod:`memstore.memory.long_term` returns, and the ``validate_*`` functions run before any
transaction, so bad input never reaches the database. Each rule (documented in
:mod:`memstore.memory.long_term`) raises a :class:`~memstore.errors.ValidationError` whose ``field``
names the argument.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memstore.core.values import MemoryLimits
from memstore.errors import ConfigurationError, ValidationError

DEFAULT_SCOPE = "global"
#: ``global``, or ``kind:name``; 128 characters at most (the column's width).
SCOPE_PATTERN = re.compile(r"global|[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9][A-Za-z0-9._:@+-]{0,94}")
#: Keys are identifiers people read in listings, not documents.
MAX_KEY_CHARS = 256
#: Deeper values are almost surely a bug (or a cycle); 64 levels is far beyond real use.
MAX_VALUE_DEPTH = 64


@dataclass(frozen=True, slots=True)
class LongTermEntry:
    """One live long-term entry.

    Attributes:
        key: The key within its scope.
        scope: ``global`` or ``kind:name``.
        value: The JSON value (a fresh copy: changing it changes nothing stored).
        version: Increments with every write; never repeats for a (scope, key).
        created_at: When this incarnation was created (a re-create after a delete is new).
        updated_at: When it was last written.
        expires_at: When it stops being visible, or ``None``.
        source: Where this version came from when consolidation wrote it: ``session``,
            ``seqs`` (the items), ``compaction``, ``extractor``, ``run`` and ``said_on``;
            ``None`` when a person or the application wrote it.
    """

    key: str
    scope: str
    value: Any
    version: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    source: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "scope": self.scope,
            "key": self.key,
            "value": self.value,
            "version": self.version,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class LongTermChange:
    """One recorded change of an entry.

    Attributes:
        key: The entry's key.
        scope: The entry's scope.
        version: The version this change produced.
        action: ``"set"``, ``"delete"``, ``"expire"``, or ``"purged"``: a version
            consolidation derived from history deleted with ``with_derived``, its value and
            source erased.
        value: The value set (``None`` for a delete, an expiry or a purged version).
        changed_at: When it happened (for an expiry: the moment the entry expired).
        source: The version's provenance when consolidation wrote it (``None``: a person or
            the application did, or it is a delete, an expiry or a purged version).
    """

    key: str
    scope: str
    version: int
    action: str
    value: Any
    changed_at: datetime
    source: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "scope": self.scope,
            "key": self.key,
            "version": self.version,
            "action": self.action,
            "value": self.value,
            "changed_at": self.changed_at.isoformat(),
            "source": self.source,
        }


# -- validation (before any transaction: bad input writes nothing) ---------------------------


def validate_scope(scope: object, field: str = "scope") -> str:
    """Return ``scope`` if it is ``global`` or ``kind:name`` (module docstring)."""
    if not isinstance(scope, str):
        raise ValidationError(field, f"must be a string, got {type(scope).__name__}")
    if not SCOPE_PATTERN.fullmatch(scope):
        raise ValidationError(
            field,
            f"{scope[:60]!r} is not a valid scope (use 'global' or 'kind:name', e.g. "
            "'user:alice': kind in lowercase letters, digits, _ or -; name in letters, "
            "digits and ._:@+-; 128 characters at most)",
        )
    return scope


def _check_printable(field: str, text: str, what: str) -> None:
    if not text.isprintable():
        raise ValidationError(
            field, f"{what} must not contain control, format or line-separator characters"
        )


def validate_key(key: object, field: str = "key") -> str:
    """Return ``key`` if it is 1-256 printable characters without surrounding white space."""
    if not isinstance(key, str):
        raise ValidationError(field, f"must be a string, got {type(key).__name__}")
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError(field, f"must be 1-{MAX_KEY_CHARS} characters, got {len(key)}")
    _check_printable(field, key, "a key")
    if key != key.strip():
        raise ValidationError(field, "must not start or end with white space")
    return key


def validate_prefix(prefix: object) -> str | None:
    """Return a key prefix for :meth:`LongTermMemory.list` (``None`` or ``""``: no filter)."""
    if prefix is None or prefix == "":
        return None
    if not isinstance(prefix, str):
        raise ValidationError("prefix", f"must be a string, got {type(prefix).__name__}")
    if len(prefix) > MAX_KEY_CHARS:
        raise ValidationError("prefix", f"must be at most {MAX_KEY_CHARS} characters")
    _check_printable("prefix", prefix, "a prefix")
    return prefix


def _check_string(text: str, path: str) -> None:
    if "\x00" in text:
        raise ValidationError("value", f"{path} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("value", f"{path} contains a lone surrogate") from None


def _check_json(value: object, path: str, depth: int) -> None:
    if depth > MAX_VALUE_DEPTH:
        raise ValidationError("value", f"is nested deeper than {MAX_VALUE_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError("value", f"{path} is {value!r}, which JSON cannot hold")
        return
    if isinstance(value, str):
        _check_string(value, path)
        return
    if type(value) is list:
        for index, element in enumerate(value):
            _check_json(element, f"{path}[{index}]", depth + 1)
        return
    if type(value) is dict:
        for name, element in value.items():
            if not isinstance(name, str):
                raise ValidationError(
                    "value", f"{path} has a {type(name).__name__} key; JSON keys are strings"
                )
            _check_string(name, f"a key of {path}")
            _check_json(element, f"{path}[{name[:20]!r}]", depth + 1)
        return
    raise ValidationError(
        "value",
        f"{path} is a {type(value).__name__}; values must be JSON "
        "(str, int, float, bool, None, list, dict)",
    )


def encode_value(value: object, *, max_bytes: int) -> str:
    """Check that ``value`` is storable JSON; return its compact encoding.

    Raises:
        ValidationError: ``field == "value"``; the message says where and why.
    """
    if value is None:
        raise ValidationError("value", "must not be None (null); delete the entry instead")
    _check_json(value, "value", 0)
    try:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # an int beyond Python's int-to-text limit (4300 digits)
        raise ValidationError("value", "holds an integer too large to encode") from None
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(
            "value", f"is {size} bytes of JSON, over the limit of {max_bytes} (ltm_max_value_bytes)"
        )
    return encoded


def validate_expected_version(expected: object) -> int | None:
    """``None``, or a version to compare-and-set against (0: must not exist)."""
    if expected is None:
        return None
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
        raise ValidationError(
            "expected_version", f"must be None or an integer >= 0, got {expected!r}"
        )
    return expected


def resolve_expiry(ttl: object, expires_at: object, now: datetime) -> datetime | None:
    """When an entry written at ``now`` expires: ``now + ttl``, ``expires_at``, or never."""
    if ttl is not None and expires_at is not None:
        raise ValidationError("ttl", "give ttl or expires_at, not both")
    if ttl is not None:
        if isinstance(ttl, timedelta):
            seconds = ttl.total_seconds()
        elif isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
            seconds = float(ttl)
        else:
            raise ValidationError("ttl", f"must be seconds or a timedelta, got {ttl!r}")
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValidationError("ttl", f"must be a positive, finite duration, got {ttl!r}")
        try:
            return now + timedelta(seconds=seconds)
        except OverflowError:
            raise ValidationError("ttl", f"is too large ({ttl!r})") from None
    if expires_at is None:
        return None
    if not isinstance(expires_at, datetime) or expires_at.tzinfo is None:
        raise ValidationError("expires_at", "must be a timezone-aware datetime")
    if expires_at <= now:
        raise ValidationError("expires_at", "is not in the future")
    return expires_at


def validate_scopes(scopes: object) -> tuple[str, ...]:
    """The scopes a session shows the model, validated, duplicates removed, order kept."""
    if isinstance(scopes, str) or not isinstance(scopes, Iterable):
        raise ValidationError("ltm_scopes", "must be a list of scopes, e.g. ['global']")
    out: list[str] = []
    for scope in scopes:
        scope = validate_scope(scope, "ltm_scopes")
        if scope not in out:
            out.append(scope)
    return tuple(out)


def memory_budget(budget: object, limits: MemoryLimits, field: str = "ltm_budget") -> int:
    """The token budget of a message added to the model input (the "Relevant memories", the
    recalled passages); default ``hard - target``.

    ``hard - target`` is the head-room a compaction always leaves, so right after one such a
    message never pushes working memory out of the view.
    """
    if budget is None:
        return limits.hard - limits.target
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget < limits.hard:
        raise ConfigurationError(
            field, f"must be an integer from 1 to {limits.hard - 1}, got {budget!r}"
        )
    return budget
