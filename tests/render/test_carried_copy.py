"""A carried item reaches the model input as a copy: whatever the caller (an agent framework)
does to the input it was given never reaches the item it came from."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.render.input import item_message

PAYLOAD: dict[str, Any] = {
    "type": "message",
    "role": "assistant",
    "id": "msg_1",
    "content": [{"type": "output_text", "text": "Order 4 shipped.", "annotations": []}],
    "status": "completed",
}


def carried(payload: Any) -> MemoryItem:
    return MemoryItem(
        id="i1", session_id="s", seq=1, role=MemoryRole.ASSISTANT,
        kind=MemoryKind.ASSISTANT_MESSAGE, priority=Priority.NORMAL, content="Order 4 shipped.",
        timestamp=datetime.now(UTC), estimated_tokens=3, payload=payload,
    )  # fmt: skip


def test_the_message_is_equal_in_order_and_shares_nothing() -> None:
    payload = json.loads(json.dumps(PAYLOAD))
    item = carried(payload)
    message = item_message(item)
    assert json.dumps(message) == json.dumps(PAYLOAD)  # the same keys, in the same order
    message["content"][0]["annotations"].append({"type": "url_citation"})
    message["content"].append({"type": "output_text", "text": "injected"})
    message["status"] = "incomplete"
    assert payload == PAYLOAD  # the item's own payload is untouched, however deep


def test_any_mapping_comes_back_as_a_plain_dict() -> None:
    message = item_message(carried(MappingProxyType(json.loads(json.dumps(PAYLOAD)))))
    assert type(message) is dict and message == PAYLOAD
