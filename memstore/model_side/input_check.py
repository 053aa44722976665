"""After each model request: how far memstore's count of it was from the model's.

memstore bounds working memory by its own count; the model bills and refuses by its own.
When a response reports ``usage.input_tokens``, the agent records memstore's count of the
same request (memory, instructions and tool schemas: :func:`memstore.core.input_counts.
request_tokens`) beside it, and ``memstore show`` reports how the two compared, so a user
sees whether the estimator fits the model before a miscount overflows its window.

Recording is an observation, not part of the turn: if it fails, the turn goes on (a warning
in the log says why).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from memstore.core.input_counts import request_tokens
from memstore.errors import MemstoreError
from memstore.memory.session import SessionMemory
from memstore.model_side.openai_call import usage_of

log = logging.getLogger("memstore.agent")


async def check_input_count(
    memory: SessionMemory, model: str, request: Mapping[str, Any], response: Any
) -> tuple[int, int] | None:
    """Record memstore's count of ``request`` beside the model's, if it reported one.

    Returns:
        (memstore's count, the model's), or ``None`` when the response reported none.
    """
    reported = (usage_of(response) or {}).get("input_tokens")
    if not isinstance(reported, int) or reported <= 0:
        return None
    estimated = request_tokens(request, memory.estimator.count)
    try:
        await memory.record_input_count(model, estimated, reported)
    except MemstoreError as error:
        log.warning("memstore: could not record the input count of a request (%s)", error)
    return estimated, reported
