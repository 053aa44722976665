"""``memstore search``: a table of hits, or JSON; bad options are usage errors (exit 2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from clients import memstore_cli

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.render.recall import RECALL_OPEN


def write_history(path: Path) -> None:
    async def write() -> None:
        async with MemoryStore.open(path) as store:
            memory = store.session(
                "trip", limits=MemoryLimits(hard=200, target=100, keep_recent=2),
                estimator=WordEstimator(),
            )  # fmt: skip
            await memory.add("user", "Plan the trip to Norway.")
            await memory.add("user", "The ferry to Bergen leaves from pier 7.")
            await memory.add("user", "Book a hotel near the harbour too.")
            await memory.add("tool", "Harbour webcam log: quay 12 camera online.", priority="LOW")
            for i in range(60):
                await memory.add("assistant", f"noted, turn {i}")
            await store.session("other", estimator=WordEstimator()).add("user", "Bergen rain")
            await store.ltm.set("city", "Bergen", scope="user:alice")

    asyncio.run(write())


def test_table_of_hits_with_session_seq_fate_and_snippet(db_path: Path) -> None:
    write_history(db_path)
    result = memstore_cli(db_path, "search", "Bergen ferry")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ferry = next(line for line in lines if "pier 7" in line)
    assert "trip" in ferry and " 2 " in ferry and "by #1" in ferry and "[ferry]" in ferry
    assert any("ltm user:alice" in line for line in lines)
    assert any("other" in line and "active" in line for line in lines)


def test_json_and_filters(db_path: Path) -> None:
    write_history(db_path)
    result = memstore_cli(db_path, "search", "Bergen", "--session", "trip", "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert {hit["session_id"] for hit in hits} == {"trip"}
    assert hits[0]["item"]["content"] == "The ferry to Bergen leaves from pier 7."
    assert hits[0]["fate"] and hits[0]["compaction"] == 1
    scoped = json.loads(memstore_cli(db_path, "search", "Bergen", "--scope", "user:alice",
                                     "--json").stdout)  # fmt: skip
    assert [hit["entry"]["key"] for hit in scoped] == ["city"]
    one = json.loads(memstore_cli(db_path, "search", "Bergen", "--limit", "1", "--json").stdout)
    assert len(one) == 1


def test_input_recalls_on_request(db_path: Path) -> None:
    write_history(db_path)
    plain = json.loads(memstore_cli(db_path, "input", "trip").stdout)
    # The ferry is a fact the summary keeps; the LOW webcam log was dropped as noise.
    assert any("pier 7" in message["content"] for message in plain)
    assert not any("quay 12" in message["content"] for message in plain)
    recalled = json.loads(memstore_cli(db_path, "input", "trip", "--recall", "webcam quay").stdout)
    assert any(
        message["role"] == "developer"
        and RECALL_OPEN in message["content"]
        and "quay 12" in message["content"]
        for message in recalled
    )
    blank = memstore_cli(db_path, "input", "trip", "--recall", " ")
    assert blank.returncode == 2 and "--recall" in blank.stderr


def test_hostile_query_and_no_match(db_path: Path) -> None:
    write_history(db_path)
    hostile = memstore_cli(db_path, "search", '"NEAR(* -Bergen: OR (')
    assert hostile.returncode == 0 and "pier 7" in hostile.stdout
    nothing = memstore_cli(db_path, "search", "zeppelin")
    assert nothing.returncode == 0 and nothing.stdout.strip() == "no matches"


def test_bad_options_are_usage_errors(db_path: Path) -> None:
    write_history(db_path)
    for args, hint in (
        (["--limit", "0"], "--limit"),
        (["--scope", "nope"], "--scope"),
        (["--session", "bad/id"], "--session"),
    ):
        result = memstore_cli(db_path, "search", "Bergen", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert hint in result.stderr and "Traceback" not in result.stderr
    blank = memstore_cli(db_path, "search", "  ")  # a usage error too: QUERY is an argument
    assert blank.returncode == 2 and "QUERY" in blank.stderr


def test_a_scope_lists_its_sessions_and_its_entries(db_path: Path) -> None:
    async def write() -> None:
        async with MemoryStore.open(db_path) as store:
            for session_id, scope in [("a-1", "user:alice"), ("b-1", "user:bob"), ("n-1", None)]:
                memory = store.session(session_id, scope=scope, estimator=WordEstimator())
                await memory.add("user", f"Lisbon notes of {session_id}.")
            await store.ltm.set("city", "Lisbon", scope="user:alice")

    asyncio.run(write())
    result = memstore_cli(db_path, "search", "Lisbon", "--scope", "user:alice", "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert sorted(hit["session_id"] or hit["entry"]["scope"] for hit in hits) == [
        "a-1",
        "user:alice",
    ]
    assert [hit["rank"] for hit in hits] == [1, 2]


def test_the_table_shows_no_score_of_mixed_scales(db_path: Path) -> None:
    """Items, summaries and entries are ranked by indexes of their own, whose scores are on
    scales of their own: the table numbers the hits best first instead."""
    write_history(db_path)
    hits = json.loads(memstore_cli(db_path, "search", "ferry Bergen", "--json").stdout)
    assert {hit["source"] for hit in hits} >= {"item", "ltm"}  # more than one scale
    table = memstore_cli(db_path, "search", "ferry Bergen").stdout
    assert "score" not in table
    ranks = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")]
    assert ranks[: len(hits)] == [str(n) for n in range(1, len(hits) + 1)]
