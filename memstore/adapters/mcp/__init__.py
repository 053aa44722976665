"""memstore over the Model Context Protocol: what ``memstore mcp`` serves.

The server is a thin renderer over the public API, like the CLI: every tool and resource calls
:class:`~memstore.memory.store.MemoryStore`, a session handle or ``store.ltm``, and renders what
comes back. Its parts, top to bottom:

* :mod:`memstore.adapters.mcp.server`: the MCP SDK's low-level ``Server`` (tool calls, resource
  reads, errors as MCP tool errors), served over stdio;
* :mod:`memstore.adapters.mcp.http`: the same server over streamable HTTP (the bind check and the
  bearer token);
* :mod:`memstore.adapters.mcp.tools` and :mod:`memstore.adapters.mcp.resources`: the tools (names,
  JSON schemas, handlers) and resources (``memstore://sessions/{id}``, ``memstore://ltm/{scope}``),
  which know nothing of the SDK;
* :mod:`memstore.adapters.mcp.render`: stored text labelled as data exactly as in the model input.

Only ``server`` and ``http`` import the SDK (the ``mcp`` extra): this package imports without it.
"""
