"""Optional integrations with the frameworks users already run: the OpenAI Agents SDK session
(:mod:`memstore.adapters.agents_sdk`, extra ``agents``) and the MCP server
(:mod:`memstore.adapters.mcp`, extra ``mcp``). Each imports without its framework installed.
"""
