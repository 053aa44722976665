"""``memstore mcp`` as a process of its own: over stdio (the SDK's stdio client launches it) and
over streamable HTTP on a loopback port (the SDK's HTTP client), with its bearer token."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from clients import memstore_cli, memstore_command, tool_text
from conftest import new_session_limits
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from memstore import MemoryLimits, MemoryStore

TOKEN = "s3cret-token-0123456789abcdef"
#: Long enough for a loaded machine to start a Python process and print one line.
START_TIMEOUT_S = 60


def stdio_server(db: Path | str, *args: str, errlog: Any) -> Any:
    """The SDK's stdio transport, launching ``memstore --db DB mcp ARGS``."""
    command, *before = memstore_command()
    params = StdioServerParameters(
        command=command, args=[*before, "--db", str(db), "mcp", *args], env=dict(os.environ)
    )
    return stdio_client(params, errlog=errlog)


async def test_over_stdio_a_client_launches_the_server_and_writes(db_path: Path) -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_server(db_path, "--scope", "user:alice", errlog=errlog)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            saved = await client.call_tool("remember", {"key": "editor", "value": "vim"})
            appended = await client.call_tool(
                "append_to_session", {"session_id": "s", "content": "hello", "role": "user"}
            )
            refused = await client.call_tool("recall", {"key": "editor", "scope": "global"})
        errlog.seek(0)
        logged = errlog.read()
    assert {"remember", "append_to_session", "show_session"} <= tools
    assert tool_text(saved) == "Saved in scope user:alice at version 1."
    assert tool_text(appended).startswith("Appended item #1 to session s: USER_MESSAGE")
    assert refused.is_error and "confined to scope 'user:alice'" in tool_text(refused)
    assert "Traceback" not in logged
    async with MemoryStore.open(db_path) as store:
        entry = await store.ltm.get("editor", scope="user:alice")
        assert entry is not None and entry.value == "vim"
        assert [item.content for item in await (await store.attach("s")).items()] == ["hello"]


async def test_two_servers_share_one_session_and_keep_its_ledger(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two server processes append to one session at once, compacting it as they go."""
    new_session_limits(monkeypatch, MemoryLimits(hard=80, target=50, keep_recent=2))

    async def append_all(client: Any, worker: int) -> None:
        for n in range(15):
            result = await client.call_tool(
                "append_to_session",
                {"session_id": "shared", "content": f"worker {worker} note {n}", "role": "tool"},
            )
            assert not result.is_error, tool_text(result)

    with tempfile.TemporaryFile("w+") as errlog:
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(Client(stdio_server(backend_url, errlog=errlog)))
                for _ in range(2)
            ]
            await asyncio.gather(*(append_all(c, n) for n, c in enumerate(clients)))
    async with MemoryStore.open(backend_url) as store:
        info = await store.session_info("shared")
        assert await store.check("shared") == []
    assert info.items_total == 30 and info.compaction_count >= 2
    assert info.total_tokens <= 80


@contextmanager
def http_server(db: Path, address: str, token: str | None) -> Iterator[str]:
    """``memstore mcp --http ADDRESS`` running; yields the URL it printed."""
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_MCP_TOKEN"}
    if token is not None:
        env["MEMSTORE_MCP_TOKEN"] = token
    command = [*memstore_command(), "--db", str(db), "mcp", "--http", address]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], START_TIMEOUT_S)
        line = process.stderr.readline() if ready else ""
        assert "streamable HTTP on http://" in line, line
        yield line.split(" on ", 1)[1].split()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)


async def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    """One raw MCP request (``initialize``), as any HTTP client would send it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        return await http.post(url, json=body, headers=accept | headers)


async def list_and_remember(url: str, headers: dict[str, str]) -> str:
    """Through the SDK's streamable HTTP client: list the tools, remember one entry."""
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        assert "recall" in {tool.name for tool in (await client.list_tools()).tools}
        return tool_text(await client.call_tool("remember", {"key": "k", "value": "v"}))


@pytest.mark.parametrize("address", ["127.0.0.1:0", "0.0.0.0:0"])
async def test_over_http_every_request_needs_the_token(db_path: Path, address: str) -> None:
    with http_server(db_path, address, TOKEN) as url:
        url = url.replace("0.0.0.0", "127.0.0.1")
        missing = await post_initialize(url, {})
        wrong = await post_initialize(url, {"Authorization": "Bearer " + "x" * len(TOKEN)})
        scheme = await post_initialize(url, {"Authorization": "Basic " + TOKEN})
        saved = await list_and_remember(url, {"Authorization": f"Bearer {TOKEN}"})
    for refused in (missing, wrong, scheme):
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert saved == "Saved in scope global at version 1."


async def test_over_loopback_http_no_token_is_needed(db_path: Path) -> None:
    with http_server(db_path, "127.0.0.1:0", None) as url:
        saved = await list_and_remember(url, {})
        rebound = await post_initialize(url, {"Host": "attacker.example"})
    assert saved == "Saved in scope global at version 1."
    assert rebound.status_code in (403, 421)  # the SDK's DNS-rebinding guard


def test_a_non_loopback_bind_without_a_token_is_refused(db_path: Path) -> None:
    result = memstore_cli(db_path, "mcp", "--http", "0.0.0.0:0")
    assert result.returncode == 2
    assert "'--http': 0.0.0.0 is not a loopback address" in result.stderr
    assert "MEMSTORE_MCP_TOKEN" in result.stderr and "Traceback" not in result.stderr
    assert not db_path.exists()
