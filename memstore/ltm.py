"""Long-term memory: scoped, versioned JSON entries that outlive sessions (SPEC 4).

Sessions forget; long-term memory keeps what must outlive them ("I prefer tests with
pytest"). It is one table shared by every session and process, reached as ``store.ltm``.

* **Scopes and keys.** An entry is addressed by ``(scope, key)``. A scope is ``global`` or
  ``kind:name`` (``user:alice``, ``agent:reviewer``, ``project:checkout``): the kind is 1-32
  lowercase letters, digits, ``_`` or ``-`` starting with a letter; the name 1-95 characters
  of letters, digits and ``._:@+-`` starting with a letter or digit. A key is 1-256 printable
  characters (no control, format or line-separator characters) without surrounding white space.
* **Values** are JSON: a string, number, bool, list or object (``None`` is refused at the top:
  delete instead); no NaN or infinity, no NUL characters or lone surrogates (PostgreSQL's
  JSON refuses them), object keys are strings, at most 64 levels deep and
  ``Settings.ltm_max_value_bytes`` (64 KiB) of compact UTF-8 JSON. What you read back equals
  what you wrote (tuples and other non-JSON types are refused rather than converted).
* **Versions.** Every write (set, delete) increments the entry's version, and versions never
  repeat: an entry re-created after a delete continues after the version of its delete.
  ``expected_version`` makes ``set``/``delete`` a compare-and-set; an absent entry (never
  written, deleted or expired) has version **0**, so ``expected_version=0`` means "only if it
  does not exist". A stale one raises :class:`VersionConflictError` and writes nothing.
* **Expiry.** ``ttl`` (seconds or a timedelta) or ``expires_at`` sets when an entry stops
  being visible; every ``set`` decides its own expiry (no argument: the entry never expires).
  Expired entries are invisible to ``get``, ``list`` and the model input, and count as absent
  for compare-and-set; :meth:`LongTermMemory.prune` deletes them, recording an ``expire``.
* **History.** Every change is recorded (``set`` with its value, ``delete``, ``expire``) and
  :meth:`LongTermMemory.history` returns them oldest first.
* **Model input.** A session opened with ``ltm_scopes`` gets one ``developer`` message,
  "Relevant memories", built here by :func:`fit_memories` within a token budget and rendered
  by :func:`memstore.responses.memories_message` as fenced, escaped JSON lines.
"""

from __future__ import annotations

import builtins
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memstore.config import Settings
from memstore.db import Database
from memstore.db import ltm as ltm_db
from memstore.db.reads import utcnow
from memstore.errors import ConfigurationError, ValidationError
from memstore.model import ITEM_OVERHEAD_TOKENS, MemoryLimits
from memstore.responses import memories_message, memory_line

DEFAULT_SCOPE = "global"
#: ``global``, or ``kind:name``; 128 characters at most (the column's width).
SCOPE_PATTERN = re.compile(r"global|[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9][A-Za-z0-9._:@+-]{0,94}")
#: Keys are identifiers people read in listings, not documents.
MAX_KEY_CHARS = 256
#: Deeper values are almost surely a bug (or a cycle); 64 levels is far beyond real use.
MAX_VALUE_DEPTH = 64
#: Entries read for one model input: far more than any sensible budget can show.
MAX_RENDERED_ENTRIES = 200
#: Expired rows deleted per write transaction by ``prune``: keeps each lock short.
PRUNE_BATCH = 500

