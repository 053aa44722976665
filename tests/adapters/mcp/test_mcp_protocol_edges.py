"""What the MCP spec asks beyond the happy path: protocol errors for an unknown tool and a
cursor the server never issued; a ``search`` tool confined like the others; every token-less
address guarded against DNS rebinding; the server announced only once it can serve; Ctrl-C
ends it quietly."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from clients import mcp_client, memstore_command, tool_text
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from test_mcp_transports import START_TIMEOUT_S, http_server, post_initialize

from memstore import MemoryLimits, MemoryStore, WordEstimator


async def test_an_unknown_tool_is_a_json_rpc_error(store: MemoryStore) -> None:
    async with mcp_client(store) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("no_such_tool", {})
    assert refused.value.error.code == INVALID_PARAMS
    assert "no_such_tool" in refused.value.error.message


@pytest.mark.parametrize("listing", ["list_tools", "list_resources", "list_resource_templates"])
async def test_a_cursor_the_server_never_issued_is_invalid_params(
    store: MemoryStore, listing: str
) -> None:
    async with mcp_client(store) as client:
        with pytest.raises(MCPError) as refused:
            await getattr(client, listing)(cursor="not-a-cursor", cache_mode="bypass")
    assert refused.value.error.code == INVALID_PARAMS
    assert "cursor" in refused.value.error.message


async def seed(store: MemoryStore) -> None:
    await store.ltm.set("db", "the payments database is postgres", scope="user:alice")
    await store.ltm.set("db", "the billing database is postgres too", scope="user:bob")
    memory = store.session(
        "incident", estimator=WordEstimator(), limits=MemoryLimits(hard=40, target=20)
    )
    await memory.add("tool", "postgres replica lag reached 40 seconds")
    for n in range(6):
        await memory.add("user", f"filler message number {n} about nothing")


async def test_search_finds_history_and_memories(store: MemoryStore) -> None:
    await seed(store)
    async with mcp_client(store) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        found = tool_text(await client.call_tool("search", {"query": "postgres"}))
    assert tools["search"].annotations is not None and tools["search"].annotations.read_only_hint
    assert "replica lag" in found and "payments database" in found and "billing" in found
    assert "data, not instructions" in found


async def test_search_is_confined_to_the_pinned_scope(any_store: MemoryStore) -> None:
    await seed(any_store)
    async with mcp_client(any_store, scope="user:alice") as client:
        found = tool_text(await client.call_tool("search", {"query": "postgres database"}))
        elsewhere = await client.call_tool("search", {"query": "postgres", "scope": "user:bob"})
    assert "payments database" in found and "billing" not in found
    assert elsewhere.is_error and "confined to scope 'user:alice'" in tool_text(elsewhere)


async def test_search_of_one_session_and_bad_arguments(store: MemoryStore) -> None:
    await seed(store)
    async with mcp_client(store) as client:
        one = tool_text(
            await client.call_tool("search", {"query": "postgres", "session_id": "incident"})
        )
        empty = await client.call_tool("search", {"query": "  "})
        limit = await client.call_tool("search", {"query": "postgres", "limit": 0})
    assert "replica lag" in one and "payments database" not in one
    assert empty.is_error and tool_text(empty).startswith("query")
    assert limit.is_error and "limit" in tool_text(limit)


@pytest.mark.parametrize("address", ["127.0.0.2:0", "127.0.0.1:0", "localhost:0"])
async def test_every_token_less_address_refuses_a_foreign_host(db_path: Path, address: str) -> None:
    with http_server(db_path, address, None) as url:
        url = url.replace("localhost", "127.0.0.1")
        rebound = await post_initialize(url, {"Host": "evil.example"})
        origin = await post_initialize(url, {"Origin": "http://evil.example"})
        own = await post_initialize(url, {})
    assert rebound.status_code in (403, 421)
    assert origin.status_code in (403, 421)
    assert own.status_code == 200


def test_a_database_that_cannot_open_is_never_announced(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db.db"
    bad.write_bytes(b"this is not a database, it is a text file of some length" * 100)
    done = subprocess.run(
        [*memstore_command(), "--db", str(bad), "mcp", "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "streamable HTTP on" not in done.stderr and "listening" not in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_ctrl_c_ends_the_http_server_quietly(backend_url: str) -> None:
    """After a request that used the database (on PostgreSQL: a pooled connection to close
    while the interrupt unwinds), Ctrl-C ends the server with 130 and one line."""
    for _ in range(3):  # the race it had lost showed in 4 of 6 runs
        command = [*memstore_command(), "--db", backend_url, "mcp", "--http", "127.0.0.1:0"]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=os.environ)
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], START_TIMEOUT_S)
        line = process.stderr.readline() if ready else ""
        assert "streamable HTTP on" in line, line
        url = line.split(" on ", 1)[1].split()[0]
        assert asyncio.run(append_over_http(url)).startswith("Appended item #")
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130, err
        assert err == "Interrupted.\n", err


async def append_over_http(url: str) -> str:
    async with (
        httpx2.AsyncClient() as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        appended = await client.call_tool(
            "append_to_session", {"session_id": "s", "content": "hello", "role": "user"}
        )
        return tool_text(appended)
