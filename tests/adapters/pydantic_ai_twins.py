"""Two conversation stores driven alike: pydantic-ai's ``InMemoryConversationStore`` and
memstore's, each step run on both and its outcomes compared.

Each store mints its own entry ids, revisions and run ids (uuid7s) and each agent run stamps
its own times, so outcomes are compared as JSON with every uuid renamed by its first
appearance on that side (``#0``, ``#1``, ...; the same uuid keeps its name for the whole test)
and every timestamp and duration blanked: equal outcomes have the same shape, link the same
entries and carry the same content. What comes back byte for byte is proven by the
memstore-only tests. An exception is compared by its type and message.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    UserPromptPart,
)
from pydantic_ai.models.test import TestModel
from pydantic_core import to_jsonable_python

from memstore import MemoryStore
from memstore.pydantic_ai import MemstoreConversationStore

#: A uuid (pydantic-ai's uuid7s: entry ids, revisions, run ids, new conversation ids).
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: An ISO timestamp or duration as pydantic dumps one (a response's time and ``duration``).
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|PT\d+(\.\d+)?S")


@dataclass
class Side:
    """One store and what a test keeps per store (loaded conversations, results)."""

    name: str
    store: ConversationStore
    kept: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def canonical(self, value: Any) -> Any:
        """``value`` as comparable JSON (module docstring)."""
        return self._rename(_jsonable(value))

    def _rename(self, value: Any) -> Any:
        if isinstance(value, str):
            if TIMESTAMP.fullmatch(value):
                return "<time>"
            return UUID.sub(lambda m: self.names.setdefault(m[0], f"#{len(self.names)}"), value)
        if isinstance(value, list):
            return [self._rename(item) for item in value]
        if isinstance(value, dict):
            return {key: self._rename(item) for key, item in value.items()}
        return value


def _messages(messages: Any) -> Any:
    return ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Conversation):
        return {
            "messages": _messages(value.messages),
            "usage": to_jsonable_python(value.usage),
            "conversation_id": value.conversation_id,
            "deferred_tool_requests": to_jsonable_python(value.deferred_tool_requests),
            "revision": value.revision,
            "new_message_index": value.new_message_index,
        }
    if isinstance(value, ConversationRecord):
        fields = {
            f.name: getattr(value, f.name)
            for f in dataclasses.fields(value)
            if f.name != "updated_at"  # each store's own clock
        }
        return to_jsonable_python(fields, bytes_mode="base64")
    if isinstance(value, ConversationEntry):
        return {
            "id": value.id,
            "parent_id": value.parent_id,
            "kind": value.kind,
            "message": _messages([value.message])[0],
        }
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return to_jsonable_python(value, bytes_mode="base64")


@dataclass
class Twins:
    """The two stores; :meth:`both` runs a step on each and demands the same outcome."""

    sides: tuple[Side, Side]

    async def both(self, step: Callable[[Side], Awaitable[Any]]) -> Any:
        """Run ``step`` on each side; equal canonical results, or equal exceptions.

        Returns:
            The canonical outcome (the result's JSON, or ``("raised", type, message)``).
        """
        outcomes = []
        for side in self.sides:
            try:
                outcome = side.canonical(await step(side))
            except Exception as error:  # the outcome compared, whatever it is
                outcome = ("raised", type(error), side._rename(str(error)))
            outcomes.append(outcome)
        memory, memstore = outcomes
        assert memstore == memory, f"memstore's store differs:\n{memstore}\n!=\n{memory}"
        return memory


def twins_on(store: MemoryStore) -> Twins:
    """pydantic-ai's in-memory store beside memstore's on ``store``."""
    return Twins(
        (
            Side("in-memory", InMemoryConversationStore()),
            Side("memstore", MemstoreConversationStore(store)),
        )
    )


def keeps_added_messages() -> bool:
    """Whether this pydantic-ai's run keeps in its conversation both the messages a capability
    dropped from the history and the one it added (2.78 does, so a memstore summary is saved
    with the run; 2.68's conversation is the trimmed history, and a store gets no summary)."""
    added = ModelRequest(parts=[UserPromptPart("added by a capability")])

    def replace_old(history: list[ModelMessage]) -> list[ModelMessage]:
        return [added, *history[-1:]] if len(history) > 2 else history

    agent = Agent(TestModel(), capabilities=[ProcessHistory(replace_old)])
    first = agent.run_sync("first")
    kept = agent.run_sync("second", conversation=first.conversation).conversation.messages
    return added in kept and first.all_messages()[0] in kept
