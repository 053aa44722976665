"""``memstore.agent``: the Responses API agent (the public import path; the code lives in
:mod:`memstore.model_side.agent` and :mod:`memstore.model_side.agent_tools`), and the OpenAI
client it is given (:func:`make_client` from :class:`ModelSettings`)."""

from memstore.config import ModelSettings
from memstore.model_side.agent import DEFAULT_INSTRUCTIONS, Agent, TurnResult
from memstore.model_side.agent_tools import Tool, ToolCall, check_arguments, memory_tools
from memstore.model_side.openai_call import make_client

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Agent",
    "ModelSettings",
    "Tool",
    "ToolCall",
    "TurnResult",
    "check_arguments",
    "make_client",
    "memory_tools",
]
