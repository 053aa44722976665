"""What :mod:`kept_values` counts, as pure functions: the values, the windows, the baselines.

The definitions (the same as the goals' check):

* a **forgotten** value is one whose item is outside the newest items that fit in the final
  input's tokens: the final ``build_model_input()``, each of its messages counted with the
  session's estimator plus :data:`ITEM_OVERHEAD` (what memstore charges an item);
* **tool values** are the scalar leaves of a JSON tool output: strings of 2 to 60 characters,
  and numbers (as JSON writes them); an output that is not JSON gives its tokens that hold a
  digit (white-space separated, stripped of surrounding punctuation);
* **user specifics** are the quoted strings (any of ``"…" '…' “…” ‘…’ «…» „…“ 「…」 『…』``) and
  the numbers of two or more digits (``1,250`` and ``3.75`` are one number each) of user turns;
* a value is **kept** when it appears verbatim, case aside, in the model input: the text of
  its messages, one after the other.

The **naive digest** is the baseline a compaction must beat, at the same total tokens: the
newest items that fit, and, in the room memstore's summary takes (the final input's tokens
less its items'), one line per forgotten tool output (``name: its values``) and per forgotten
user turn (``user: its quoted strings and numbers``), newest first, each value written once.
A line that does not fit the room is left out and older lines are still tried: the baseline
fills its room as well as it can.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

#: memstore charges every item its tokens plus this (its message framing); each message of
#: an input is counted the same way, so a window of items and an input compare like for like.
ITEM_OVERHEAD = 4
#: Tool-output strings shorter than this are no value (a flag, a unit); longer ones are prose.
MIN_STRING, MAX_STRING = 2, 60
#: Quotes that open and close a quoted string: straight, curly, guillemets, German, CJK corner.
_QUOTED = re.compile(
    r'"([^"\n]+)"|(?<![\w\'])\'([^\'\n]+)\'(?![\w\'])|“([^”\n]+)”|‘([^’\n]+)’|«([^»\n]+)»'
    r"|„([^“”\n]+)[“”]|「([^」\n]+)」|『([^』\n]+)』"
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_PUNCTUATION = ".,;:!?()[]{}<>\"'`"

Count = Callable[[str], int]


# -- the values -----------------------------------------------------------------------------------


def tool_values(output: str) -> list[str]:
    """The values of one tool output, each once (case aside), in the order they appear."""
    try:
        parsed = json.loads(output)
    except ValueError:
        found = [token.strip(_PUNCTUATION) for token in output.split()]
        return _unique(t for t in found if any(c.isdigit() for c in t))
    return _unique(_leaves(parsed))


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for child in value.values() for leaf in _leaves(child)]
    if isinstance(value, list):
        return [leaf for child in value for leaf in _leaves(child)]
    if isinstance(value, str):
        return [value] if MIN_STRING <= len(value) <= MAX_STRING else []
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float) and not math.isfinite(value):
        return []  # json.loads reads NaN and Infinity, which no JSON writer emits
    return [json.dumps(value)]


def user_specifics(text: str) -> list[str]:
    """The quoted strings and the numbers of two or more digits of a user's turn, each once."""
    quoted = [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(text)]
    numbers = [m.group() for m in _NUMBER.finditer(text)]
    return _unique([*(q for q in quoted if q), *(n for n in numbers if _digits(n) >= 2)])


def _digits(text: str) -> int:
    return sum(1 for c in text if c.isdigit())


def _unique(values: Any) -> list[str]:
    seen: set[str] = set()
    out = []
    for value in values:
        if value.casefold() not in seen:
            seen.add(value.casefold())
            out.append(value)
    return out


def kept(values: Sequence[str], text: str) -> int:
    """How many of ``values`` appear verbatim, case aside, in ``text``."""
    folded = text.casefold()
    return sum(1 for value in values if value.casefold() in folded)


# -- messages and windows -------------------------------------------------------------------------


def message_text(message: dict[str, Any]) -> str:
    """The text of one input item: a message's content, a call's name and arguments, an
    output's output."""
    parts: list[str] = []
    for key in ("content", "output"):
        value = message.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts += [str(p.get("text", "")) for p in value if isinstance(p, dict)]
    if message.get("type") == "function_call":
        parts += [str(message.get("name", "")), str(message.get("arguments", ""))]
    return "\n".join(part for part in parts if part)


def input_text(messages: Sequence[dict[str, Any]]) -> str:
    """The model input's text: its messages' texts, one after the other."""
    return "\n".join(message_text(message) for message in messages)


def cost(message: dict[str, Any], count: Count) -> int:
    """What one message weighs: its text's tokens plus :data:`ITEM_OVERHEAD`."""
    return count(message_text(message)) + ITEM_OVERHEAD


def window_start(costs: Sequence[int], budget: int) -> int:
    """Where the newest items that fit ``budget`` begin (``len(costs)``: none fits)."""
    used, start = 0, len(costs)
    while start > 0 and used + costs[start - 1] <= budget:
        start -= 1
        used += costs[start]
    return start


def naive_digest(
    messages: Sequence[dict[str, Any]],
    names: Sequence[str | None],
    start: int,
    room: int,
    count: Count,
) -> str:
    """The digest of ``messages[:start]`` (the forgotten ones) within ``room`` tokens.

    Args:
        messages: The session's items as input messages, oldest first.
        names: For each, the tool name of an output (``None``: a user turn or no output).
        start: The first item the digest's window holds.
        room: Tokens the digest may take, its message framing included.
        count: The session's token count.

    Returns:
        One line per forgotten tool output and user turn with a value not written yet,
        newest first, as many as fit.
    """
    lines: list[str] = []
    written: set[str] = set()
    for index in range(start - 1, -1, -1):
        message, name = messages[index], names[index]
        if name is not None:
            values, label = tool_values(message_text(message)), name
        elif message.get("role") == "user":
            values, label = user_specifics(message_text(message)), "user"
        else:
            continue
        new = [value for value in values if value.casefold() not in written]
        if not new:
            continue
        line = f"{label}: {', '.join(new)}"
        if count("\n".join([*lines, line])) + ITEM_OVERHEAD <= room:
            lines.append(line)
            written.update(value.casefold() for value in new)
    return "\n".join(lines)
