"""``memstore.openai_agents``: the OpenAI Agents SDK session (the public import path; the code
lives in :mod:`memstore.adapters.agents_sdk`)."""

from memstore.adapters.agents_sdk import MemstoreSession

__all__ = ["MemstoreSession"]
