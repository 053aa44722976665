"""How a model's context window is shared out: the arithmetic behind ``MemoryLimits.for_model``.

A model's context window holds everything one request sends and the answer it gets back:
the instructions, the tool schemas, the input (working memory, long-term memories, recalled
passages, and the turn's tool calls in flight) and the output. memstore bounds the input's
memory part by the hard limit, so the hard limit must be what the window leaves::

    room   = context_window - max_output_tokens - instructions - tools (as JSON)
    hard   = room - margin              margin = SAFETY_MARGIN of room (10%)
    target = TARGET_SHARE of hard       where a compaction finishes

The margin absorbs what memstore cannot count exactly: a tokenizer other than the model's,
the request's own framing of messages and tools, and a turn's tool calls and outputs, which
travel beside working memory until the turn is stored. The target share is the default
limits' ratio (900 of 1,500): a compaction frees 40% of the budget, so the next one waits
several turns instead of running on every append.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memstore.config import require_int
from memstore.errors import ConfigurationError

#: Share of the room kept free for what memstore cannot count exactly: tokenizer
#: differences, request framing, a turn's tool calls in flight. When `memstore show` reports
#: memstore counting well under the model, give a smaller window.
SAFETY_MARGIN = 0.10
#: Where compaction finishes, as a share of the hard limit: the defaults' 900 / 1,500.
TARGET_SHARE = 0.6
#: The smallest hard limit worth having: a target must fit strictly below it.
MIN_HARD_LIMIT = 2


@dataclass(frozen=True)
class Budget:
    """How a context window was shared out, in tokens."""

    context_window: int
    max_output_tokens: int
    instructions_tokens: int
    tools_tokens: int
    margin: int
    hard: int
    target: int


def tools_json(tools: Any) -> str:
    """Tool schemas as the JSON text a request carries: ``tools`` is a list, as a request's
    ``tools`` is, of JSON objects or objects with a ``definition()`` method (memstore's
    :class:`~memstore.model_side.agent_tools.Tool`), which count as their definition.

    Raises:
        ConfigurationError: ``tools`` is not a list of tool schemas, or not JSON (``field``
            ``tools``).
    """
    if not isinstance(tools, Iterable) or isinstance(tools, (str, bytes, Mapping)):
        kind = type(tools).__name__
        raise ConfigurationError("tools", f"must be a list of tool schemas, got a {kind}")
    listed = [
        tool.definition() if callable(getattr(tool, "definition", None)) else tool for tool in tools
    ]
    for index, tool in enumerate(listed):
        if not isinstance(tool, Mapping):
            kind = type(tool).__name__
            raise ConfigurationError("tools", f"item {index} must be a tool schema, got a {kind}")
    try:
        return json.dumps(listed, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ConfigurationError("tools", f"must be JSON tool schemas ({error})") from None


def derive_budget(
    *,
    context_window: object,
    max_output_tokens: object,
    instructions: object,
    tools: Any,
    count: Callable[[str], int],
) -> Budget:
    """Share ``context_window`` out (module docstring).

    Raises:
        ConfigurationError: a value that is no count of tokens, or no room left, naming
            what ran out of room (``max_output_tokens``, ``instructions`` or ``tools``).
    """
    window = require_int("context_window", context_window, minimum=1)
    output = require_int("max_output_tokens", max_output_tokens, minimum=1)
    if instructions is not None and not isinstance(instructions, str):
        raise ConfigurationError("instructions", "must be text")
    instructions_tokens = count(instructions) if instructions else 0
    schemas = None if tools is None else tools_json(tools)  # checked even when empty
    tools_tokens = count(schemas) if schemas not in (None, "[]") else 0
    room = window
    for field, used in (
        ("max_output_tokens", output),
        ("instructions", instructions_tokens),
        ("tools", tools_tokens),
    ):
        room -= used
        if room - int(room * SAFETY_MARGIN) < MIN_HARD_LIMIT:
            raise ConfigurationError(
                field,
                f"leaves no room for memory in a {window}-token context window (answer "
                f"{output}, instructions {instructions_tokens}, tools {tools_tokens} tokens)",
            )
    margin = int(room * SAFETY_MARGIN)
    hard = room - margin
    target = max(1, min(hard - 1, int(hard * TARGET_SHARE)))
    return Budget(window, output, instructions_tokens, tools_tokens, margin, hard, target)
