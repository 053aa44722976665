"""An import is untrusted input: it is recounted with the session's estimator and refused,
naming the record and the field, when its ledger would fail ``memstore check``; it takes
what the store's own size limit takes, and nothing else."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clients import memstore_cli, memstore_command
from conftest import add_worked_example, table_counts

from memstore import MemoryLimits, MemoryStore, Settings, ValidationError, WordEstimator


async def exported(store: MemoryStore) -> list[dict[str, Any]]:
    await add_worked_example(store)
    records = await store.export_session("incident-42")
    await store.purge("incident-42")
    return records


def first(records: list[dict[str, Any]], kind: str, **match: Any) -> tuple[int, dict[str, Any]]:
    """The first record of ``kind`` (and matching fields), with its 1-based record number."""
    for number, record in enumerate(records, 1):
        if record["type"] == kind and all(record.get(k) == v for k, v in match.items()):
            return number, record
    raise AssertionError(f"no {kind} record")


def active_item(records: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    return first(records, "item", fate=None)


def inflate_active_item(records: list[dict[str, Any]]) -> str:
    """The attack: one item holds 5,000 words but still claims its recorded count."""
    number, item = active_item(records)
    item["content"] = " ".join(["word"] * 5000)
    return f"record {number}.estimated_tokens"


def lower_counter(records: list[dict[str, Any]]) -> str:
    records[0]["active_tokens"] -= 1
    return "record 1.active_tokens"


def fate_without_compaction(records: list[dict[str, Any]]) -> str:
    number, item = active_item(records)
    item["fate"] = "evicted"
    return f"record {number}.removed_by"


def negative_tokens(records: list[dict[str, Any]]) -> str:
    number, item = active_item(records)
    item["estimated_tokens"] = -5
    return f"record {number}.estimated_tokens"


def zero_hard_limit(records: list[dict[str, Any]]) -> str:
    records[0]["hard_limit"] = 0
    return "record 1.hard_limit"


def negative_report_count(records: list[dict[str, Any]]) -> str:
    number, report = first(records, "compaction")
    report["items_evicted"] = -1
    return f"record {number}.items_evicted"


def wrong_summary_count(records: list[dict[str, Any]]) -> str:
    number, summary = first(records, "summary")
    summary["estimated_tokens"] = 1
    return f"record {number}.estimated_tokens"


EDITS: list[Callable[[list[dict[str, Any]]], str]] = [
    inflate_active_item,
    lower_counter,
    fate_without_compaction,
    negative_tokens,
    zero_hard_limit,
    negative_report_count,
    wrong_summary_count,
]


@pytest.mark.parametrize("edit", EDITS, ids=lambda edit: edit.__name__)
async def test_an_edited_export_is_refused_naming_record_and_field(
    any_store: MemoryStore, edit: Callable[[list[dict[str, Any]]], str]
) -> None:
    records = await exported(any_store)
    before = await table_counts(any_store)
    field = edit(records)
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    assert refused.value.field == field, str(refused.value)
    assert await table_counts(any_store) == before  # nothing written


async def test_an_untouched_export_still_round_trips_and_stays_bounded(
    any_store: MemoryStore,
) -> None:
    records = await exported(any_store)
    assert await any_store.import_session(records) == "incident-42"
    assert await any_store.check() == []
    memory = any_store.session("incident-42", estimator=WordEstimator())
    model_input = await memory.build_model_input()
    words = sum(len(str(entry["content"]).split()) for entry in model_input)
    assert words <= memory.limits.hard


@pytest.mark.parametrize("records", [5, "records", None, [5], b"{}"])
async def test_records_that_are_not_a_list_of_objects_are_refused(
    store: MemoryStore, records: Any
) -> None:
    with pytest.raises(ValidationError) as refused:
        await store.import_session(records)
    assert refused.value.field in ("records", "record 1")


TEN_MB = 10 * 1024 * 1024


async def test_a_legitimately_stored_large_item_round_trips(backend_url: str) -> None:
    settings = Settings(max_item_bytes=TEN_MB + 1024)
    big = "x" * TEN_MB
    async with MemoryStore.open(backend_url, settings=settings) as store:
        memory = store.session(
            "big",
            estimator=WordEstimator(),
            limits=MemoryLimits(hard=100, target=50, keep_recent=1),
        )
        await memory.add("user", big)
        records = await store.export_session("big")
        await store.purge("big")
        assert await store.import_session(records) == "big"
        (item,) = await memory.items()
        assert item.content == big
        assert await store.check() == []
    async with MemoryStore.open(backend_url) as default:  # the default limit: 1 MiB
        await default.purge("big")
        with pytest.raises(ValidationError) as refused:
            await default.import_session(records)
        assert refused.value.field.endswith(".content")


def test_the_cli_honours_the_size_limit_variable(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    source = tmp_path / "big.jsonl"

    async def write() -> None:
        settings = Settings(max_item_bytes=TEN_MB + 1024)
        async with MemoryStore.open(db, settings=settings) as store:
            memory = store.session("big", estimator=WordEstimator())
            await memory.add("user", "y" * TEN_MB)
            records = await store.export_session("big")
            await store.purge("big")
        source.write_text("".join(json.dumps(r) + "\n" for r in records))

    asyncio.run(write())
    refused = memstore_cli(db, "import", str(source))
    assert refused.returncode == 1 and "content" in refused.stderr
    assert "Traceback" not in refused.stderr
    env_run = subprocess.run(
        [*memstore_command(), "--db", str(db), "import", str(source)],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMSTORE_MAX_ITEM_BYTES": str(TEN_MB + 1024)},
        timeout=120,
    )
    assert env_run.returncode == 0, env_run.stderr
    assert "imported session big" in env_run.stdout


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_deeply_nested_import_line_is_one_line_error(tmp_path: Path) -> None:
    source = tmp_path / "deep.jsonl"
    source.write_text(deep_json(30_000) + "\n")
    done = memstore_cli(tmp_path / "d.db", "import", str(source))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.stderr.count("\n") == 1 and "line 1" in done.stderr
    assert not (tmp_path / "d.db").exists()


async def test_a_deeply_nested_payload_in_a_record_is_refused_by_name(store: MemoryStore) -> None:
    records = await exported(store)
    number, item = active_item(records)
    item["payload"] = '{"type":"message","role":"user","content":' + deep_json(30_000) + "}"
    with pytest.raises(ValidationError) as refused:
        await store.import_session(records)
    assert refused.value.field.startswith(f"record {number}.payload")


@pytest.mark.parametrize("hard", [10**30, 2**31])
async def test_a_limit_past_the_integer_columns_is_refused_at_construction(hard: int) -> None:
    from memstore import ConfigurationError

    with pytest.raises(ConfigurationError) as refused:
        MemoryLimits(hard=hard, target=10)
    assert refused.value.field == "hard"


@pytest.mark.parametrize("before", [10**20, -1, "5", 2.5])
async def test_prune_refuses_a_version_it_cannot_compare(store: MemoryStore, before: Any) -> None:
    await add_worked_example(store)
    before_counts = await table_counts(store)
    with pytest.raises(ValidationError) as refused:
        await store.prune("incident-42", before_version=before)
    assert refused.value.field == "before"
    assert await table_counts(store) == before_counts
