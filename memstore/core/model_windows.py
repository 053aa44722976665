"""Common models' context windows, and the limits an agent chooses for a session.

:data:`MODEL_WINDOWS` is a small table of OpenAI's published context windows and output
limits; a dated snapshot (``gpt-4o-2024-08-06``) finds its family by the longest matching
name. Any other model (a local server's, a new one) is given its window explicitly.

:func:`choose_limits` is how ``memstore chat`` and :meth:`Agent.open
<memstore.model_side.agent.Agent.open>` pick a session's limits, first match wins:

1. a window or an output reserve the user gave: limits derived from them (the model's
   table entry fills in the other);
2. the limits the session already stored: a conversation keeps its budget;
3. ``MEMORY_HARD_LIMIT`` / ``MEMORY_TARGET_LIMIT`` in the environment;
4. the model's entry in the table;
5. otherwise an error naming ``context_window``: guessing a window risks overflowing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.core.values import LIMIT_VARIABLES, MemoryLimits
from memstore.errors import ConfigurationError

if TYPE_CHECKING:
    from memstore.core.tokens import TokenEstimator

#: The answer's reserve when the window is given for a model the table does not know:
#: a long answer, and at most a quarter of a small window.
DEFAULT_OUTPUT_RESERVE = 4_096


@dataclass(frozen=True)
class ModelWindow:
    """A model's context window and the most it writes in one answer (tokens)."""

    context_window: int
    max_output_tokens: int


MODEL_WINDOWS: Mapping[str, ModelWindow] = {
    "gpt-5": ModelWindow(400_000, 128_000),
    "gpt-5-mini": ModelWindow(400_000, 128_000),
    "gpt-5-nano": ModelWindow(400_000, 128_000),
    "gpt-4.1": ModelWindow(1_047_576, 32_768),
    "gpt-4.1-mini": ModelWindow(1_047_576, 32_768),
    "gpt-4.1-nano": ModelWindow(1_047_576, 32_768),
    "gpt-4o": ModelWindow(128_000, 16_384),
    "gpt-4o-mini": ModelWindow(128_000, 16_384),
    "gpt-4-turbo": ModelWindow(128_000, 4_096),
    "gpt-3.5-turbo": ModelWindow(16_385, 4_096),
    "o1": ModelWindow(200_000, 100_000),
    "o3": ModelWindow(200_000, 100_000),
    "o3-mini": ModelWindow(200_000, 100_000),
    "o4-mini": ModelWindow(200_000, 100_000),
}


def model_window(model: str) -> ModelWindow | None:
    """The table's entry for ``model``, or for the family a dated name belongs to."""
    if model in MODEL_WINDOWS:
        return MODEL_WINDOWS[model]
    family = [name for name in MODEL_WINDOWS if model.startswith(name + "-")]
    return MODEL_WINDOWS[max(family, key=len)] if family else None


def choose_limits(
    model: str,
    *,
    stored: MemoryLimits | None,
    context_window: int | None,
    max_output_tokens: int | None,
    env: Mapping[str, str],
    instructions: str | None,
    tools: Any,
    estimator: TokenEstimator,
) -> tuple[MemoryLimits, str]:
    """A session's limits for an agent on ``model`` (module docstring: the order).

    Returns:
        The limits and where they came from: ``"window"``, ``"stored"``, ``"environment"``
        or ``"model"``.

    Raises:
        ConfigurationError: an unknown model without ``context_window``, or a window with
            no room for memory (``field`` names the option).
    """
    known = model_window(model)
    keep_recent = MemoryLimits().keep_recent if stored is None else stored.keep_recent

    def derived(window: int | None, output: int | None) -> MemoryLimits:
        if window is None:
            if known is None:
                raise ConfigurationError(
                    "context_window",
                    f"memstore does not know the context window of model {model!r}; give it",
                )
            window = known.context_window
        if output is None:
            output = (
                known.max_output_tokens
                if known is not None
                else min(DEFAULT_OUTPUT_RESERVE, max(1, window // 4))
            )
        return MemoryLimits.for_model(
            context_window=window,
            max_output_tokens=output,
            instructions=instructions,
            tools=tools,
            estimator=estimator,
            keep_recent=keep_recent,
        )

    if context_window is not None or max_output_tokens is not None:
        return derived(context_window, max_output_tokens), "window"
    if stored is not None:
        return stored, "stored"
    if any(env.get(LIMIT_VARIABLES[name], "").strip() for name in ("hard", "target")):
        return MemoryLimits.from_env(env), "environment"
    return derived(None, None), "model"
