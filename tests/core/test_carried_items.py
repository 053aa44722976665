"""Carried Responses items: stored verbatim, compacted in units, popped and cleared on record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import assert_valid_responses_input

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.core.carried_items import (
    FILE_REFERENCE_TOKENS,
    IMAGE_TOKENS,
    LOW_DETAIL_IMAGE_TOKENS,
    MEDIA_CHARS_PER_TOKEN,
    count_tokens,
    parse_item,
)
from memstore.core.policy import Snapshot, plan_compaction
from memstore.core.units import units, valid_input
from memstore.core.values import Fate, MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.errors import ValidationError


def call(call_id: str, name: str = "lookup", arguments: str = '{"order": 4}') -> dict[str, Any]:
    return {
        "type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
        "name": name, "arguments": arguments, "status": "completed",
    }  # fmt: skip


def output(call_id: str, text: str = "order 4 shipped on Monday") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def reasoning(summary: str, blob: str = "gAAAAABencrypted==") -> dict[str, Any]:
    return {
        "type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": blob,
    }  # fmt: skip


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_derived_text_kind_and_role_follow_the_type() -> None:
    cases = [
        (user("hi there"), MemoryKind.USER_MESSAGE, MemoryRole.USER, "hi there"),
        (call("c1"), MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT, 'lookup({"order": 4})'),
        (output("c1"), MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL, "order 4 shipped on Monday"),
        (reasoning("check it"), MemoryKind.DECISION, MemoryRole.ASSISTANT, "check it"),
        ({"role": "system", "content": "be brief"}, MemoryKind.DECISION, MemoryRole.DEVELOPER,
         "be brief"),
    ]  # fmt: skip
    for payload, kind, role, text in cases:
        parsed = parse_item(payload, "items[0]", max_bytes=10_000)
        assert (parsed.kind, parsed.role, parsed.text) == (kind, role, text)
    assert "gAAAA" not in parse_item(reasoning("x"), "i", max_bytes=10_000).text


def test_tokens_count_the_content_and_the_rest_by_rule(words: WordEstimator) -> None:
    blob = "A" * 3_000
    parsed = parse_item(reasoning("short plan", blob), "i", max_bytes=100_000)
    # The encrypted blob is sent back to the model: it counts, by rule (base64 characters).
    assert count_tokens(parsed, words.count) == 2 + 3_000 // MEDIA_CHARS_PER_TOKEN
    image = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "what is this"},
            {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 90_000},
        ],
    }
    parsed = parse_item(image, "i", max_bytes=200_000)
    assert parsed.media_tokens == IMAGE_TOKENS
    assert parsed.text == "what is this\n[image]"
    assert count_tokens(parsed, words.count) == 4 + IMAGE_TOKENS  # the data is not text
    low = {"type": "input_image", "image_url": "https://example.invalid/x.png", "detail": "low"}
    by_file = {"type": "input_file", "file_id": "file-1"}
    parsed = parse_item({"role": "user", "content": [low, by_file]}, "i", max_bytes=10_000)
    assert parsed.media_tokens == LOW_DETAIL_IMAGE_TOKENS + FILE_REFERENCE_TOKENS


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("not an object", "items[0]"),
        ({"type": 5}, "items[0].type"),
        ({"role": "user", "content": [5, None]}, "items[0].content[0]"),
        ({"role": "user", "content": [{"text": "no type"}]}, "items[0].content[0]"),
        (
            {"type": "function_call", "call_id": "c", "name": None, "arguments": "{}"},
            "items[0].name",
        ),
        ({"type": "function_call", "call_id": "c", "name": "f"}, "items[0].arguments"),
        ({"type": "custom_tool_call", "call_id": "c", "name": "f", "input": 3}, "items[0].input"),
        ({"role": "wizard", "content": "x"}, "items[0].role"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "items[0].call_id"),
        ({"role": "user", "content": "a\x00b"}, "items[0].content"),
        (
            {"role": "user", "content": [{"type": "input_text", "text": "\ud800"}]},
            "items[0].content[0].text",
        ),
        ({"role": "user", "content": "x", "n": float("nan")}, "items[0].n"),
        ({"role": "user", "content": "x", 1: "int key"}, "items[0]"),
        ({"role": "user", "content": ("tuple",)}, "items[0].content"),
        ({"role": "user", "content": "y" * 2_000}, "items[0]"),
        ({"role": "user", "content": 5}, "items[0].content"),
        ({"role": "user", "content": "x", "n": 10**5000}, "items[0].n"),
        (
            {"type": "function_call", "call_id": "c" * 201, "name": "f", "arguments": "{}"},
            "items[0].call_id",
        ),
    ],
)
def test_bad_items_name_the_field(value: Any, field: str) -> None:
    """(Deep nesting is refused before the JSON encoder would run out of recursion.)"""
    with pytest.raises(ValidationError) as caught:
        parse_item(value, "items[0]", max_bytes=1_000)
    assert caught.value.field == field


def _items(payloads: list[dict[str, Any]], tokens: int = 10) -> tuple[MemoryItem, ...]:
    out = []
    for seq, payload in enumerate(payloads, 1):
        parsed = parse_item(payload, "i", max_bytes=10_000)
        out.append(
            MemoryItem(
                id=f"i{seq}",
                session_id="s",
                seq=seq,
                role=parsed.role,
                kind=parsed.kind,
                priority=Priority.NORMAL,
                content=parsed.text,
                timestamp=None,  # type: ignore[arg-type]
                estimated_tokens=tokens,
                version=seq,
                payload=payload,
                call_id=parsed.link,
            )
        )
    return tuple(out)


def test_units_bind_calls_outputs_and_reasoning() -> None:
    items = _items([
        user("where is order 4"), reasoning("look it up"), call("a"), call("b"),
        output("a"), output("b"), {"role": "assistant", "content": "shipped"}, call("c"),
    ])  # fmt: skip
    groups = [(sorted(i.seq for i in u.items), u.pending) for u in units(items)]
    assert groups == [([1], False), ([2, 3, 4, 5, 6], False), ([7], False), ([8], True)]


def test_valid_input_leaves_out_every_incomplete_unit() -> None:
    assistant = {"role": "assistant", "content": "done"}
    cases = [
        ([output("gone"), user("hi"), reasoning("thinking")], [user("hi")]),
        ([user("a"), call("x"), user("b")], [user("a"), user("b")]),  # a turn broken off
        ([user("a"), reasoning("r"), user("b")], [user("a"), user("b")]),  # follower popped
        ([call("d"), output("d"), output("d")], [call("d"), output("d")]),  # a second output
        ([reasoning("r"), call("p"), call("q"), output("p")], []),  # one call unanswered
        ([reasoning("r"), call("p"), output("p"), assistant],
         [reasoning("r"), call("p"), output("p"), assistant]),
    ]  # fmt: skip
    for entries, valid in cases:
        assert valid_input(entries) == valid


def test_only_the_response_in_progress_is_pending() -> None:
    broken_off = _items([user("a"), call("x"), user("b"), call("y")])
    assert [(sorted(i.seq for i in u.items), u.pending) for u in units(broken_off)] == [
        ([1], False), ([2], False), ([3], False), ([4], True),
    ]  # fmt: skip


def test_compaction_never_splits_a_unit_and_keeps_pending_calls() -> None:
    payloads: list[dict[str, Any]] = []
    for n in range(12):
        payloads += [user(f"question {n}"), reasoning(f"plan {n}"), call(f"c{n}"), output(f"c{n}")]
    payloads.append(call("waiting"))
    items = _items(payloads)
    snap = Snapshot("s", len(items), 0, items)
    limits = MemoryLimits(hard=300, target=100, keep_recent=1)
    plan = plan_compaction(
        snap, limits, lambda text: len(text.split()), lambda _p, _c, **room: "sum"
    )
    kept = {i.id for i in plan.kept}
    for unit in units(items):
        assert unit.ids <= kept or not unit.ids & kept  # whole units only
    assert items[-1].id in kept  # the pending call stays
    from memstore.render.input import build_input

    assert_valid_responses_input(build_input(plan.kept, plan.summary))


async def test_add_items_round_trips_byte_identical_and_atomic(any_store: MemoryStore) -> None:
    store = any_store
    memory = store.session("turns", estimator=WordEstimator())
    turn = [user("where is order 4?"), reasoning("look it up"), call("c1"), output("c1")]
    stored = await memory.add_items(turn)
    assert [item.payload for item in stored] == turn
    assert await memory.build_model_input() == turn
    assert json.dumps(await memory.build_model_input()) == json.dumps(turn)  # key order too
    before = await memory.items()
    nameless = {"type": "function_call", "call_id": "c9", "name": None, "arguments": "{}"}
    with pytest.raises(ValidationError) as caught:  # the API refuses a call without a name
        await memory.add_items([user("and order 5?"), nameless])
    assert caught.value.field == "items[1].name"
    assert await memory.items() == before  # nothing of the batch was written


async def test_add_items_with_a_key_is_safe_to_retry(any_store: MemoryStore) -> None:
    store = any_store
    memory = store.session("retry", estimator=WordEstimator())
    turn = [call("k1"), output("k1")]
    first = await memory.add_items(turn, idempotency_key="turn-1")
    again = await memory.add_items(turn, idempotency_key="turn-1")
    assert [i.id for i in again] == [i.id for i in first]
    assert len(await memory.items()) == 2


async def test_pop_and_clear_keep_their_rows_and_pass_replay(any_store: MemoryStore) -> None:
    store = any_store
    memory = store.session(
        "rewind", estimator=WordEstimator(), limits=MemoryLimits(hard=60, target=30, keep_recent=1)
    )
    for n in range(6):
        await memory.add_items([user(f"question number {n} about orders"), call(f"p{n}"),
                                output(f"p{n}", "shipped yesterday by courier")])  # fmt: skip
    newest = (await memory.items())[-1]
    popped = await memory.pop_item()
    assert popped is not None and popped.payload == newest.payload
    model_input = await memory.build_model_input()
    assert newest.payload not in model_input
    assert_valid_responses_input(
        model_input
    )  # the call whose output was popped is pending, not orphaned
    report = await memory.clear()
    assert report is not None and report.trigger == "clear"
    assert await memory.items() == [] and await memory.summary() is None
    fates = {item.fate for item in await memory.forgotten_items()}
    assert {Fate.POPPED, Fate.CLEARED} <= fates
    assert await store.check("rewind") == []
    history = await store.history("rewind")
    from memstore.core.replay import verify

    assert verify(history) == []
    assert await memory.pop_item() is None
    assert await memory.clear() is None


async def test_export_import_keeps_payloads(store: MemoryStore, tmp_path: Any) -> None:
    memory = store.session("moving", estimator=WordEstimator())
    turn = [user("hello"), call("m1"), output("m1")]
    await memory.add_items(turn)
    records = await store.export_session("moving")
    async with MemoryStore.open(tmp_path / "other.db") as other:
        await other.import_session(records)
        assert await other.session("moving", estimator=WordEstimator()).build_model_input() == turn
        bad = [dict(r) for r in records]
        bad[0]["id"] = "moving2"
        for record in bad[1:]:
            record["session_id"] = "moving2"
        item_records = [r for r in bad if r["type"] == "item"]
        item_records[1]["call_id"] = "someone-else"
        with pytest.raises(ValidationError) as caught:
            await other.import_session(bad)
        assert caught.value.field.endswith(".call_id")


async def test_the_cli_shows_replays_and_checks_carried_items(tmp_path: Any) -> None:
    from clients import memstore_cli

    db = tmp_path / "cli.db"
    async with MemoryStore.open(db) as store:
        memory = store.session("c1", estimator=WordEstimator())
        await memory.add_items([user("where is order 4?"), reasoning("look it up"), call("c1"),
                                output("c1")])  # fmt: skip
        await memory.pop_item()
    shown = memstore_cli(db, "show", "c1", "--all")
    assert shown.returncode == 0, shown.stderr
    assert "DECISION (reasoning)" in shown.stdout and "function_call c1" in shown.stdout
    assert "popped" in shown.stdout and "gAAAA" not in shown.stdout  # never the blob
    replayed = memstore_cli(db, "replay", "c1")
    assert "popped 1" in replayed.stdout and "replay verified" in replayed.stdout
    assert memstore_cli(db, "check").returncode == 0
    sent = json.loads(memstore_cli(db, "input", "c1").stdout)
    # The call whose output was popped waits for one: stored, but not sent (the API would
    # refuse a call without its output).
    assert sent == [user("where is order 4?")]


async def test_add_items_refuses_bad_batches_before_writing(store: MemoryStore) -> None:
    memory = store.session("bad", estimator=WordEstimator())
    cases: list[tuple[dict[str, Any], str]] = [
        ({"items": {"role": "user", "content": "x"}}, "items"),
        ({"items": [user("a"), user("b")], "priority": ["LOW"]}, "priority"),
        ({"items": [user("a")], "decisions": [0]}, "decisions"),
        ({"items": [user("a")], "priority": "URGENT"}, "priority"),
        ({"items": [user("a")], "idempotency_key": ""}, "idempotency_key"),
    ]
    for arguments, field in cases:
        with pytest.raises(ValidationError) as caught:
            await memory.add_items(**arguments)
        assert caught.value.field == field
    assert await memory.snapshot() is None  # nothing was written, not even the session
    assert await memory.add_items([]) == []


async def test_broken_off_turns_are_compacted_and_never_sent(store: MemoryStore) -> None:
    limits = MemoryLimits(hard=100, target=60, keep_recent=2)
    memory = store.session("interrupted", estimator=WordEstimator(), limits=limits)
    for n in range(30):  # a turn broken off after the model's call, again and again
        await memory.add_items([user(f"question {n} about the orders"), call(f"x{n}")])
    assert await memory.estimated_tokens() < limits.hard  # only the newest call is pending
    model_input = await memory.build_model_input()
    assert_valid_responses_input(model_input)
    assert [e for e in model_input if e.get("type") == "function_call"] == []


def test_deep_nesting_is_a_validation_error() -> None:
    deep: Any = "bottom"
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(ValidationError, match="nests deeper"):
        parse_item({"role": "user", "content": "x", "deep": deep}, "items[0]", max_bytes=10**6)


async def test_outputs_must_answer_an_open_call_of_their_kind(store: MemoryStore) -> None:
    memory = store.session("answers", estimator=WordEstimator())
    await memory.add_items([call("c1"), output("c1")])
    custom = {"type": "custom_tool_call_output", "call_id": "c2", "output": "x"}
    cases = [
        ([output("c1")], "items[0].call_id"),  # already answered
        ([call("c2"), custom], "items[1].type"),  # not the output of a function call
    ]
    for batch, field in cases:
        with pytest.raises(ValidationError) as caught:
            await memory.add_items(batch)
        assert caught.value.field == field
    assert len(await memory.items()) == 2


async def test_a_key_reused_for_another_batch_is_a_conflict(store: MemoryStore) -> None:
    from memstore.errors import IdempotencyConflictError

    memory = store.session("keys", estimator=WordEstimator())
    await memory.add_items([user("a"), user("b")], idempotency_key="t1")
    for other in ([user("a"), user("c")], [user("a")], [user("a"), user("b"), user("d")]):
        with pytest.raises(IdempotencyConflictError):
            await memory.add_items(other, idempotency_key="t1")
    with pytest.raises(ValidationError) as caught:
        await memory.add_items([user("a"), user("b")], idempotency_key="k" * 200)
    assert caught.value.field == "idempotency_key"


def test_a_large_hosted_call_is_counted_whole(words: WordEstimator) -> None:
    big = {"type": "mcp_call", "id": "mcp_1", "name": "search", "server_label": "docs",
           "arguments": "{}", "output": "word " * 5_000}  # fmt: skip
    parsed = parse_item(big, "i", max_bytes=100_000)
    assert len(parsed.text) <= 2_100  # shown clipped
    assert count_tokens(parsed, words.count) >= 5_000  # counted whole
