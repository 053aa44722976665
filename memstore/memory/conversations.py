"""Conversations stored for pydantic-ai: ``store.conversations``.

The storage side of pydantic-ai's ``ConversationStore`` (its five primitives, the optional
``write_details``, and a history read in one query), over memstore's database, with plain
values (:mod:`memstore.core.conversation_keys`) in and out: the messages and what a record
carries arrive as the JSON text pydantic-ai dumped and leave as the very same text, so this
layer never imports pydantic-ai. :class:`memstore.adapters.pydantic_ai.MemstoreConversationStore`
is the pydantic-ai store built on it; ``memstore conversations`` reads it.

Every argument is checked before a transaction starts, naming the field it rejects; how the
writes stay consistent across processes is :mod:`memstore.db.conversation_tree`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from memstore.core.conversation_keys import (
    ConversationHit,
    StoredConversation,
    StoredEntry,
    key_of,
)
from memstore.core.conversation_text import message_text
from memstore.core.validation import check_storable
from memstore.db import conversation_reads, conversation_search, conversation_tree
from memstore.db.engine import Database
from memstore.errors import ConversationConflictError, ValidationError

#: The record fields ``write_details`` may set or expect (pydantic-ai's ``ConversationDetails``).
DETAIL_FIELDS = ("title", "metadata")


def storable_text(value: str) -> str:
    """``value`` with what no backend stores as text replaced (NUL by U+FFFD, a lone surrogate
    by ``?``): for derived text, which is shown and searched, never given back as data."""
    return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("limit", f"must be an integer of at least 0, got {limit!r}")
    return limit


def _json_text(field: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise ValidationError(field, f"must be JSON text, got {type(value).__name__}")
    check_storable(field, value)


def _check_record(record: object) -> StoredConversation:
    if not isinstance(record, StoredConversation):
        raise ValidationError("record", f"must be a StoredConversation, got {type(record)}")
    for field in ("conversation_id", "revision"):
        key_of(getattr(record, field), field)  # a string
    check_storable("revision", record.revision)
    for field in ("head_id", "scope", "forked_from", "forked_at", "title"):
        value = getattr(record, field)
        if value is not None:
            key_of(value, field)
    if not isinstance(record.updated_at, datetime) or record.updated_at.tzinfo is None:
        raise ValidationError("updated_at", "must be a timezone-aware datetime")
    _json_text("usage", record.usage)
    _json_text("deferred_tool_requests", record.deferred_tool_requests, optional=True)
    _json_text("metadata", record.metadata, optional=True)
    for tip in record.branches:
        key_of(tip, "branches")
    if isinstance(record.format_version, bool) or not isinstance(record.format_version, int):
        raise ValidationError("format_version", "must be an integer")
    return record


def _check_entries(entries: Sequence[object]) -> list[StoredEntry]:
    checked: list[StoredEntry] = []
    for entry in entries:
        if not isinstance(entry, StoredEntry):
            raise ValidationError("new_entries", f"must hold StoredEntry values, got {entry!r}")
        key_of(entry.id, "new_entries")
        if entry.parent_id is not None:
            key_of(entry.parent_id, "parent_id")
        if not isinstance(entry.kind, str) or not 1 <= len(entry.kind) <= 32:
            raise ValidationError("kind", "must be text of 1 to 32 characters")
        _json_text("message", entry.message)
        try:
            message = json.loads(entry.message)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            raise ValidationError("message", "must be a message's JSON object")
        text = storable_text(message_text(message))
        checked.append(StoredEntry(entry.id, entry.parent_id, entry.kind, entry.message, text))
    return checked


def _details(field: str, values: Mapping[str, str | None] | None) -> dict[str, str | None]:
    chosen = dict(values or {})
    for name, value in chosen.items():
        if name not in DETAIL_FIELDS:
            raise ValidationError(field, f"{name!r} is not one of {', '.join(DETAIL_FIELDS)}")
        if value is None:
            continue
        if name == "title":
            key_of(value, "title")
        else:
            _json_text(name, value)
    return chosen


class Conversations:
    """The conversations of one database (``store.conversations``).

    Ids, scopes and entry ids are any strings (stored by their keys:
    :mod:`memstore.core.conversation_keys`). A write is one transaction: the record with its new
    entries, by compare-and-swap on the revision; a delete collects the entries no other
    record reaches.
    """

    def __init__(self, database: Database) -> None:
        self._db = database

    async def read_record(self, conversation_id: str) -> StoredConversation | None:
        """The record of ``conversation_id``, or ``None`` if none is stored.

        Raises:
            ValidationError: ``conversation_id`` is not a string.
        """
        key_of(conversation_id, "conversation_id")
        return await conversation_reads.read_record(self._db, conversation_id)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[StoredConversation]:
        """The stored records (only ``scope``'s, if given), newest ``updated_at`` first.

        Raises:
            ValidationError: ``scope`` is not a string, or ``limit`` is not an integer >= 0.
        """
        if scope is not None:
            key_of(scope, "scope")
        return await conversation_reads.read_records(self._db, scope, _limit(limit))

    async def write_record(
        self,
        record: StoredConversation,
        *,
        new_entries: Sequence[StoredEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store ``record`` with the entries its history adds, in one transaction.

        Args:
            record: The record; its ``title`` and ``metadata`` are written only when it is
                new (an update of a stored record keeps the stored ones).
            new_entries: The entries it adds, each after the one it points at.
            expected_revision: The stored record's revision (``None``: none may be stored).

        Raises:
            ConversationConflictError: another revision is stored (or one is, or none is),
                or the head, a branch or an entry's parent is stored nowhere. Nothing is
                written.
            ValidationError: a field that is not what it must be (nothing is written).
        """
        checked = _check_record(record)
        entries = _check_entries(list(new_entries))
        if expected_revision is not None:
            key_of(expected_revision, "expected_revision")
        await conversation_tree.write_record(self._db, checked, entries, expected_revision)

    async def write_details(
        self,
        conversation_id: str,
        details: Mapping[str, str | None],
        *,
        expected_revision: str,
        expected: Mapping[str, str | None] | None = None,
    ) -> StoredConversation:
        """Set the record's ``title`` or ``metadata`` (JSON text), keeping its revision.

        Args:
            conversation_id: The conversation.
            details: The fields to set (``None`` clears one).
            expected_revision: The revision it must be at.
            expected: Values the fields must still hold.

        Returns:
            The record as stored after the write.

        Raises:
            ConversationConflictError: no record at that revision holds ``expected``.
            ValidationError: a field that is not one of those, or not text.
        """
        key_of(conversation_id, "conversation_id")
        key_of(expected_revision, "expected_revision")
        changes = _details("details", details)
        wanted = _details("expected", expected)
        if not changes:
            raise ValidationError("details", "names no field to set")
        return await conversation_tree.write_details(
            self._db, conversation_id, changes, expected_revision, wanted
        )

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> int:
        """Delete the record, and every entry no other record reaches any more.

        Returns:
            How many entries were deleted with it.

        Raises:
            ConversationConflictError: no record at ``expected_revision`` is stored.
        """
        key_of(conversation_id, "conversation_id")
        key_of(expected_revision, "expected_revision")
        return await conversation_tree.delete_record(self._db, conversation_id, expected_revision)

    async def delete(self, conversation_id: str) -> int | None:
        """Delete the conversation at whatever revision it is (an operator's erasure), and
        every entry no other record reaches.

        Returns:
            How many entries were deleted with it; ``None`` when it is not stored.
        """
        while (record := await self.read_record(conversation_id)) is not None:
            try:
                return await self.delete_record(conversation_id, expected_revision=record.revision)
            except ConversationConflictError:
                continue  # saved since it was read: delete that revision
        return None

    async def read_entry(self, entry_id: str) -> StoredEntry | None:
        """The entry ``entry_id``, or ``None`` if none is stored."""
        key_of(entry_id, "entry_id")
        return await conversation_reads.read_entry(self._db, entry_id)

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[StoredEntry] | None:
        """The entries from the first up to ``head_id``, oldest first, in one query.

        Args:
            head_id: The history's newest entry (``None``: an empty history).
            limit: Only the newest ``limit`` entries.

        Returns:
            The entries, or ``None`` when ``head_id`` is stored nowhere.
        """
        chosen = _limit(limit)
        if head_id is None or chosen == 0:
            return []
        key_of(head_id, "head_id")
        history = await conversation_reads.read_history(self._db, head_id, chosen)
        return history or None

    async def search(
        self, query: str, *, scope: str | None = None, limit: int = 10
    ) -> list[ConversationHit]:
        """Search every stored message (in histories and the branches they left).

        Args:
            query: Words to look for (text, not syntax: any character is safe).
            scope: Only the conversations saved with this scope.
            limit: Hits to return at most (1-1,000), best first.

        Returns:
            The matching entries, each naming the conversations that hold it.

        Raises:
            ValidationError: a bad query, scope or limit.
        """
        from memstore.core.search_terms import search_terms, validate_limit

        terms = search_terms(query)
        chosen = validate_limit(limit)
        if scope is not None:
            key_of(scope, "scope")
        if not terms:
            return []
        return await conversation_search.search(self._db, terms, scope, chosen)
