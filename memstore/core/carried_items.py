"""Responses API items carried verbatim: what is accepted, and what memstore derives from one.

An item added with :meth:`SessionMemory.add_items <memstore.memory.session.SessionMemory.add_items>`
is stored twice over, in one row: the item itself, as the JSON text it was given as (so it
comes back with the same keys and values, ``id``, ``call_id``, ``status`` and
``encrypted_content`` included), and the *derived text* memstore reads for token counts,
summaries, display and search:

========================  ===================================  ============================
item type                 kind (role)                          derived text
========================  ===================================  ============================
message (or no type)      by its role: USER_MESSAGE (user),    its text parts; ``[image]``,
                          ASSISTANT_MESSAGE (assistant),       ``[file NAME]``, ``[audio]``
                          DECISION (developer, system)         for the others
a call (function_call,    ASSISTANT_MESSAGE (assistant): an    ``name(arguments)``
custom_tool_call, ...)    action of the assistant
its output                TOOL_OBSERVATION (tool)              its text
reasoning                 DECISION (assistant)                 its readable summary, never
                                                               the encrypted blob
a hosted tool call        ASSISTANT_MESSAGE (assistant)        ``[type]`` and its fields
any other type            ASSISTANT_MESSAGE (assistant)        ``[type]`` and its fields
========================  ===================================  ============================

**Any type is carried.** What the Responses API or an agent framework emits that memstore has
no rule for (a type newer than this code) is stored verbatim as an *opaque* item: its own
unit, never a refusal, counted conservatively (one token per :data:`MEDIA_CHARS_PER_TOKEN`
characters of its whole JSON). A call whose link is null (a server-executed
``tool_search_call``, ``"execution": "server"``, and its output) is complete on its own, like a
hosted call. The ``program`` and ``program_output`` items of programmatic tool calling are
carried this way too (the API takes a program whose output has not come yet), and the calls a
program makes (``caller`` set) pair with their outputs like any other call. What the API
itself refuses is refused here too, naming the field: a message
content part that is not an object, a ``function_call`` whose ``name`` or ``arguments`` is not
text.

**Tokens** are never fewer than what the model is sent of the item. The model reads an item's
content, not its JSON keys (its framing is the 4 tokens every item costs), so the estimator
counts the derived text (a call's name and arguments, an output's text, a message's text),
and the rest by rule: encrypted reasoning one token per :data:`MEDIA_CHARS_PER_TOKEN`
characters of the blob (it is base64 of the reasoning text, about 5 characters a token), an
image :data:`IMAGE_TOKENS` (``detail: "low"``: :data:`LOW_DETAIL_IMAGE_TOKENS`), a file or
audio clip one token per :data:`MEDIA_CHARS_PER_TOKEN` characters of its base64 data, a
file given by id or URL :data:`FILE_REFERENCE_TOKENS`.

Nothing here does I/O; :mod:`memstore.core.units` decides which items belong together.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memstore.core.validation import check_storable
from memstore.core.values import MemoryKind, MemoryRole
from memstore.errors import ValidationError

#: Calls and the field of their output that names them (``call_id``, unless said otherwise).
CALL_OUTPUTS: Mapping[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "mcp_approval_request": "mcp_approval_response",
    "tool_search_call": "tool_search_output",
}
OUTPUT_TYPES = frozenset(CALL_OUTPUTS.values())
#: Where each paired type keeps the id that links a call to its output (the first field
#: that holds text, in this order).
_LINK_FIELD: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(CALL_OUTPUTS, ("call_id",)),
    **dict.fromkeys(OUTPUT_TYPES, ("call_id",)),
    # The API's own shape names the call's call_id "id" here; the Agents SDK writes call_id.
    "local_shell_call_output": ("call_id", "id"),
    "mcp_approval_request": ("id",),
    "mcp_approval_response": ("approval_request_id",),
}
#: Paired types the API also accepts with a null link: server-executed, complete alone.
_LINK_OPTIONAL = frozenset({"tool_search_call", "tool_search_output"})
#: Hosted tools: the call and its result are one item.
HOSTED_CALLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
MESSAGE = "message"
REASONING = "reasoning"
KNOWN_TYPES = frozenset({MESSAGE, REASONING, *CALL_OUTPUTS, *OUTPUT_TYPES, *HOSTED_CALLS})

_MESSAGE_ROLES: Mapping[str, tuple[MemoryKind, MemoryRole]] = {
    "user": (MemoryKind.USER_MESSAGE, MemoryRole.USER),
    "assistant": (MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT),
    "developer": (MemoryKind.DECISION, MemoryRole.DEVELOPER),
    "system": (MemoryKind.DECISION, MemoryRole.DEVELOPER),
}

#: An image at ``detail: "high"`` or ``"auto"``: the most the tiled vision models charge for
#: the largest image they accept after scaling (2048x768: 85 + 8 tiles x 170 = 1,445), and
#: the patch cap (1,536) of the patch-based ones, whichever is more.
IMAGE_TOKENS = 1_536
#: An image at ``detail: "low"``: a fixed 85 tokens on the tiled models; kept at their rate.
LOW_DETAIL_IMAGE_TOKENS = 85
#: Inline file or audio data, and encrypted reasoning: base64 is 4 characters per 3 bytes, and
#: text runs about 4 bytes a token, so 3 characters a token over-counts rather than under.
MEDIA_CHARS_PER_TOKEN = 3
#: A file sent by id or URL: memstore cannot see it, so it counts a full page of context.
FILE_REFERENCE_TOKENS = 4_096
#: Fields whose value is inline media, counted by the rules above instead of as text.
_MEDIA_FIELDS = frozenset({"image_url", "file_data", "data"})
#: Nesting a carried item may have: the API's deepest items use under ten levels, and a
#: deeper value would exhaust the recursion of the JSON encoder long before 1,000.
MAX_DEPTH = 64
#: Python prints at most 4,300 digits of an int (about 14,284 bits).
MAX_INT_BITS = 14_000
#: A call_id is stored in a column of this width (``items.call_id``).
MAX_LINK_CHARS = 200
#: What a hosted call's derived text may hold of its fields.
MAX_DERIVED_FIELD_CHARS = 2_000


@dataclass(frozen=True)
class ParsedItem:
    """A validated Responses item, ready to append.

    Attributes:
        kind / role: What it maps to (module docstring).
        text: The derived text (never empty).
        payload: The item, as given.
        payload_json: The JSON text stored; what comes back is ``json.loads`` of it.
        item_type: ``message``, ``function_call``, ...
        link: The id pairing a call with its output (``call_id`` and kin), if any.
        media_tokens: Tokens counted by rule: inline media and encrypted reasoning.
        counted_text: What the estimator counts: the derived text, never clipped.
    """

    kind: MemoryKind
    role: MemoryRole
    text: str
    payload: Mapping[str, Any]
    payload_json: str
    item_type: str
    link: str | None
    media_tokens: int
    counted_text: str

    @property
    def is_call(self) -> bool:
        """A call that expects an output item."""
        return self.item_type in CALL_OUTPUTS and self.link is not None

    @property
    def is_output(self) -> bool:
        """The output of a call."""
        return self.item_type in OUTPUT_TYPES and self.link is not None

    @property
    def may_wait(self) -> bool:
        """It may wait for another item: a call for its output, reasoning for its follower."""
        return self.is_call or self.item_type == REASONING


#: The type of an item with neither a ``type`` nor a message's fields (an Agents SDK
#: ``EncryptedSession`` envelope): carried opaque.
UNTYPED = "untyped"


def item_type(payload: Mapping[str, Any]) -> str:
    """The item's ``type``; a message may omit it (``{"role": "user", "content": "hi"}``),
    and an object with no type and no message fields is :data:`UNTYPED`."""
    kind = payload.get("type")
    if kind is None:
        return MESSAGE if "role" in payload or "content" in payload else UNTYPED
    return str(kind)


def link_of(payload: Mapping[str, Any]) -> str | None:
    """The id that pairs a call and its output, or ``None`` for other items (and for a
    server-executed call, whose link is null)."""
    for name in _LINK_FIELD.get(item_type(payload), ()):
        value = payload.get(name)
        if isinstance(value, str):
            return value
    return None


def parse_item(value: object, field: str, *, max_bytes: int) -> ParsedItem:
    """Validate one Responses input item and derive what memstore needs from it.

    Args:
        value: The item: a JSON object (a ``dict``), as the Responses API takes it.
        field: Its name in error messages (``items[3]``).
        max_bytes: The stored JSON's limit, in bytes of UTF-8.

    Raises:
        ValidationError: not a JSON object, a ``type`` that is not text, a role or a field the
            Responses API refuses, a value JSON cannot carry unchanged, text that cannot be
            stored, or JSON over ``max_bytes``.
    """
    if not isinstance(value, dict):
        raise ValidationError(field, f"must be a JSON object, got {type(value).__name__}")
    _check_json(value, field)
    if "type" in value and not isinstance(value["type"], str):
        raise ValidationError(f"{field}.type", f"must be text, got {value['type']!r}")
    kind_name = item_type(value)
    payload_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    size = len(payload_json.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(field, f"is {size} bytes of JSON, over the limit of {max_bytes}")
    link = link_of(value)
    _check_link(value, kind_name, link, field)
    _check_fields(value, kind_name, field)
    kind, role = _kind_and_role(value, kind_name, field)
    media = _media_tokens(value)
    if kind_name not in KNOWN_TYPES:  # opaque: counted by its whole JSON, never less
        media = math.ceil(len(payload_json) / MEDIA_CHARS_PER_TOKEN)
    return ParsedItem(
        kind=kind,
        role=role,
        text=derived_text(value) or f"[{kind_name}]",
        payload=value,
        payload_json=payload_json,
        item_type=kind_name,
        link=link,
        media_tokens=media + _encrypted_tokens(value),
        counted_text=derived_text(value, clip=None),
    )


def _check_link(payload: Mapping[str, Any], kind_name: str, link: str | None, field: str) -> None:
    names = _LINK_FIELD.get(kind_name)
    if names is None:
        return
    if link is None and kind_name in _LINK_OPTIONAL and payload.get(names[0]) is None:
        return  # server-executed: no link, complete alone
    if link is None or not 1 <= len(link) <= MAX_LINK_CHARS:
        raise ValidationError(
            f"{field}.{names[0]}", f"must be a string of 1-{MAX_LINK_CHARS} characters"
        )


#: Fields the Responses API requires to be text, by item type.
_TEXT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "function_call": ("name", "arguments"),
    "custom_tool_call": ("name", "input"),
}


def _check_fields(payload: Mapping[str, Any], kind_name: str, field: str) -> None:
    """Refuse what the Responses API refuses in the types memstore reads."""
    for name in _TEXT_FIELDS.get(kind_name, ()):
        if not isinstance(payload.get(name), str):
            raise ValidationError(f"{field}.{name}", f"must be text, got {payload.get(name)!r}")
    if kind_name == MESSAGE and isinstance(payload.get("content"), list):
        for index, part in enumerate(payload["content"]):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise ValidationError(
                    f"{field}.content[{index}]",
                    f"must be a content part (an object with a type), got {part!r:.60}",
                )


def _kind_and_role(
    payload: Mapping[str, Any], kind_name: str, field: str
) -> tuple[MemoryKind, MemoryRole]:
    if kind_name == MESSAGE:
        if not isinstance(payload.get("content"), (str, list)):
            raise ValidationError(f"{field}.content", "must be text or a list of content parts")
        role = payload.get("role")
        if not isinstance(role, str) or role not in _MESSAGE_ROLES:
            raise ValidationError(
                f"{field}.role", f"must be one of {', '.join(_MESSAGE_ROLES)}, got {role!r}"
            )
        return _MESSAGE_ROLES[role]
    if kind_name in OUTPUT_TYPES:
        return MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL
    if kind_name == REASONING:
        return MemoryKind.DECISION, MemoryRole.ASSISTANT
    return MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT


def _check_json(value: Any, field: str, depth: int = 0) -> None:
    """Raise unless ``value`` survives ``json.dumps`` then ``json.loads`` unchanged."""
    if depth > MAX_DEPTH:
        raise ValidationError(field, f"nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        check_storable(field, value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:  # Python refuses to print longer ints
            raise ValidationError(field, "is an integer too long to carry as JSON")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(field, f"{value} is not a JSON number")
    elif isinstance(value, list):
        for index, element in enumerate(value):
            _check_json(element, f"{field}[{index}]", depth + 1)
    elif isinstance(value, dict):
        for key, element in value.items():
            if not isinstance(key, str):
                raise ValidationError(field, f"has a key that is not a string: {key!r}")
            _check_json(element, f"{field}.{key}", depth + 1)
    else:
        raise ValidationError(field, f"is not a JSON value: {type(value).__name__}")


# -- derived text -------------------------------------------------------------------------


def derived_text(payload: Mapping[str, Any], clip: int | None = MAX_DERIVED_FIELD_CHARS) -> str:
    """The text memstore reads of an item (module docstring); ``""`` if it has none.

    A hosted call's fields, and an output that is not text, are shown as JSON, clipped to
    ``clip`` characters for display and summaries (tokens are counted unclipped).
    """
    kind = item_type(payload)
    if kind == MESSAGE:
        return _parts_text(payload.get("content"))
    if kind == REASONING:
        return "\n".join(
            part["text"]
            for part in (*_dicts(payload.get("summary")), *_dicts(payload.get("content")))
            if isinstance(part.get("text"), str)
        ).strip()
    if kind in ("function_call", "custom_tool_call"):
        arguments = payload.get("arguments", payload.get("input", ""))
        return f"{payload.get('name', '?')}({arguments if isinstance(arguments, str) else ''})"
    if kind in OUTPUT_TYPES:
        output = payload.get("output")
        text = _parts_text(output) if not isinstance(output, dict) else ""
        return text or _fields_text(payload, ("type", "call_id", "id", "status"), clip)
    return f"[{kind}] " + _fields_text(payload, ("type", "id", "status"), clip)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [part for part in value if isinstance(part, dict)] if isinstance(value, list) else []


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    pieces = []
    for part in _dicts(content):
        kind = part.get("type")
        if isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(f"[refusal] {part['refusal']}")
        elif kind in ("input_image", "computer_screenshot"):
            pieces.append("[image]")
        elif kind == "input_file":
            pieces.append(f"[file {part.get('filename') or part.get('file_id') or ''}]".strip())
        elif kind == "input_audio":
            pieces.append("[audio]")
    return "\n".join(pieces).strip()


def _fields_text(payload: Mapping[str, Any], skip: tuple[str, ...], clip: int | None) -> str:
    shown = {k: v for k, v in payload.items() if k not in skip and k not in _MEDIA_FIELDS}
    text = json.dumps(shown, ensure_ascii=False) if shown else ""
    return text if clip is None else text[:clip]


# -- tokens -------------------------------------------------------------------------------


def _media_tokens(value: Any) -> int:
    if isinstance(value, list):
        return sum(_media_tokens(element) for element in value)
    if not isinstance(value, dict):
        return 0
    tokens = sum(_media_tokens(v) for k, v in value.items() if k not in _MEDIA_FIELDS)
    kind = value.get("type")
    if kind in ("input_image", "computer_screenshot"):
        low = value.get("detail") == "low"
        tokens += LOW_DETAIL_IMAGE_TOKENS if low else IMAGE_TOKENS
    elif kind in ("input_file", "input_audio"):
        audio = value.get("input_audio")
        data = value.get("file_data", audio.get("data") if isinstance(audio, dict) else None)
        if isinstance(data, str):
            tokens += math.ceil(len(data) / MEDIA_CHARS_PER_TOKEN)
        else:
            tokens += FILE_REFERENCE_TOKENS
    return tokens


def _encrypted_tokens(payload: Mapping[str, Any]) -> int:
    blob = payload.get("encrypted_content")
    return math.ceil(len(blob) / MEDIA_CHARS_PER_TOKEN) if isinstance(blob, str) else 0


def count_tokens(parsed: ParsedItem, count: Callable[[str], int]) -> int:
    """The item's estimated tokens: ``count`` (the session's estimator) over its derived
    text, plus what is counted by rule (module docstring)."""
    return count(parsed.counted_text) + parsed.media_tokens
