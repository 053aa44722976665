"""Function tools for :class:`memstore.model_side.agent.Agent`: the definition, one executed call,
and ``remember`` / ``recall`` over long-term memory.

A :class:`Tool` is what the model is told (name, description, JSON schema of the arguments)
and the coroutine that runs it, plus how its calls are recorded in working memory (the call
and its output are stored as the Responses items they are): the output of a tool that
*changes* something is a ``DECISION``, that of one that only *reads* a ``TOOL_OBSERVATION``,
at the tool's priority (``LOW`` when the call can simply be repeated).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.core.carried_items import KNOWN_TYPES
from memstore.core.values import MemoryKind, Priority, parse_kind, parse_priority
from memstore.errors import ConfigurationError

if TYPE_CHECKING:
    from memstore.memory.long_term import LongTermMemory
    from memstore.memory.session import SessionMemory

#: Passages one ``search_memory`` call returns: enough to find a detail, few enough that the
#: answer itself does not crowd working memory.
SEARCH_TOOL_HITS = 5
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


ToolHandler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A function tool: what the model is told, and the coroutine that runs it.

    Attributes:
        name: 1-64 letters, digits, ``_`` or ``-``.
        description: What it does, for the model.
        parameters: JSON schema of the arguments (an ``object`` schema).
        handler: ``async def handler(**arguments) -> str | JSON value``.
        record_as: ``TOOL_OBSERVATION`` (it reads) or ``DECISION`` (it changes something):
            the kind its outputs are stored as, which summaries keep first.
        priority: Priority of its record in working memory.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler
    record_as: MemoryKind = MemoryKind.TOOL_OBSERVATION
    priority: Priority = Priority.NORMAL

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ConfigurationError(
                "name", f"tool names are 1-64 of [A-Za-z0-9_-], got {self.name!r}"
            )
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise ConfigurationError("parameters", f"tool {self.name}: must be an object schema")
        if not callable(self.handler):
            raise ConfigurationError("handler", f"tool {self.name}: must be an async callable")
        kind = parse_kind(self.record_as)
        if kind not in (MemoryKind.TOOL_OBSERVATION, MemoryKind.DECISION):
            raise ConfigurationError("record_as", "must be TOOL_OBSERVATION or DECISION")
        object.__setattr__(self, "record_as", kind)
        object.__setattr__(self, "priority", parse_priority(self.priority))

    @property
    def changes_state(self) -> bool:
        """Whether the tool writes (it records ``DECISION`` items): a read-only server
        refuses it."""
        return self.record_as is MemoryKind.DECISION

    def definition(self) -> dict[str, Any]:
        """The Responses API function-tool definition."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
            "strict": False,
        }


@dataclass(frozen=True)
class ToolCall:
    """One executed tool call.

    Attributes:
        name: The tool the model asked for.
        arguments: The parsed arguments (``{}`` when they were not a JSON object).
        output: What the model was sent back.
        ok: ``False`` when the call failed (unknown tool, bad arguments, the handler raised).
    """

    name: str
    arguments: Mapping[str, Any]
    output: str
    ok: bool = True


def memory_tools(ltm: LongTermMemory, scope: str) -> list[Tool]:
    """``remember(key, value)`` and ``recall(key)`` over one long-term ``scope``."""

    async def remember(key: str, value: str) -> str:
        entry = await ltm.set(key, value, scope=scope)
        return f"saved {key!r} in {scope} (version {entry.version})"

    async def recall(key: str) -> str:
        entry = await ltm.get(key, scope=scope)
        if entry is None:
            return f"nothing saved under {key!r} in {scope}"
        return json.dumps(
            {"key": entry.key, "value": entry.value, "version": entry.version},
            ensure_ascii=False,
        )

    key_schema = {"type": "string", "description": "A short snake_case key, e.g. test_framework."}
    return [
        Tool(
            "remember",
            "Save a lasting preference or fact in long-term memory (it outlives this session "
            "and appears under Relevant memories). Overwrites the key's previous value.",
            {
                "type": "object",
                "properties": {
                    "key": key_schema,
                    "value": {"type": "string", "description": "What to remember, one sentence."},
                },
                "required": ["key", "value"],
                "additionalProperties": False,
            },
            remember,
            record_as=MemoryKind.DECISION,
        ),
        Tool(
            "recall",
            "Read one long-term memory by its key.",
            {
                "type": "object",
                "properties": {"key": key_schema},
                "required": ["key"],
                "additionalProperties": False,
            },
            recall,
            priority=Priority.LOW,
        ),
    ]


def search_tool(memory: SessionMemory) -> Tool:
    """``search_memory(query)``: the passages of this session that left working memory (and
    superseded summaries) that best match ``query``, as JSON lines, best first."""

    async def search_memory(query: str) -> str:
        hits = await memory.search(query, limit=SEARCH_TOOL_HITS)
        if not hits:
            return "no earlier passage matches"
        return "\n".join(
            json.dumps(
                {"seq": hit.seq, "role": None if hit.item is None else hit.item.role.value,
                 "source": hit.source, "text": hit.text},
                ensure_ascii=False,
            )
            for hit in hits
        )  # fmt: skip

    return Tool(
        "search_memory",
        "Search this conversation's earlier history (what has left your working memory, "
        "and earlier summaries) for words; returns the best matching passages.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for, e.g. a name."}
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        search_memory,
        priority=Priority.LOW,
    )


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """A light check of ``arguments`` against an object schema: what is wrong, or ``None``.

    Required keys, unexpected keys (when ``additionalProperties`` is false) and the JSON
    type of each known property; enough to answer a model's slip with a useful message.
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    missing = [name for name in schema.get("required", ()) if name not in arguments]
    if missing:
        return f"missing argument(s): {', '.join(missing)}"
    if schema.get("additionalProperties") is False:
        extra = sorted(set(arguments) - set(properties))
        if extra:
            return f"unexpected argument(s): {', '.join(extra)}"
    for name, value in arguments.items():
        wanted = properties.get(name, {}).get("type")
        types = _JSON_TYPES.get(wanted) if isinstance(wanted, str) else None
        bad_bool = isinstance(value, bool) and wanted in ("integer", "number")
        if types is not None and (not isinstance(value, types) or bad_bool):
            return f"argument {name!r} must be of type {wanted}"
    return None


class TurnItems:
    """The items of one turn, in order, with the priority each is stored at."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.priorities: list[Priority] = []
        self.decisions: list[int] = []  # outputs of calls that changed something

    def add(
        self, item: dict[str, Any], priority: Priority = Priority.NORMAL, decision: bool = False
    ) -> None:
        if decision:
            self.decisions.append(len(self.items))
        self.items.append(item)
        self.priorities.append(priority)

    def extend_with(self, output: Iterable[Any]) -> None:
        """A response's output items, as the server sent them (kinds memstore carries)."""
        for out in output:
            item = out.to_dict(mode="json") if hasattr(out, "to_dict") else dict(out)
            if item.get("type") in KNOWN_TYPES:
                self.add(storable(item))


def storable(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as working memory takes it: what a server sends is arbitrary, and working
    memory refuses NUL characters and lone surrogates."""
    text = json.dumps(item, ensure_ascii=False).replace("\\u0000", "\\\\0")
    cleaned: dict[str, Any] = json.loads(text.encode("utf-8", "replace").decode("utf-8"))
    return cleaned
