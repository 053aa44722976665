"""``memstore mcp``: serve the ``--db`` database over the Model Context Protocol.

The server lives in :mod:`memstore.adapters.mcp`; this command checks the options, binds the HTTP
socket if asked, opens the store the way the other commands do (read-only with
``--read-only``) and serves until the client leaves (stdio) or the process is interrupted.
Without the SDK (the ``mcp`` extra) it says how to install it, in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memstore import MemoryStore
from memstore.cli.output import embedder_option, run_with_store
from memstore.config import MCP_TOKEN_VARIABLE, mcp_token
from memstore.core.ltm_entries import validate_scope

if TYPE_CHECKING:
    import socket

INSTALL_HINT = "memstore mcp needs the MCP SDK: in memstore's checkout, pip install '.[mcp]'"


@click.command("mcp")
@click.option(
    "--http",
    "address",
    metavar="HOST:PORT",
    default=None,
    help="Serve streamable HTTP on HOST:PORT (HOST: 127.0.0.1 if omitted; port 0 picks a "
    "free one) instead of stdio.",
)
@click.option(
    "--scope",
    default=None,
    help="Pin long-term memory and sessions to this scope (user:alice).",
)
@click.option("--read-only", is_flag=True, help="Refuse every write; open the database read-only.")
@click.option(
    "--token-env",
    metavar="VAR",
    default=None,
    help=f"With --http: the environment variable holding the bearer token every request must "
    f"carry (default {MCP_TOKEN_VARIABLE}; required to bind beyond loopback).",
)
@embedder_option
@click.pass_context
def mcp_serve(
    ctx: click.Context,
    address: str | None,
    scope: str | None,
    read_only: bool,
    token_env: str | None,
) -> None:
    """Serve the database over the Model Context Protocol (stdio, or streamable HTTP)."""
    if scope is not None:
        validate_scope(scope)
    if address is None and token_env is not None:
        raise click.UsageError("--token-env goes with --http (a stdio server has no token)")
    try:
        from memstore.adapters.mcp.server import McpServer, new_session_estimator, serve_stdio
    except ImportError as error:
        if (error.name or "").partition(".")[0] != "mcp":  # a broken install: let it show
            raise
        raise click.ClickException(INSTALL_HINT) from None

    sock: socket.socket | None = None
    token: str | None = None
    if address is not None:
        from memstore.adapters.mcp.http import ENDPOINT, check_bind, listen, parse_address

        host, port = parse_address(address)
        token = mcp_token(token_env)
        check_bind(host, token)
        try:
            sock = listen(host, port)
        except OSError as error:
            raise click.ClickException(f"cannot listen on {address}: {error.strerror}") from None

    async def serve(store: MemoryStore) -> None:
        estimator = await new_session_estimator()
        server = McpServer(store, scope=scope, read_only=read_only, estimator=estimator)
        if sock is None:
            await serve_stdio(server)
        else:
            from memstore.adapters.mcp.http import serve_http

            # Announced only now, with the database open: a client that reads this line
            # (a test, a supervisor) never connects to a server that is about to fail.
            bound_host, bound_port = sock.getsockname()[:2]
            shown = f"[{bound_host}]" if ":" in bound_host else bound_host
            guard = "bearer token required" if token else "loopback only, no token"
            click.echo(
                f"memstore mcp: streamable HTTP on http://{shown}:{bound_port}{ENDPOINT} ({guard})",
                err=True,
            )
            await serve_http(server, sock, token)

    try:  # Ctrl-C stops the server (exit 130): every write has committed or never began
        run_with_store(ctx, serve, create=not read_only, read_only=read_only)
    finally:
        if sock is not None:
            sock.close()