Clock = Callable[[], datetime]
CountTokens = Callable[[str], int]


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
    """

    key: str
    scope: str
    value: Any
    version: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None

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
        }


@dataclass(frozen=True, slots=True)
class LongTermChange:
    """One recorded change of an entry.

    Attributes:
        key: The entry's key.
        scope: The entry's scope.
        version: The version this change produced.
        action: ``"set"``, ``"delete"`` or ``"expire"``.
        value: The value set (``None`` for a delete or an expiry).
        changed_at: When it happened (for an expiry: the moment the entry expired).
    """

    key: str
    scope: str
    version: int
    action: str
    value: Any
    changed_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601)."""
        return {
            "scope": self.scope,
            "key": self.key,
            "version": self.version,
            "action": self.action,
            "value": self.value,
            "changed_at": self.changed_at.isoformat(),
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


def memory_budget(budget: object, limits: MemoryLimits) -> int:
    """The token budget of the "Relevant memories" message (default: ``hard - target``).

    ``hard - target`` is the head-room a compaction always leaves, so right after one the
    memories never push working memory out of the view.
    """
    if budget is None:
        return limits.hard - limits.target
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget < limits.hard:
        raise ConfigurationError(
            "ltm_budget", f"must be an integer from 1 to {limits.hard - 1}, got {budget!r}"
        )
    return budget


# -- the model-input message -----------------------------------------------------------------


@dataclass(frozen=True)
class MemoriesBlock:
    """The "Relevant memories" message and what it costs.

    Attributes:
        message: The ``developer`` input message.
        tokens: Its estimated tokens, framing included (counted against the hard limit).
        shown: The entries it lists, highest priority first.
        omitted: Live entries of the scopes left out to fit the budget.
    """

    message: dict[str, Any]
    tokens: int
    shown: tuple[LongTermEntry, ...]
    omitted: int


def fit_memories(
    entries: Sequence[LongTermEntry], total: int, count: CountTokens, budget: int
) -> MemoriesBlock | None:
    """The largest message, in priority order, whose tokens (+ framing) fit ``budget``.

    Entries are taken in order (highest priority first); one that does not fit is skipped and
    the next ones are still tried, so a large entry never hides the small ones after it. The
    final message is counted whole, and the lowest-priority entry dropped until it fits.

    Args:
        entries: Candidates, highest priority first.
        total: Live entries in the scopes (``total - shown`` are reported as omitted).
        count: The session's token estimator.
        budget: Tokens the message may use, framing included.

    Returns:
        The block, or ``None`` when no entry fits (then no message is added).
    """
    used = count(memories_message([], omitted=0)["content"]) + ITEM_OVERHEAD_TOKENS
    chosen: list[LongTermEntry] = []
    for entry in entries:
        cost = count(memory_line(entry))
        if used + cost <= budget:
            chosen.append(entry)
            used += cost
    while chosen:
        message = memories_message(chosen, omitted=total - len(chosen))
        tokens = count(message["content"]) + ITEM_OVERHEAD_TOKENS
        if tokens <= budget:
            return MemoriesBlock(message, tokens, tuple(chosen), total - len(chosen))
        chosen.pop()
    return None


# -- the API -----------------------------------------------------------------------------------


class LongTermMemory:
    """``store.ltm``: the scoped, versioned key-value store shared by every session.

    Args:
        database: The store's database.
        settings: Store settings (``ltm_max_value_bytes``).
        clock: Returns the current UTC time (tests move it to check expiry).
    """

    def __init__(self, database: Database, settings: Settings, *, clock: Clock = utcnow) -> None:
        self._db = database
        self.settings = settings
        self.clock = clock

    async def set(
        self,
        key: str,
        value: Any,
        *,
        scope: str = DEFAULT_SCOPE,
        expected_version: int | None = None,
        ttl: float | timedelta | None = None,
        expires_at: datetime | None = None,
    ) -> LongTermEntry:
        """Create or replace an entry; one write transaction.

        Args:
            key: 1-256 printable characters.
            value: JSON (str, number, bool, list, dict).
            scope: ``global`` (default) or ``kind:name``.
            expected_version: Compare-and-set: write only if the live version is this one
                (0: only if there is no live entry). ``None``: write unconditionally.
            ttl: Expire this long after now (seconds or a timedelta).
            expires_at: Expire at this (timezone-aware) time. Without ``ttl`` and
                ``expires_at`` the entry never expires, whatever its previous expiry was.

        Returns:
            The stored entry (its new version).

        Raises:
            ValidationError: a bad key, scope, value, version or expiry (``field`` names it).
            VersionConflictError: ``expected_version`` is stale; nothing was written.
        """
        key, scope = validate_key(key), validate_scope(scope)
        encoded = encode_value(value, max_bytes=self.settings.ltm_max_value_bytes)
        expected = validate_expected_version(expected_version)
        now = self.clock()
        expiry = resolve_expiry(ttl, expires_at, now)
        record = await ltm_db.set_entry(
            self._db,
            scope,
            key,
            json.loads(encoded),  # a copy: later changes to the caller's object change nothing
            expected_version=expected,
            expires_at=expiry,
            now=now,
        )
        return LongTermEntry(**record)

    async def get(self, key: str, *, scope: str = DEFAULT_SCOPE) -> LongTermEntry | None:
        """The live entry, or ``None`` (never written, deleted or expired)."""
        record = await ltm_db.get_entry(
            self._db, validate_scope(scope), validate_key(key), self.clock()
        )
        return None if record is None else LongTermEntry(**record)

    async def delete(
        self, key: str, *, scope: str = DEFAULT_SCOPE, expected_version: int | None = None
    ) -> bool:
        """Delete an entry (recorded in its history); one write transaction.

        Args:
            key: The key.
            scope: Its scope.
            expected_version: Compare-and-set, as for :meth:`set`.

        Returns:
            ``True`` if a live entry was deleted, ``False`` if there was none.

        Raises:
            ValidationError: a bad key, scope or version.
            VersionConflictError: ``expected_version`` is stale; nothing was written.
        """
        return await ltm_db.delete_entry(
            self._db,
            validate_scope(scope),
            validate_key(key),
            expected_version=validate_expected_version(expected_version),
            now=self.clock(),
        )

    async def list(
        self, *, scope: str | None = None, prefix: str | None = None
    ) -> builtins.list[LongTermEntry]:
        """Live entries, ordered by scope then key.

        Args:
            scope: Only this scope (``None``: every scope).
            prefix: Only keys starting with this (case-sensitive).
        """
        records = await ltm_db.list_entries(
            self._db,
            scope=None if scope is None else validate_scope(scope),
            prefix=validate_prefix(prefix),
            now=self.clock(),
        )
        return [LongTermEntry(**record) for record in records]

    async def history(
        self, key: str, *, scope: str = DEFAULT_SCOPE
    ) -> builtins.list[LongTermChange]:
        """Every change of the entry, oldest first: each set (with its value), delete, expiry.

        Empty if the key was never written in this scope.
        """
        records = await ltm_db.history(self._db, validate_scope(scope), validate_key(key))
        return [LongTermChange(**record) for record in records]

    async def prune(self) -> int:
        """Delete every expired entry, recording an ``expire`` in its history.

        Returns:
            How many entries were deleted.
        """
        return await ltm_db.prune_expired(self._db, self.clock(), batch=PRUNE_BATCH)

    async def memories(
        self, scopes: Sequence[str], count: CountTokens, budget: int
    ) -> MemoriesBlock | None:
        """The "Relevant memories" message for ``scopes``, within ``budget`` tokens.

        Priority: the order of ``scopes``, then the most recently updated first; entries that
        do not fit are left out (and their number reported in the message).

        Returns:
            The block, or ``None`` when the scopes hold no live entry or none fits.
        """
        scopes = validate_scopes(scopes)
        if not scopes:
            return None
        records, total = await ltm_db.entries_in_scopes(
            self._db, scopes, self.clock(), limit=MAX_RENDERED_ENTRIES
        )
        entries = [LongTermEntry(**record) for record in records]
        return fit_memories(entries, total, count, budget) if entries else None

    #: Aliases that read well in agent code.
    remember = set
    recall = get
    forget = delete
