"""``memstore conversations``: list, show (a table, or pydantic-ai's JSON), search and delete
the pydantic-ai conversations a database holds; a missing one is exit 1 with one line, a bad
option exit 2. Stored text prints as itself, never as rich markup."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from clients import memstore_cli
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.test import TestModel

from memstore.pydantic_ai import MemstoreConversationStore

AGENT = Agent(TestModel(custom_output_text="Refund approved for [bold]order 4[/bold]."))


def write_conversations(path: Path) -> None:
    async def write() -> None:
        async with MemstoreConversationStore.from_url(path) as store:
            result = await AGENT.run(
                "Please refund order 4, it arrived broken.",
                conversation=Conversation(conversation_id="refunds"),
            )
            await store.save(result, scope="user:alice")
            await store.fork("refunds", at=1, new_conversation_id="retry", scope="user:bob")
            if hasattr(store, "update"):
                await store.update("refunds", title="Broken order")

    asyncio.run(write())


def test_list_shows_every_conversation_newest_first(db_path: Path) -> None:
    write_conversations(db_path)
    listed = memstore_cli(db_path, "conversations", "list")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if "user:" in line]
    assert "retry" in rows[0] and "refunds" in rows[1] and "user:alice" in rows[1]
    as_json = json.loads(memstore_cli(db_path, "conversations", "list", "--json").stdout)
    assert [r["conversation_id"] for r in as_json] == ["retry", "refunds"]
    assert as_json[0]["forked_from"] == "refunds"
    only = json.loads(
        memstore_cli(db_path, "conversations", "list", "--scope", "user:alice", "--json").stdout
    )
    assert [r["conversation_id"] for r in only] == ["refunds"]


def test_show_prints_the_history_and_its_json_is_pydantic_ais(db_path: Path) -> None:
    write_conversations(db_path)
    shown = memstore_cli(db_path, "conversations", "show", "refunds")
    assert shown.returncode == 0, shown.stderr
    assert "user: Please refund order 4, it arrived broken." in shown.stdout
    assert "[bold]order 4[/bold]" in shown.stdout  # data, not markup
    assert "2 messages" in shown.stdout
    exported = json.loads(
        memstore_cli(db_path, "conversations", "show", "refunds", "--json").stdout
    )
    messages = ModelMessagesTypeAdapter.validate_python(exported["messages"])
    assert [m.kind for m in messages] == ["request", "response"]
    assert exported["record"]["scope"] == "user:alice"
    assert exported["record"]["head_id"] is not None


def test_search_names_the_conversations_holding_a_message(db_path: Path) -> None:
    write_conversations(db_path)
    hits = json.loads(memstore_cli(db_path, "conversations", "search", "broken", "--json").stdout)
    assert len(hits) == 1 and hits[0]["conversation_ids"] == ["refunds", "retry"]
    assert "[broken]" in hits[0]["snippet"]
    scoped = memstore_cli(db_path, "conversations", "search", "approved", "--scope", "user:bob")
    assert scoped.returncode == 0 and "no matches" in scoped.stdout  # bob's fork kept 1 message
    table = memstore_cli(db_path, "conversations", "search", "refund")
    assert "refunds, retry" in table.stdout


def test_delete_removes_what_no_other_conversation_holds(db_path: Path) -> None:
    write_conversations(db_path)
    deleted = memstore_cli(db_path, "conversations", "delete", "refunds", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert "1 messages no other one held" in deleted.stdout
    assert "retry" in memstore_cli(db_path, "conversations", "list").stdout
    shown = memstore_cli(db_path, "conversations", "show", "retry", "--json")
    assert len(json.loads(shown.stdout)["messages"]) == 1


def test_missing_conversations_and_bad_options(db_path: Path) -> None:
    write_conversations(db_path)
    for args in (("show", "nope"), ("delete", "nope", "--yes")):
        result = memstore_cli(db_path, "conversations", *args)
        assert result.returncode == 1
        assert result.stderr.strip() == "Error: conversation 'nope' is not stored"
    bad = memstore_cli(db_path, "conversations", "search", "refund", "--limit", "0")
    assert bad.returncode == 2 and "'--limit'" in bad.stderr
    blank = memstore_cli(db_path, "conversations", "search", "   ")
    assert blank.returncode == 2 and "QUERY" in blank.stderr
    empty = memstore_cli(db_path, "conversations", "list")
    assert empty.returncode == 0
