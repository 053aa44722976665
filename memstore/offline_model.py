"""``memstore.offline_model``: the scripted stand-in model server (the public import path; the
code lives in :mod:`memstore.model_side.stand_in_server`), and the fence of the "Relevant
memories" message a scripted brain may read in a request (``MEMORIES_OPEN``,
``MEMORIES_CLOSE``)."""

from memstore.model_side.stand_in_server import (
    STANDIN_MODEL,
    Brain,
    RecordedRequest,
    Reply,
    StandInModel,
    current_turn,
    error_reply,
    extractive_brain,
    input_items,
    is_summary_request,
    response_json,
    text_of,
    text_reply,
    tool_call_reply,
)
from memstore.render.input import MEMORIES_CLOSE, MEMORIES_OPEN

__all__ = [
    "MEMORIES_CLOSE",
    "MEMORIES_OPEN",
    "STANDIN_MODEL",
    "Brain",
    "RecordedRequest",
    "Reply",
    "StandInModel",
    "current_turn",
    "error_reply",
    "extractive_brain",
    "input_items",
    "is_summary_request",
    "response_json",
    "text_of",
    "text_reply",
    "tool_call_reply",
]
