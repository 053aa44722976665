"""What a server may touch: ``--read-only`` refuses every write, ``--scope`` confines long-term
memory to one scope. Through the SDK's client, in process, on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clients import mcp_client, tool_text
from conftest import add_worked_example, table_counts
from mcp.shared.exceptions import MCPError

from memstore import MemoryStore, WordEstimator

WRITES = [
    ("remember", {"key": "k", "value": "v"}),
    ("forget", {"key": "editor"}),
    ("append_to_session", {"session_id": "incident-42", "content": "more", "role": "user"}),
    ("consolidate", {"session_id": "incident-42"}),
]


@pytest.fixture
async def read_only_store(backend_url: str) -> AsyncIterator[MemoryStore]:
    """A populated database, reopened read-only as ``memstore mcp --read-only`` opens it."""
    async with MemoryStore.open(backend_url) as writable:
        await add_worked_example(writable)
        await writable.ltm.set("editor", "vim")
    async with MemoryStore.open(backend_url, read_only=True, create=False) as opened:
        yield opened


async def test_a_read_only_server_lists_no_writes_and_refuses_them(
    read_only_store: MemoryStore,
) -> None:
    before = await table_counts(read_only_store)
    async with mcp_client(read_only_store, read_only=True) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        refusals = [await client.call_tool(name, arguments) for name, arguments in WRITES]
        reads = [
            await client.call_tool("recall", {"key": "editor"}),
            await client.call_tool("show_session", {"session_id": "incident-42"}),
            await client.call_tool("compaction_reports", {"session_id": "incident-42"}),
        ]
    assert listed.isdisjoint(name for name, _ in WRITES) and "recall" in listed
    for (name, _), refusal in zip(WRITES, refusals, strict=True):
        assert refusal.is_error
        assert tool_text(refusal) == (
            f"{name}: this server is read-only (memstore mcp --read-only); nothing was written"
        )
    assert not any(result.is_error for result in reads)
    assert await table_counts(read_only_store) == before


@pytest.fixture
async def two_scopes(any_store: MemoryStore) -> MemoryStore:
    await any_store.ltm.set("editor", "vim", scope="user:alice")
    await any_store.ltm.set("editor", "emacs", scope="user:bob")
    await any_store.ltm.set("motd", "hello", scope="global")
    return any_store


async def test_a_pinned_scope_is_the_only_one_the_tools_touch(two_scopes: MemoryStore) -> None:
    async with mcp_client(two_scopes, scope="user:alice") as client:
        schema = next(t for t in (await client.list_tools()).tools if t.name == "remember")
        saved = await client.call_tool("remember", {"key": "lang", "value": "python"})
        listed = tool_text(await client.call_tool("list_memories", {}))
        recalled = tool_text(await client.call_tool("recall", {"key": "editor"}))
        refused = [
            await client.call_tool("remember", {"key": "k", "value": 1, "scope": "user:bob"}),
            await client.call_tool("recall", {"key": "editor", "scope": "user:bob"}),
            await client.call_tool("forget", {"key": "editor", "scope": "global"}),
            await client.call_tool("list_memories", {"scope": "user:bob"}),
        ]
    assert schema.input_schema["properties"]["scope"]["enum"] == ["user:alice"]
    assert tool_text(saved) == "Saved in scope user:alice at version 1."
    assert '"vim"' in listed and '"lang"' in listed
    assert "emacs" not in listed and "motd" not in listed
    assert '"vim"' in recalled
    for result in refused:
        assert result.is_error
        assert tool_text(result).startswith("scope: this server is confined to scope 'user:alice'")
    bob = await two_scopes.ltm.get("editor", scope="user:bob")
    assert bob is not None and bob.version == 1
    assert [e.key for e in await two_scopes.ltm.list(scope="user:bob")] == ["editor"]


async def test_a_pinned_scope_feeds_the_model_input_and_nothing_else(
    two_scopes: MemoryStore,
) -> None:
    await two_scopes.session("s", estimator=WordEstimator()).add("user", "Which editor?")
    async with mcp_client(two_scopes, scope="user:alice") as client:
        given = tool_text(await client.call_tool("build_model_input", {"session_id": "s"}))
        refused = await client.call_tool(
            "build_model_input", {"session_id": "s", "scopes": ["user:bob"]}
        )
    assert '\\"vim\\"' in given and "emacs" not in given
    assert refused.is_error and tool_text(refused).startswith("scopes: this server is confined")


async def test_a_pinned_scope_is_the_only_scope_resource(two_scopes: MemoryStore) -> None:
    async with mcp_client(two_scopes, scope="user:alice") as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        alice = await client.read_resource("memstore://ltm/user:alice")
        with pytest.raises(MCPError, match="confined to scope 'user:alice'"):
            await client.read_resource("memstore://ltm/user:bob")
    assert [uri for uri in uris if uri.startswith("memstore://ltm/")] == [
        "memstore://ltm/user:alice"
    ]
    assert '"vim"' in alice.contents[0].text


def test_a_read_only_database_file_stays_byte_identical(tmp_path: Path) -> None:
    """The read-only server opens the file read-only: nothing, not even its WAL, changes."""
    import asyncio

    from conftest import write_worked_example

    db = tmp_path / "ro.db"
    write_worked_example(db)
    before = db.read_bytes()

    async def serve_a_little() -> None:
        async with (
            MemoryStore.open(db, read_only=True, create=False) as store,
            mcp_client(store, read_only=True) as client,
        ):
            await client.call_tool("show_session", {"session_id": "incident-42"})
            await client.call_tool("remember", {"key": "k", "value": "v"})

    asyncio.run(serve_a_little())
    assert db.read_bytes() == before
