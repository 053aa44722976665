"""Sessions under ``--scope``: a pinned server serves the sessions of its scope and of no scope,
refuses any other before writing, and creates sessions in its scope; an unpinned one serves
every session. Through the SDK's client, in process, on each backend."""

from __future__ import annotations

import json

import pytest
from clients import mcp_client, tool_text
from conftest import table_counts
from mcp.shared.exceptions import MCPError

from memstore import MemoryStore, WordEstimator

ALICE = "user:alice"
REFUSED = (
    "session_id: this server is confined to scope 'user:alice'; "
    "session 'b-1' belongs to another scope"
)
BOB_CALLS = [
    ("append_to_session", {"session_id": "b-1", "content": "more", "role": "user"}),
    ("build_model_input", {"session_id": "b-1"}),
    ("show_session", {"session_id": "b-1"}),
    ("compaction_reports", {"session_id": "b-1"}),
    ("consolidate", {"session_id": "b-1"}),
    ("consolidate", {"session_id": "b-1", "dry_run": True}),
    ("search", {"query": "mango", "session_id": "b-1"}),
    ("search", {"query": "mango", "session_id": "b-1", "scope": ALICE}),
]


@pytest.fixture
async def three_sessions(any_store: MemoryStore) -> MemoryStore:
    """Alice's session, Bob's, and one recorded in no scope, each with its own fruit."""
    for session_id, scope, text in [
        ("a-1", ALICE, "My secret fruit is kiwi, I prefer kiwi."),
        ("b-1", "user:bob", "My secret fruit is mango, I prefer mango."),
        ("old-1", None, "My secret fruit is papaya, I prefer papaya."),
    ]:
        memory = any_store.session(session_id, estimator=WordEstimator(), scope=scope)
        await memory.add("user", text)
        await memory.add("assistant", f"Noted about {session_id}.")
    return any_store


async def test_a_pinned_search_never_returns_another_scopes_session(
    three_sessions: MemoryStore,
) -> None:
    async with mcp_client(three_sessions, scope=ALICE) as client:
        everywhere = tool_text(await client.call_tool("search", {"query": "secret fruit"}))
        mango = tool_text(await client.call_tool("search", {"query": "mango"}))
        own = tool_text(await client.call_tool("search", {"query": "fruit", "session_id": "a-1"}))
        old = tool_text(await client.call_tool("search", {"query": "fruit", "session_id": "old-1"}))
        absent = await client.call_tool("search", {"query": "fruit", "session_id": "nobody"})
        refused = await client.call_tool("search", {"query": "fruit", "session_id": "b-1"})
    assert "kiwi" in everywhere and "papaya" in everywhere
    assert "mango" not in everywhere and "b-1" not in everywhere
    assert mango == "No stored text matches those words."
    assert "kiwi" in own and "papaya" not in own
    assert "papaya" in old and "kiwi" not in old
    assert tool_text(absent) == "No stored text matches those words."
    assert refused.is_error and tool_text(refused) == REFUSED
    assert "mango" not in tool_text(refused)


async def test_a_pinned_server_refuses_another_scopes_session_and_writes_nothing(
    three_sessions: MemoryStore,
) -> None:
    before = await table_counts(three_sessions)
    bob = await three_sessions.session_info("b-1")
    async with mcp_client(three_sessions, scope=ALICE) as client:
        results = [await client.call_tool(name, arguments) for name, arguments in BOB_CALLS]
        with pytest.raises(MCPError) as raised:
            await client.read_resource("memstore://sessions/b-1")
    for (name, _), result in zip(BOB_CALLS, results, strict=True):
        assert result.is_error, name
        assert tool_text(result) == REFUSED, name
    assert str(raised.value) == REFUSED
    assert await table_counts(three_sessions) == before
    assert await three_sessions.session_info("b-1") == bob
    assert await three_sessions.ltm.list() == []


async def test_a_pinned_server_creates_sessions_in_its_scope(three_sessions: MemoryStore) -> None:
    async with mcp_client(three_sessions, scope=ALICE) as client:
        appended = await client.call_tool(
            "append_to_session",
            {"session_id": "a-2", "content": "Which fruit do I prefer?", "role": "user"},
        )
    assert not appended.is_error
    assert (await three_sessions.session_info("a-2")).scope == ALICE
    # So its recall spans Alice's sessions and no other.
    memory = await three_sessions.attach("a-2", recall_budget=200)
    given = json.dumps(await memory.build_model_input(recall="secret fruit prefer"))
    assert "kiwi" in given and "mango" not in given and "papaya" not in given


async def test_a_pinned_server_still_serves_an_unscoped_session(
    three_sessions: MemoryStore,
) -> None:
    async with mcp_client(three_sessions, scope=ALICE) as client:
        results = [
            await client.call_tool(
                "append_to_session", {"session_id": "old-1", "content": "More.", "role": "user"}
            ),
            await client.call_tool("build_model_input", {"session_id": "old-1"}),
            await client.call_tool("show_session", {"session_id": "old-1"}),
            await client.call_tool("compaction_reports", {"session_id": "old-1"}),
            await client.call_tool("consolidate", {"session_id": "old-1", "dry_run": True}),
        ]
        (audit,) = (await client.read_resource("memstore://sessions/old-1")).contents
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
    assert not any(result.is_error for result in results)
    assert "Appended item #3 to session old-1" in tool_text(results[0])
    assert "papaya" in tool_text(results[2])
    assert json.loads(audit.text)["session"]["id"] == "old-1"
    info = await three_sessions.session_info("old-1")
    assert info.scope is None and info.items_total == 3
    assert sorted(uri for uri in uris if uri.startswith("memstore://sessions/")) == [
        "memstore://sessions/a-1",
        "memstore://sessions/old-1",
    ]


