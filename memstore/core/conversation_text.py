"""What a stored pydantic-ai message says, as plain text: what ``memstore conversations show``
prints, what a search of conversations matches, and what the history processor counts and
summarizes.

It reads the message's JSON (pydantic-ai's own serialisation, the form memstore stores), not
pydantic-ai's classes, so it needs no pydantic-ai and reads what any version wrote. One line
per part, saying who speaks:

=====================  ==========================================
part                   line
=====================  ==========================================
user-prompt            ``user: TEXT`` (media: ``[binary image/png, 1.2 KiB]``, ``[image-url URL]``)
system-prompt          ``system: TEXT``
tool-return            ``tool NAME: CONTENT`` (JSON when not text)
retry-prompt           ``retry NAME: CONTENT`` (``retry: CONTENT`` for no tool's)
text                   ``assistant: TEXT``
tool-call              ``call NAME(ARGS)`` (also a provider's built-in tool calls)
thinking               ``thinking: TEXT``
compaction             ``summary: TEXT``
anything else          ``[PART-KIND]``
=====================  ==========================================

Nothing here does I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from memstore.core.carried_items import (
    FILE_REFERENCE_TOKENS,
    IMAGE_TOKENS,
    MEDIA_CHARS_PER_TOKEN,
)

#: Base64 holds 3 bytes in every 4 characters (less its ``=`` padding): a media part's size,
#: shown without decoding it.
_BASE64_BYTES, _BASE64_CHARS = 3, 4


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _size(data: object) -> str:
    if not isinstance(data, str):
        return ""
    size: float = len(data) * _BASE64_BYTES // _BASE64_CHARS - (len(data) - len(data.rstrip("=")))
    for unit in ("bytes", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f", {size:.0f} {unit}" if unit == "bytes" else f", {size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover - the loop returns


def _media(item: Mapping[str, Any]) -> str:
    kind = str(item.get("kind", "media"))
    if kind == "binary":
        return f"[binary {item.get('media_type', '?')}{_size(item.get('data'))}]"
    if kind == "text-content":
        return str(item.get("content", ""))
    if "url" in item:
        return f"[{kind} {item['url']}]"
    return f"[{kind}]"


def _content(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(
            _media(item) if isinstance(item, Mapping) else _json(item) for item in content
        )
    if isinstance(content, Mapping) and "kind" in content:
        return _media(content)
    return _json(content)


def part_text(part: Mapping[str, Any]) -> str:
    """One part's line (module docstring)."""
    kind = part.get("part_kind")
    content = part.get("content")
    name = part.get("tool_name", "")
    if kind == "user-prompt":
        return f"user: {_content(content)}"
    if kind == "system-prompt":
        return f"system: {_json(content)}"
    if kind in ("tool-return", "builtin-tool-return"):
        return f"tool {name}: {_content(content)}"
    if kind in ("retry-prompt", "retry-feedback"):
        return f"retry {name}: {_json(content)}" if name else f"retry: {_json(content)}"
    if kind == "text":
        return f"assistant: {_json(content)}"
    if kind in ("tool-call", "builtin-tool-call"):
        args = part.get("args")
        return f"call {name}({'' if args is None else _json(args)})"
    if kind == "thinking":
        return f"thinking: {_json(content)}"
    if kind == "compaction":
        return f"summary: {_json(content)}" if content is not None else "[compaction]"
    if kind == "file":
        return f"assistant: {_content(content)}"
    return f"[{kind}]"


def message_text(message: Mapping[str, Any]) -> str:
    """A message's lines (its JSON as pydantic-ai dumped it, parsed)."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(part_text(part) for part in parts if isinstance(part, Mapping))


def message_role(message: Mapping[str, Any]) -> str:
    """``request`` (what the model was sent) or ``response`` (what it answered)."""
    return str(message.get("kind", "?"))


def _media_cost(item: Mapping[str, Any]) -> int:
    kind = str(item.get("kind", ""))
    media_type = str(item.get("media_type", ""))
    if kind == "image-url" or (kind == "binary" and media_type.startswith("image/")):
        return IMAGE_TOKENS
    if kind == "binary":
        return math.ceil(len(str(item.get("data", ""))) / MEDIA_CHARS_PER_TOKEN)
    if kind.endswith("-url") or kind == "uploaded-file":
        return FILE_REFERENCE_TOKENS
    return 0


def media_tokens(message: Mapping[str, Any]) -> int:
    """Tokens a message's media cost beyond its lines, counted as memstore counts a Responses
    item's (:mod:`memstore.core.carried_items`): an image its most, inline data by its size,
    a file by reference a page."""
    total = 0
    for part in message.get("parts") or ():
        if not isinstance(part, Mapping):
            continue
        content = part.get("content")
        for item in content if isinstance(content, list) else [content]:
            if isinstance(item, Mapping):
                total += _media_cost(item)
    return total
