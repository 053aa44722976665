"""memstore's count of a model request's input, beside the count the model reported.

When a response reports ``usage.input_tokens``, the agent records what memstore counted for
the same request: the input items as memory counts them (text by the session's estimator,
carried Responses items by their rules, :data:`ITEM_OVERHEAD_TOKENS` of framing each), the
instructions, and the tool schemas as JSON. Summed over a session's requests
(:class:`CountFit`), ``memstore show`` tells whether the estimator fits the model: a ratio
well under 100% means memstore undercounts, and the hard limit leaves less room than
planned.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstore.core.budget import tools_json
from memstore.core.carried_items import count_tokens, parse_item
from memstore.core.values import ITEM_OVERHEAD_TOKENS
from memstore.errors import ValidationError

#: The carried-item parser's size limit, when counting: a request's items count whatever
#: their size.
_ANY_SIZE = 1 << 62


def input_tokens(input_items: Sequence[Mapping[str, Any]], count: Callable[[str], int]) -> int:
    """memstore's count of a request's ``input`` list (module docstring)."""
    total = 0
    for item in input_items:
        content = item.get("content")
        if isinstance(content, str) and item.get("type", "message") == "message":
            total += count(content)
        else:
            try:
                total += count_tokens(parse_item(item, "input", max_bytes=_ANY_SIZE), count)
            except ValidationError:  # nothing memory would store: count its JSON
                total += count(json.dumps(item, ensure_ascii=False))
        total += ITEM_OVERHEAD_TOKENS
    return total


def request_tokens(request: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """memstore's count of a whole Responses request: input, instructions and tools."""
    instructions = request.get("instructions")
    tools = request.get("tools")
    return (
        input_tokens(request.get("input") or [], count)
        + (count(instructions) if isinstance(instructions, str) and instructions else 0)
        + (count(tools_json(tools)) if tools else 0)
    )


@dataclass(frozen=True)
class InputCount:
    """One model request: what memstore counted and what the model reported."""

    session_version: int
    model: str
    estimated_tokens: int
    reported_tokens: int

    @property
    def ratio(self) -> float:
        """memstore's count over the model's (1.0: exact; below: memstore undercounts)."""
        return self.estimated_tokens / self.reported_tokens if self.reported_tokens else 0.0


@dataclass(frozen=True)
class CountFit:
    """How memstore's counts compared with the model's over a session's requests."""

    calls: int
    estimated_tokens: int
    reported_tokens: int
    lowest_ratio: float
    highest_ratio: float
    last: InputCount

    @property
    def ratio(self) -> float:
        """All of memstore's counts over all of the model's."""
        return self.estimated_tokens / self.reported_tokens if self.reported_tokens else 0.0

    @classmethod
    def of(cls, counts: Sequence[InputCount]) -> CountFit | None:
        """The summary of ``counts`` (``None``: no request recorded)."""
        measured = [c for c in counts if c.reported_tokens > 0]
        if not measured:
            return None
        ratios = [c.ratio for c in measured]
        return cls(
            calls=len(measured),
            estimated_tokens=sum(c.estimated_tokens for c in measured),
            reported_tokens=sum(c.reported_tokens for c in measured),
            lowest_ratio=min(ratios),
            highest_ratio=max(ratios),
            last=measured[-1],
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "calls": self.calls,
            "estimated_tokens": self.estimated_tokens,
            "reported_tokens": self.reported_tokens,
            "ratio": round(self.ratio, 4),
            "lowest_ratio": round(self.lowest_ratio, 4),
            "highest_ratio": round(self.highest_ratio, 4),
            "last": {
                "session_version": self.last.session_version,
                "model": self.last.model,
                "estimated_tokens": self.last.estimated_tokens,
                "reported_tokens": self.last.reported_tokens,
            },
        }

    def line(self) -> str:
        """One line for ``show``."""
        return (
            f"input counts: memstore counted {self.ratio:.0%} of the model's input tokens over "
            f"{self.calls} request(s) ({self.lowest_ratio:.0%}..{self.highest_ratio:.0%}; last "
            f"{self.last.estimated_tokens} vs {self.last.reported_tokens} for {self.last.model})"
        )
