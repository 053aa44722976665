"""memstore as a pydantic-ai conversation store: conversations kept in memstore's database.

``MemstoreConversationStore`` implements pydantic-ai's ``ConversationStore`` (its five storage
primitives, ``write_details`` for ``update()``, and ``read_history`` in one query) on
:mod:`memstore.memory.conversations`, so a conversation outlives the process, is shared by
every worker on SQLite or PostgreSQL, and a save conflicts instead of overwriting::

    from memstore.pydantic_ai import MemstoreConversationStore

    conversations = MemstoreConversationStore.from_url("agent.db")
    conversation = await conversations.load(chat_id) or Conversation(conversation_id=chat_id)
    result = await agent.run(prompt, conversation=conversation)
    await conversations.save(result)

What is stored, and how:

* **Messages** as pydantic-ai serialises them: each entry's message is the JSON text
  ``ModelMessagesTypeAdapter`` dumps for it, stored and read back byte for byte (a history is
  validated in one call). Their plain text is stored beside them for ``memstore
  conversations show`` and search.
* **Records** with their usage and deferred tool requests as pydantic-ai's JSON, the title
  and metadata (``update()``, pydantic-ai 2.78 and later) as text and JSON.
* **A write** is one transaction: the record by compare-and-swap on its revision, with the
  entries it adds. pydantic-ai's ``ConversationConflict`` is raised on a stale revision, on a
  record that exists when none was expected, and on a head, branch or parent stored nowhere.
* **A delete** deletes, in the same transaction, every entry no other record reaches: a
  deleted conversation's messages are gone, those a fork shares stay.

Ids, scopes and entry ids may be any string (:mod:`memstore.core.conversation_keys` says how
they are stored). The module needs pydantic-ai (``pydantic-ai-slim`` 2.68 or later, the
``pydantic-ai`` extra); importing it without raises an ``ImportError`` that says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from memstore import Conversations, MemoryStore
from memstore.adapters import PYDANTIC_AI_MISSING
from memstore.core.conversation_keys import StoredConversation, StoredEntry
from memstore.errors import ConversationConflictError, ValidationError

try:
    from pydantic import TypeAdapter
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
        ConversationStore,
    )
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
    from pydantic_ai.tools import DeferredToolRequests
    from pydantic_ai.usage import RunUsage
    from pydantic_core import PydanticSerializationError, to_jsonable_python
except ImportError as error:  # the extra is not installed
    raise ImportError(PYDANTIC_AI_MISSING) from error

_USAGE: TypeAdapter[RunUsage] = TypeAdapter(RunUsage)
_DEFERRED: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)
#: The record fields of the pydantic-ai installed: ``title`` and ``metadata`` came with 2.78's
#: ``update()``; 2.68's records have neither.
_RECORD_FIELDS = frozenset(field.name for field in dataclasses.fields(ConversationRecord))


def dump_message(message: ModelMessage) -> str:
    """``message`` as the JSON text ``ModelMessagesTypeAdapter`` dumps for it in a history
    (the one element of a one-message list, as those bytes)."""
    return ModelMessagesTypeAdapter.dump_json([message])[1:-1].decode("utf-8")


def load_messages(texts: Sequence[str]) -> list[ModelMessage]:
    """The messages dumped as ``texts``, validated as one history."""
    return ModelMessagesTypeAdapter.validate_json("[" + ",".join(texts) + "]")


def _metadata_text(metadata: Any) -> str | None:
    """Metadata as canonical JSON: equal dicts give equal text, which is what an update's
    ``expected`` is compared by."""
    if metadata is None:
        return None
    return json.dumps(to_jsonable_python(metadata), sort_keys=True, separators=(",", ":"))


def _stored(record: ConversationRecord) -> StoredConversation:
    deferred = record.deferred_tool_requests
    return StoredConversation(
        conversation_id=record.conversation_id,
        head_id=record.head_id,
        revision=record.revision,
        updated_at=record.updated_at,
        scope=record.scope,
        usage=_USAGE.dump_json(record.usage).decode("utf-8"),
        deferred_tool_requests=None if deferred is None else _DEFERRED.dump_json(deferred).decode(),
        forked_from=record.forked_from,
        forked_at=record.forked_at,
        title=getattr(record, "title", None),
        metadata=_metadata_text(getattr(record, "metadata", None)),
        branches=tuple(record.branches),
        format_version=record.format_version,
    )


def _record(stored: StoredConversation) -> ConversationRecord:
    details: dict[str, Any] = {}
    if "title" in _RECORD_FIELDS:
        details["title"] = stored.title
        details["metadata"] = None if stored.metadata is None else json.loads(stored.metadata)
    deferred = stored.deferred_tool_requests
    return ConversationRecord(
        conversation_id=stored.conversation_id,
        head_id=stored.head_id,
        usage=_USAGE.validate_json(stored.usage),
        deferred_tool_requests=None if deferred is None else _DEFERRED.validate_json(deferred),
        scope=stored.scope,
        forked_from=stored.forked_from,
        forked_at=stored.forked_at,
        branches=list(stored.branches),
        revision=stored.revision,
        updated_at=stored.updated_at,
        format_version=1,
        **details,
    )


def _stored_entry(entry: ConversationEntry) -> StoredEntry:
    return StoredEntry(
        id=entry.id,
        parent_id=entry.parent_id,
        kind=entry.kind,
        message=dump_message(entry.message),
    )


def _entries(stored: Sequence[StoredEntry]) -> list[ConversationEntry]:
    messages = load_messages([entry.message for entry in stored])
    return [
        ConversationEntry(id=entry.id, parent_id=entry.parent_id, message=message, kind="message")
        for entry, message in zip(stored, messages, strict=True)
    ]


class MemstoreConversationStore(ConversationStore):
    """pydantic-ai's ``ConversationStore`` on a memstore database (module docstring).

    Give it an open :class:`~memstore.MemoryStore` (it never closes it), or build it with
    :meth:`from_url`, which opens the database on first use and closes it in :meth:`close`.
    """

    def __init__(self, store: MemoryStore) -> None:
        self._store: MemoryStore | None = store
        self._url: str | os.PathLike[str] | None = None
        self._options: dict[str, Any] = {}
        self._opening = asyncio.Lock()
        self._owned = False

    @classmethod
    def from_url(
        cls, url: str | os.PathLike[str] | None = None, **open_options: Any
    ) -> MemstoreConversationStore:
        """A store on the database at ``url``, opened on first use and owned by this object.

        Args:
            url: ``agent.db``, ``sqlite+aiosqlite:///agent.db``, ``postgresql+asyncpg://...``
                (``None``: ``$MEMSTORE_DB`` or ``./memstore.db``).
            open_options: Passed to :meth:`MemoryStore.open <memstore.MemoryStore.open>`.
        """
        self = cls.__new__(cls)
        self._store, self._url, self._options = None, url, open_options
        self._opening, self._owned = asyncio.Lock(), True
        return self

    async def memory_store(self) -> MemoryStore:
        """The :class:`~memstore.MemoryStore` underneath (opened now if it was not yet)."""
        if self._store is None:
            async with self._opening:
                if self._store is None:
                    url = self._url
                    if url is None:
                        from memstore.config import default_database

                        url = default_database()
                    self._store = await MemoryStore.open(url, **self._options)
        return self._store

    async def _conversations(self) -> Conversations:
        return (await self.memory_store()).conversations

    async def close(self) -> None:
        """Close the database if this object opened it (:meth:`from_url`)."""
        if self._owned and self._store is not None:
            store, self._store = self._store, None
            await store.close()

    async def __aenter__(self) -> MemstoreConversationStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- pydantic-ai's storage primitives ------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record for a conversation, or ``None`` if the store doesn't have it."""
        stored = await (await self._conversations()).read_record(conversation_id)
        return None if stored is None else _record(stored)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        """The stored records (only ``scope``'s), newest ``updated_at`` first, at most ``limit``."""
        stored = await (await self._conversations()).read_records(scope=scope, limit=limit)
        return [_record(record) for record in stored]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store a record and the new entries its history adds, in one transaction, replacing
        the record with ``expected_revision``; a stored record's title and metadata stay.

        Raises:
            ConversationConflict: the stored revision isn't ``expected_revision``, a record
                exists when it is ``None``, or the head names an entry stored nowhere.
            ValidationError: pydantic-ai cannot serialise a message or the record (a lone
                surrogate in a message's text, say); nothing is written.
        """
        try:
            entries = [_stored_entry(entry) for entry in new_entries]
            stored = _stored(record)
        except PydanticSerializationError as error:  # a lone surrogate, say: nothing written
            raise ValidationError(
                "new_entries", f"pydantic-ai cannot serialise it: {error}"
            ) from None
        conversations = await self._conversations()
        try:
            await conversations.write_record(
                stored, new_entries=entries, expected_revision=expected_revision
            )
        except ConversationConflictError as error:
            raise ConversationConflict(record.conversation_id) from error

    async def write_details(
        self,
        conversation_id: str,
        details: Mapping[str, Any],
        *,
        expected_revision: str,
        expected: Mapping[str, Any] | None = None,
    ) -> ConversationRecord:
        """Replace the record's ``title`` or ``metadata``, keeping its revision and time.

        Raises:
            ConversationConflict: no record with ``expected_revision`` and ``expected``.
            NotImplementedError: a field other than those two.
        """

        def stored_form(values: Mapping[str, Any]) -> dict[str, str | None]:
            if unknown := set(values) - {"title", "metadata"}:
                raise NotImplementedError(f"{type(self).__name__} stores no {sorted(unknown)}")
            return {
                name: _metadata_text(value) if name == "metadata" else value
                for name, value in values.items()
            }

        changes, wanted = stored_form(details), stored_form(expected or {})
        conversations = await self._conversations()
        try:
            stored = await conversations.write_details(
                conversation_id, changes, expected_revision=expected_revision, expected=wanted
            )
        except ConversationConflictError as error:
            raise ConversationConflict(conversation_id) from error
        return _record(stored)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete a conversation's record and, in the same transaction, every entry no
        remaining record's history or branch reaches.

        Raises:
            ConversationConflict: no record with ``expected_revision`` is stored.
        """
        conversations = await self._conversations()
        try:
            await conversations.delete_record(conversation_id, expected_revision=expected_revision)
        except ConversationConflictError as error:
            raise ConversationConflict(conversation_id) from error

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The entry with this id.

        Raises:
            KeyError: no such entry is stored.
        """
        stored = await (await self._conversations()).read_entry(entry_id)
        if stored is None:
            raise KeyError(entry_id)
        return _entries([stored])[0]

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        """The entries from the first up to ``head_id``, in order (only the last ``limit``),
        read in one recursive query.

        Raises:
            KeyError: ``head_id`` is stored nowhere.
        """
        history = await (await self._conversations()).read_history(head_id, limit=limit)
        if history is None:
            raise KeyError(head_id)
        return _entries(history)