async def test_an_unpinned_server_serves_every_session(three_sessions: MemoryStore) -> None:
    async with mcp_client(three_sessions) as client:
        everywhere = tool_text(await client.call_tool("search", {"query": "secret fruit"}))
        bob = tool_text(await client.call_tool("search", {"query": "fruit", "session_id": "b-1"}))
        shown = await client.call_tool("show_session", {"session_id": "b-1"})
        appended = await client.call_tool(
            "append_to_session", {"session_id": "n-1", "content": "Hello.", "role": "user"}
        )
        (audit,) = (await client.read_resource("memstore://sessions/b-1")).contents
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
    assert all(fruit in everywhere for fruit in ("kiwi", "mango", "papaya"))
    assert "mango" in bob and "kiwi" not in bob
    assert not shown.is_error and "mango" in tool_text(shown)
    assert not appended.is_error
    assert (await three_sessions.session_info("n-1")).scope is None
    assert json.loads(audit.text)["session"]["id"] == "b-1"
    assert sorted(uri for uri in uris if uri.startswith("memstore://sessions/")) == [
        "memstore://sessions/a-1",
        "memstore://sessions/b-1",
        "memstore://sessions/n-1",
        "memstore://sessions/old-1",
    ]


async def test_a_model_input_recalls_across_the_scope_and_never_beyond(
    three_sessions: MemoryStore,
) -> None:
    fresh = three_sessions.session("a-2", estimator=WordEstimator(), scope=ALICE)
    await fresh.add("user", "Hello again.")
    async with mcp_client(three_sessions, scope=ALICE) as client:
        recalled = tool_text(await client.call_tool(
            "build_model_input", {"session_id": "a-2", "recall": "secret fruit"}
        ))  # fmt: skip
        plain = tool_text(await client.call_tool("build_model_input", {"session_id": "a-2"}))
        blank = await client.call_tool("build_model_input", {"session_id": "a-2", "recall": " "})
    shown = "\n".join(message["content"] for message in json.loads(recalled))
    assert "kiwi" in shown and '"session":"a-1"' in shown  # another session of the scope
    assert "mango" not in recalled and "papaya" not in recalled  # never another scope's
    assert "kiwi" not in plain  # recall only when asked
    assert blank.is_error and "recall" in tool_text(blank)


async def test_a_scope_searches_its_sessions_and_its_memories(three_sessions: MemoryStore) -> None:
    """``scope`` means what it means in ``store.search``: the scope's entries and the history
    of the sessions recorded in it, on a pinned server as on an unpinned one."""
    await three_sessions.ltm.set("fruit", "kiwi, the secret fruit", scope=ALICE)
    await three_sessions.ltm.set("fruit", "mango, the secret fruit", scope="user:bob")
    async with mcp_client(three_sessions) as client:
        alice = tool_text(await client.call_tool("search", {"query": "fruit", "scope": ALICE}))
        with_old = tool_text(await client.call_tool(
            "search", {"query": "fruit", "scope": ALICE, "session_id": "old-1"}
        ))  # fmt: skip
    async with mcp_client(three_sessions, scope=ALICE) as client:
        pinned = tool_text(await client.call_tool("search", {"query": "fruit", "scope": ALICE}))
        own = tool_text(await client.call_tool("search", {"query": "fruit", "session_id": "a-1"}))
    for found in (alice, pinned):
        assert "I prefer kiwi" in found and "kiwi, the secret fruit" in found
        assert "mango" not in found and "papaya" not in found
    assert "I prefer kiwi" in with_old and "papaya" in with_old and "mango" not in with_old
    # A session alone is its history: no memories, on a pinned server too.
    assert "I prefer kiwi" in own and "kiwi, the secret fruit" not in own


async def test_a_new_sessions_input_is_previewed_and_nothing_written(
    three_sessions: MemoryStore,
) -> None:
    """A returning user's fresh session: the input it would start with, its scope's memories
    and (with ``recall``) what its other sessions said, on a pinned server by default and on
    an unpinned one for the scope asked for. No session is created."""
    await three_sessions.ltm.set("fruit", "kiwi", scope=ALICE)
    before = await table_counts(three_sessions)
    async with mcp_client(three_sessions, scope=ALICE) as client:
        pinned = tool_text(await client.call_tool(
            "build_model_input", {"session_id": "a-new", "recall": "secret fruit"}
        ))  # fmt: skip
    async with mcp_client(three_sessions) as client:
        unpinned = tool_text(await client.call_tool(
            "build_model_input", {"session_id": "a-new", "scopes": [ALICE], "recall": "fruit"}
        ))  # fmt: skip
        nothing = await client.call_tool("build_model_input", {"session_id": "a-new"})
    for shown in (pinned, unpinned):
        text = "\n".join(message["content"] for message in json.loads(shown))
        assert '"key":"fruit","value":"kiwi"' in text  # the scope's memories
        assert "I prefer kiwi" in text and '"session":"a-1"' in text  # recalled
        assert "mango" not in text and "papaya" not in text
    assert nothing.is_error and "does not exist" in tool_text(nothing)
    assert await table_counts(three_sessions) == before
