"""``memstore.agent``: the Responses API agent (the public import path; the code lives in
:mod:`memstore.model_side.agent` and :mod:`memstore.model_side.agent_tools`)."""

from memstore.model_side.agent import DEFAULT_INSTRUCTIONS, Agent, TurnResult
from memstore.model_side.agent_tools import Tool, ToolCall, check_arguments, memory_tools

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Agent",
    "Tool",
    "ToolCall",
    "TurnResult",
    "check_arguments",
    "memory_tools",
]
