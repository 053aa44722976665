"""A pydantic-ai message history as memstore items, so memstore's compaction policy can bound
what the model is sent (:class:`memstore.adapters.pydantic_ai_history.MemstoreHistory`).

The policy (:mod:`memstore.core.policy`) removes whole units, never half of one. Here a unit
is what pydantic-ai needs together:

* a **request** with the user's prompt (or the system prompt) is a unit of its own;
* a **response that calls tools**, with the request right after it holding their results
  (or the retry prompts for them), is one unit: a result whose call was removed, or a call
  left without its result, is a history the model cannot continue;
* any other **response** (the model's answer) is a unit of its own.

Each unit becomes one :class:`~memstore.core.values.MemoryItem` whose content is the unit's
lines (:mod:`memstore.core.conversation_text`), counted by the estimator plus what its media
cost, with the kind that says who spoke: ``USER_MESSAGE`` for a prompt, ``DECISION`` for a
system prompt alone, ``TOOL_OBSERVATION`` for calls with their results, ``ASSISTANT_MESSAGE``
for an answer. All are NORMAL priority: nothing is dropped as noise unasked.

Nothing here does I/O; the messages arrive as their JSON (pydantic-ai's own dump).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstore.core.conversation_text import media_tokens, message_text
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority

#: Parts of a request that answer the response before it.
ANSWERS = frozenset({"tool-return", "retry-prompt", "builtin-tool-return"})
#: Parts of a response that wait for answers in the request after it.
CALLS = frozenset({"tool-call"})

#: Who speaks in a unit, by what opens it.
_KINDS = {
    "user": (MemoryKind.USER_MESSAGE, MemoryRole.USER),
    "system": (MemoryKind.DECISION, MemoryRole.DEVELOPER),
    "calls": (MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL),
    "answer": (MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT),
}


@dataclass(frozen=True, slots=True)
class MessageUnit:
    """Messages ``start`` to ``stop`` (exclusive) of a history, kept or removed together.

    Attributes:
        start, stop: The messages' positions.
        opener: ``user``, ``system``, ``calls`` or ``answer`` (module docstring).
        text: Their lines.
        media: Tokens their media cost beyond the lines.
    """

    start: int
    stop: int
    opener: str
    text: str
    media: int


def _kinds(message: Mapping[str, Any]) -> set[str]:
    return {str(part.get("part_kind")) for part in message.get("parts") or () if part}


def _opener(message: Mapping[str, Any]) -> str:
    kinds = _kinds(message)
    if message.get("kind") != "request":
        return "calls" if kinds & CALLS else "answer"
    if "user-prompt" in kinds:
        return "user"
    if kinds & ANSWERS:  # results whose calls came before the history (a window)
        return "calls"
    return "system" if kinds <= {"system-prompt"} else "user"


def message_units(messages: Sequence[Mapping[str, Any]]) -> list[MessageUnit]:
    """The units of a history (its messages' JSON, parsed)."""
    bounds: list[int] = []
    for index, message in enumerate(messages):
        joins = (
            index > 0
            and message.get("kind") == "request"
            and bool(_kinds(message) & ANSWERS)
            and messages[index - 1].get("kind") == "response"
            and bool(_kinds(messages[index - 1]) & CALLS)
        )
        if not joins:
            bounds.append(index)
    bounds.append(len(messages))
    units: list[MessageUnit] = []
    for start, stop in itertools.pairwise(bounds):
        chosen = messages[start:stop]
        units.append(
            MessageUnit(
                start=start,
                stop=stop,
                opener=_opener(chosen[0]),
                text="\n".join(message_text(message) for message in chosen),
                media=sum(media_tokens(message) for message in chosen),
            )
        )
    return units


def unit_items(
    units: Sequence[MessageUnit], count: Callable[[str], int], now: datetime
) -> list[MemoryItem]:
    """One item per unit (module docstring), its id the unit's position (``u0``, ``u1``...)."""
    items = []
    for index, unit in enumerate(units):
        kind, role = _KINDS[unit.opener]
        items.append(
            MemoryItem(
                id=f"u{index}",
                session_id="pydantic-ai",
                seq=index + 1,
                role=role,
                kind=kind,
                priority=Priority.NORMAL,
                content=unit.text,
                timestamp=now,
                estimated_tokens=count(unit.text) + unit.media,
            )
        )
    return items
