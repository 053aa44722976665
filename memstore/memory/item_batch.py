"""A batch of Responses items, validated and counted before any transaction starts.

:meth:`SessionMemory.add_items <memstore.memory.session.SessionMemory.add_items>` turns what the
caller gave into appends here: each item parsed (:mod:`memstore.core.carried_items`), counted by
the session's estimator, given its priority, its kind (``DECISION`` for the outputs the
caller names), and the batch's idempotency key. Bad input raises before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memstore.core.carried_items import count_tokens, parse_item
from memstore.core.validation import MAX_IDEMPOTENCY_KEY_CHARS
from memstore.core.values import MemoryKind, MemoryRole, Priority, parse_priority
from memstore.db.append import NewItem, batch_key
from memstore.errors import ValidationError

PriorityLike = Priority | str | int


def new_items(
    items: Sequence[Mapping[str, Any]],
    priority: PriorityLike | Sequence[PriorityLike],
    key: str | None,
    decisions: frozenset[int],
    *,
    max_bytes: int,
    count: Callable[[str], int],
    handle: str | None = None,
    wait_seconds: float | None = None,
) -> list[NewItem]:
    """The appends of one batch, in order, recorded as added by ``handle``; a call (or
    reasoning) among them may wait ``wait_seconds`` for its output.

    Raises:
        ValidationError: ``items`` is not a list, a priority list of the wrong length, an
            item memstore cannot carry, or a decision index that is not a call's output.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise ValidationError("items", "must be a list of Responses items")
    if isinstance(priority, Sequence) and not isinstance(priority, str):
        if len(priority) != len(items):
            raise ValidationError("priority", "needs one priority per item")
        priorities = [parse_priority(p) for p in priority]
    else:
        priorities = [parse_priority(priority)] * len(items)
    if key is not None and len(str(batch_key(key, len(items) - 1))) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise ValidationError(
            "idempotency_key",
            f"leaves no room to number a batch of {len(items)} items ({MAX_IDEMPOTENCY_KEY_CHARS}"
            " characters at most, with the #N suffix)",
        )
    news = []
    for index, value in enumerate(items):
        parsed = parse_item(value, f"items[{index}]", max_bytes=max_bytes)
        kind, role = parsed.kind, parsed.role
        if index in decisions:
            if not parsed.is_output:
                raise ValidationError("decisions", f"items[{index}] is not a call's output")
            kind, role = MemoryKind.DECISION, MemoryRole.ASSISTANT
        news.append(
            NewItem(
                role=role,
                kind=kind,
                priority=priorities[index],
                content=parsed.text,
                # Counted before the transaction, like a text item: tokenizing must not
                # lengthen the write lock.
                estimated_tokens=count_tokens(parsed, count),
                idempotency_key=batch_key(key, index),
                payload_json=parsed.payload_json,
                call_id=parsed.link,
                is_output=parsed.is_output,
                field=f"items[{index}]",
                handle=handle,
                # What may wait for another item (a call, reasoning) waits this long at most.
                wait_seconds=wait_seconds if parsed.may_wait else None,
            )
        )
    return news
