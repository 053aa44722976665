"""A stored pydantic-ai message as plain text and tokens, read from pydantic-ai's JSON; and a
history cut into the units compaction keeps whole."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from memstore.core.carried_items import IMAGE_TOKENS, MEDIA_CHARS_PER_TOKEN
from memstore.core.conversation_text import media_tokens, message_role, message_text
from memstore.core.conversation_units import message_units, unit_items
from memstore.core.values import MemoryKind, MemoryRole


def as_json(*messages: ModelMessage) -> list[dict[str, object]]:
    return json.loads(ModelMessagesTypeAdapter.dump_json(list(messages)))  # type: ignore[no-any-return]


def test_each_part_says_who_speaks() -> None:
    request, response = as_json(
        ModelRequest(
            parts=[
                SystemPromptPart("Be brief."),
                UserPromptPart(
                    [
                        "Look:",
                        BinaryContent(b"\x00" * 300, media_type="image/png"),
                        ImageUrl("https://example.com/a.png"),
                    ]
                ),
                ToolReturnPart("lookup", {"status": "shipped"}, tool_call_id="c1"),
            ]
        ),
        ModelResponse(
            parts=[ThinkingPart("hmm"), TextPart("Done."), ToolCallPart("lookup", {"order": 4})]
        ),
    )
    assert message_text(request).splitlines() == [
        "system: Be brief.",
        "user: Look: [binary image/png, 300 bytes] [image-url https://example.com/a.png]",
        'tool lookup: {"status": "shipped"}',
    ]
    assert message_text(response).splitlines() == [
        "thinking: hmm",
        "assistant: Done.",
        'call lookup({"order": 4})',
    ]
    assert message_role(request) == "request" and message_role(response) == "response"
    assert media_tokens(request) == 2 * IMAGE_TOKENS
    audio = as_json(
        ModelRequest([UserPromptPart([BinaryContent(b"a" * 300, media_type="audio/wav")])])
    )
    assert media_tokens(audio[0]) == math.ceil(400 / MEDIA_CHARS_PER_TOKEN)  # 400 base64 chars
    summary = as_json(ModelRequest([CompactionPart("Earlier: order 4.")]))[0]
    assert message_text(summary) == "summary: Earlier: order 4."
    assert message_text({"parts": "not a list"}) == ""


def test_calls_and_their_results_are_one_unit() -> None:
    history = as_json(
        ModelRequest([SystemPromptPart("Be brief.")]),
        ModelRequest([UserPromptPart("Where is order 4?")]),
        ModelResponse([ToolCallPart("lookup", {"order": 4}, tool_call_id="c1")]),
        ModelRequest([ToolReturnPart("lookup", "shipped", tool_call_id="c1")]),
        ModelResponse([TextPart("It shipped.")]),
        ModelRequest([ToolReturnPart("lookup", "late result", tool_call_id="c9")]),
    )
    units = message_units(history)
    assert [(u.start, u.stop, u.opener) for u in units] == [
        (0, 1, "system"),
        (1, 2, "user"),
        (2, 4, "calls"),
        (4, 5, "answer"),
        (5, 6, "calls"),  # a result after an answer: its call came before (a window)
    ]
    items = unit_items(units, lambda text: len(text.split()), datetime.now(UTC))
    assert [(i.kind, i.role) for i in items] == [
        (MemoryKind.DECISION, MemoryRole.DEVELOPER),
        (MemoryKind.USER_MESSAGE, MemoryRole.USER),
        (MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL),
        (MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT),
        (MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL),
    ]
    assert items[2].content == 'call lookup({"order": 4})\ntool lookup: shipped'
    assert items[2].estimated_tokens == 6  # the words of those two lines
