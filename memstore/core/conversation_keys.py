"""Stored conversations (pydantic-ai's conversation store) as plain values, and the mapping
from their free-form names to what the database stores.

pydantic-ai's conversation ids, scopes and entry ids are any Python string: empty, 10,000
characters long, holding a NUL character (PostgreSQL text refuses it) or a lone surrogate
(not encodable as UTF-8). memstore stores each one in two columns:

* the **key**, what rows are found and joined by: the string itself when it holds none of
  ``\\``, NUL or a lone surrogate and is at most :data:`MAX_KEY_CHARS` long, which is what
  real ids (uuid7s, ``user:alice``) are, so SQL and the CLI show them as they are. Otherwise
  those characters are escaped (``\\\\``, ``\\0``, ``\\uXXXX``), and a name still longer
  than :data:`MAX_KEY_CHARS` becomes ``\\#`` and the SHA-256 of its escaped form;
* the **name**, the escaped string itself, stored only when the key is such a digest, so the
  original comes back exactly.

The mapping is injective: an escaped string never starts with ``\\#`` (an escaped backslash
is followed by ``\\``, ``0`` or ``u``), so no two strings share a key, and :func:`original`
inverts it. A pydantic-ai scope that is a memstore scope (``user:alice``) is stored as that
very string: the conversations of a user and their long-term entries share one name.

Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

from memstore.errors import ValidationError

#: The longest key stored as it is: at most 2,048 bytes of UTF-8, under PostgreSQL's limit of
#: 2,704 bytes for one b-tree index entry (a longer name is stored by its digest).
MAX_KEY_CHARS = 512
#: What starts a key that is the digest of a longer name (no escaped string starts so).
DIGEST_PREFIX = "\\#"
#: Characters the database cannot store (NUL, lone surrogates) and the escape character.
_UNSTORABLE = re.compile("[\\\\\x00\ud800-\udfff]")
#: An escape sequence of :func:`escape`, for :func:`unescape`.
_ESCAPE = re.compile(r"\\(\\|0|u[0-9a-f]{4})")


def escape(value: str) -> str:
    """``value`` with ``\\``, NUL and lone surrogates escaped: text every backend stores."""

    def one(match: re.Match[str]) -> str:
        char = match.group(0)
        if char == "\\":
            return "\\\\"
        if char == "\x00":
            return "\\0"
        return f"\\u{ord(char):04x}"

    return _UNSTORABLE.sub(one, value)


def unescape(text: str) -> str:
    """The string :func:`escape` made ``text`` from."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code == "\\":
            return "\\"
        if code == "0":
            return "\x00"
        return chr(int(code[1:], 16))

    return _ESCAPE.sub(one, text)


@dataclass(frozen=True, slots=True)
class StoredName:
    """How one free-form name is stored.

    Attributes:
        key: What rows are found by (module docstring).
        name: The escaped name when ``key`` is its digest, else ``None``.
    """

    key: str
    name: str | None


def stored_name(value: object, field: str) -> StoredName:
    """The key (and, for a long name, the escaped name) ``value`` is stored under.

    Raises:
        ValidationError: ``value`` is not a string (``field`` names it).
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    escaped = escape(value)
    if len(escaped) <= MAX_KEY_CHARS:
        return StoredName(escaped, None)
    digest = hashlib.sha256(escaped.encode("utf-8")).hexdigest()
    return StoredName(DIGEST_PREFIX + digest, escaped)


def key_of(value: object, field: str) -> str:
    """:func:`stored_name`'s key alone (what a lookup needs)."""
    return stored_name(value, field).key


def original(key: str, name: str | None) -> str:
    """The string stored as ``key`` (and ``name``): the inverse of :func:`stored_name`."""
    return unescape(key if name is None else name)


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One message of a stored conversation, in the form pydantic-ai serialised it.

    Attributes:
        id: The entry's id, as pydantic-ai minted it.
        parent_id: The entry before it (``None``: the first of a history).
        kind: What it holds (``message``).
        message: The message's JSON text, exactly as pydantic-ai dumped it.
        text: What it says, as plain text (:mod:`memstore.core.conversation_text`): what
            ``memstore conversations show`` prints and what a search matches; derived when
            the entry is written, so a new entry leaves it empty.
        created_at: When it was stored (``None`` for one not stored yet).
    """

    id: str
    parent_id: str | None
    kind: str
    message: str
    text: str = ""
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """A conversation's record: where its history ends, and what it carries.

    The JSON documents are pydantic-ai's own serialisations, kept as text: memstore stores
    them and gives them back, never reading inside.

    Attributes:
        conversation_id: The conversation's id.
        head_id: The newest entry of its history (``None``: no messages yet).
        revision: The compare-and-swap token (opaque, compared for equality only).
        updated_at: When it was last saved (timezone-aware).
        scope: Whose it is (``None``: nobody's in particular).
        usage: The accumulated usage, as JSON text.
        deferred_tool_requests: The tool calls it waits on, as JSON text (``None``: none).
        forked_from: The conversation it was forked from.
        forked_at: The last entry the fork kept.
        title: Its title (``None``: none).
        metadata: The application's metadata, as JSON text (``None``: none).
        branches: The last entries of the branches it left, oldest first.
        format_version: pydantic-ai's storage format.
    """

    conversation_id: str
    head_id: str | None
    revision: str
    updated_at: datetime
    scope: str | None = None
    usage: str = "{}"
    deferred_tool_requests: str | None = None
    forked_from: str | None = None
    forked_at: str | None = None
    title: str | None = None
    metadata: str | None = None
    branches: tuple[str, ...] = ()
    format_version: int = 1


@dataclass(frozen=True, slots=True)
class ConversationHit:
    """One stored message that matched a search of conversations.

    Attributes:
        entry_id: The entry (its id, as pydantic-ai minted it).
        conversation_ids: The conversations whose history or left branches hold it (forks
            share entries), sorted.
        text: The message's plain text.
        snippet: A short extract, matched words in ``[`` ``]``.
        score: Higher is better; orders the hits of one search.
        created_at: When it was stored.
    """

    entry_id: str
    conversation_ids: tuple[str, ...]
    text: str
    snippet: str
    score: float
    created_at: datetime

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "entry_id": self.entry_id,
            "conversation_ids": list(self.conversation_ids),
            "score": self.score,
            "snippet": self.snippet,
            "text": self.text,
            "created_at": self.created_at.isoformat(),
        }
