"""``memstore.offline_model``: the scripted stand-in model server (the public import path; the
code lives in :mod:`memstore.model_side.stand_in_server`)."""

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

__all__ = [
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
