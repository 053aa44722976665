"""Input checks shared by the API and the CLI: each names the field it rejects.

They run before any transaction starts, so bad input never reaches the database.
"""

from __future__ import annotations

import re

from memstore.errors import ValidationError

#: Session ids travel in URLs, file names and log lines: keep them to a safe alphabet.
#: No "/": ids end up in file names (exports) and must never name a path.
SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
#: Idempotency keys are opaque, but bounded and printable.
MAX_IDEMPOTENCY_KEY_CHARS = 200
#: A handle id: letters, digits and ``._:-``, at most the ``items.handle`` column's width.
HANDLE_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def validate_session_id(session_id: object, field: str = "session_id") -> str:
    """Return ``session_id`` if valid: 1-128 chars of ``[A-Za-z0-9._:@-]``, alphanumeric first."""
    if not isinstance(session_id, str):
        raise ValidationError(field, f"must be a string, got {type(session_id).__name__}")
    if not SESSION_ID_PATTERN.fullmatch(session_id):
        raise ValidationError(
            field,
            f"{session_id[:60]!r} is not a valid id (1-128 characters of letters, digits "
            "and ._:@-, starting with a letter or digit)",
        )
    return session_id


def validate_text(field: str, value: object, *, max_bytes: int) -> str:
    """Return ``value`` stripped, or raise naming ``field``.

    Rejects non-strings, empty or blank text, NUL characters, lone surrogates (they cannot be
    stored as UTF-8) and text over ``max_bytes`` of UTF-8.
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be text, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise ValidationError(field, "must not be empty or blank")
    if "\x00" in text:
        raise ValidationError(field, "must not contain NUL characters")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(field, "contains a lone surrogate (not valid Unicode text)") from None
    if size > max_bytes:
        raise ValidationError(field, f"is {size} bytes of UTF-8, over the limit of {max_bytes}")
    return text


def check_storable(field: str, value: str) -> None:
    """Raise naming ``field`` if ``value`` cannot be stored as text on every backend: a NUL
    character (PostgreSQL refuses it) or a lone surrogate (not encodable as UTF-8)."""
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "contains a lone surrogate (not valid Unicode)") from None


def validate_idempotency_key(key: object) -> str | None:
    """Return ``key`` if it is ``None`` or a printable string of at most 200 characters."""
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise ValidationError(
            "idempotency_key", f"must be a string of 1-{MAX_IDEMPOTENCY_KEY_CHARS} characters"
        )
    if not key.isprintable():
        raise ValidationError("idempotency_key", "must not contain control characters")
    return key


def validate_handle(handle: object) -> str:
    """``handle`` if it is a valid handle id (:mod:`memstore.core.turns`).

    Raises:
        ValidationError: not 1-64 letters, digits or ``._:-``.
    """
    if not isinstance(handle, str) or not HANDLE_PATTERN.fullmatch(handle):
        raise ValidationError("handle", "must be 1-64 letters, digits or ._:-")
    return handle


def validate_flag(field: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False``; anything else names ``field``.

    A flag such as ``dry_run="yes"`` or ``with_forks=1`` is refused rather than read by its
    truth: ``"no"`` is true too, and a purge or a real run is no place to guess.
    """
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be True or False, got {value!r}")
    return value
