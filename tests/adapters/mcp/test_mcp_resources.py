"""memstore's MCP resources through the SDK's client, in process: each session's audit and each
long-term scope, on each backend."""

from __future__ import annotations

import json

import pytest
from clients import mcp_client
from conftest import WORKED_SUMMARY, add_worked_example
from mcp.shared.exceptions import MCPError

from memstore import MemoryStore
from memstore.render.input import item_message, memories_message, summary_message


async def test_resources_and_templates_are_listed(any_store: MemoryStore) -> None:
    await add_worked_example(any_store)
    await any_store.ltm.set("editor", "vim", scope="user:alice")
    await any_store.ltm.set("motd", "hi")
    async with mcp_client(any_store) as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
    assert [(str(r.uri), r.mime_type) for r in resources] == [
        ("memstore://sessions/incident-42", "application/json"),
        ("memstore://ltm/global", "text/plain"),
        ("memstore://ltm/user:alice", "text/plain"),
    ]
    assert resources[0].description == "Audit of session incident-42: 5 items, 1 compaction."
    assert [t.uri_template for t in templates] == [
        "memstore://sessions/{session_id}",
        "memstore://ltm/{scope}",
    ]


async def test_a_session_resource_is_its_whole_audit(any_store: MemoryStore) -> None:
    await add_worked_example(any_store)
    async with mcp_client(any_store) as client:
        (contents,) = (await client.read_resource("memstore://sessions/incident-42")).contents
    audit = json.loads(contents.text)
    history = await any_store.history("incident-42")
    assert audit["session"] == history.info.to_dict()
    assert audit["summary"] == summary_message(WORKED_SUMMARY)
    assert [(i["seq"], i["fate"], i["removed_by"]) for i in audit["items"]] == [
        (1, "summarized", 1),
        (2, "dropped", 1),
        (3, "summarized", 1),
        (4, None, None),
        (5, None, None),
    ]
    assert [i["message"] for i in audit["items"]] == [item_message(i) for i in history.items]
    (compaction,) = audit["compactions"]
    assert compaction["report"]["before_tokens"] == 65
    assert compaction["report"]["after_tokens"] == 52
    assert compaction["summary"] == summary_message(WORKED_SUMMARY)


async def test_a_scope_resource_lists_its_entries_as_memories(any_store: MemoryStore) -> None:
    await any_store.ltm.set("editor", "vim", scope="user:alice")
    await any_store.ltm.set("lang", "python", scope="user:alice")
    async with mcp_client(any_store) as client:
        plain = await client.read_resource("memstore://ltm/user:alice")
        encoded = await client.read_resource("memstore://ltm/user%3Aalice")
        empty = await client.read_resource("memstore://ltm/user:nobody")
    entries = await any_store.ltm.list(scope="user:alice")
    assert plain.contents[0].text == memories_message(entries, versions=True)["content"]
    assert encoded.contents[0].text == plain.contents[0].text
    assert empty.contents[0].text == memories_message([], versions=True)["content"]


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("memstore://sessions/nobody", "session 'nobody' does not exist"),
        ("memstore://sessions/a%2Fb", "session_id: 'a/b' is not a valid id"),
        ("memstore://ltm/Not A Scope", "scope: 'Not A Scope' is not a valid scope"),
        ("memstore://elsewhere/x", "uri: no such resource"),
    ],
)
async def test_a_bad_resource_is_an_error_naming_what_is_wrong(
    store: MemoryStore, uri: str, message: str
) -> None:
    async with mcp_client(store) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    assert raised.value.message.startswith(message)
