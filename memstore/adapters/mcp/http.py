"""``memstore mcp --http HOST:PORT``: the server over streamable HTTP, guarded.

* **Loopback by default.** ``--http 8765`` (or ``:8765``) listens on 127.0.0.1. A loopback
  bind gets the SDK's DNS-rebinding protection: requests must name a loopback ``Host`` (and
  ``Origin``, when a browser sends one).
* **Anything else needs a token.** A bind to any other address (``0.0.0.0``, a LAN address,
  a host name that is not ``localhost``) is refused unless a bearer token is configured
  (:func:`memstore.config.mcp_token`).
* **A token is checked on every request**, whatever the bind: a request without
  ``Authorization: Bearer <token>``, or with another token, gets 401 before it reaches the
  MCP layer. The comparison takes the same time wherever the tokens differ
  (:func:`hmac.compare_digest`).

The socket is bound before the server starts (port 0 picks a free port, which the caller can
then print), and uvicorn serves the SDK's streamable HTTP app on ``/mcp``.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memstore.adapters.mcp.server import McpServer
from memstore.errors import ValidationError

#: Where ``--http PORT`` listens when no host is given: this machine only.
DEFAULT_HOST = "127.0.0.1"
#: The SDK's endpoint path, as clients expect it.
ENDPOINT = "/mcp"


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` as (host, port).

    Raises:
        ValidationError: naming ``http``: no port, or one outside 0-65535.
    """
    host, _, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port.isdigit() or int(port) > 65535:
        raise ValidationError("http", f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8765)")
    return host or DEFAULT_HOST, int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another host name: it may resolve anywhere
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token.

    Raises:
        ValidationError: naming ``http``: ``host`` is not loopback and ``token`` is ``None``.
    """
    if token is None and not is_loopback(host):
        raise ValidationError(
            "http",
            f"{host} is not a loopback address: serving it needs a bearer token "
            "(export MEMSTORE_MCP_TOKEN, or name another variable with --token-env)",
        )


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) and listening.

    Raises:
        OSError: the address is in use, not this machine's, or not allowed.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it a response written in two pieces waits
        # for the client's delayed ACK (Nagle), about 40 ms a call on Linux.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class BearerToken:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")

    def allows(self, scope: Scope) -> bool:
        """Whether the request's ``Authorization`` header carries the token."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self._token
                )
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.allows(scope):
            refusal = JSONResponse(
                {"error": "unauthorized", "detail": "send Authorization: Bearer <token>"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="memstore"'},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def http_app(server: McpServer, host: str, token: str | None) -> Any:
    """The ASGI app: the SDK's streamable HTTP endpoint, behind the token if there is one."""
    app: ASGIApp = server.server.streamable_http_app(streamable_http_path=ENDPOINT, host=host)
    return app if token is None else BearerToken(app, token)


async def serve_http(server: McpServer, sock: socket.socket, token: str | None) -> None:
    """Serve ``server`` on the bound ``sock`` until the process is interrupted."""
    host = sock.getsockname()[0]
    config = uvicorn.Config(http_app(server, host, token), log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
