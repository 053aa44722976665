"""Optional integrations with the frameworks users already run: the OpenAI Agents SDK session
(:mod:`memstore.adapters.agents_sdk`, extra ``agents``), the MCP server
(:mod:`memstore.adapters.mcp`, extra ``mcp``), and pydantic-ai's conversation store with a
history processor (:mod:`memstore.adapters.pydantic_ai`, extra ``pydantic-ai``). The first two
import without their framework installed; the pydantic-ai modules subclass pydantic-ai's own
store, so importing them without it raises an ``ImportError`` saying :data:`PYDANTIC_AI_MISSING`.
"""

#: What importing the pydantic-ai adapters without pydantic-ai says.
PYDANTIC_AI_MISSING = (
    "memstore.pydantic_ai needs pydantic-ai: install memstore's `pydantic-ai` extra "
    "(pydantic-ai-slim 2.68 or later)"
)
