"""A long session on a terminal: ``show`` and ``replay --at`` list the newest 100 items and
say how many older ones they leave out; ``--limit N|all`` changes that, and ``--json`` lists
every item unless ``--limit`` is given. (The figures on 200,000 items are in
docs/operations.md: a table of every item took 86 s there.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from clients import memstore_cli

from memstore import MemoryLimits, MemoryStore, WordEstimator

ITEMS = 130


async def fill(path: Path) -> None:
    async with MemoryStore.open(path) as store:
        memory = store.session(
            "long", estimator=WordEstimator(), limits=MemoryLimits(hard=100_000, target=50)
        )
        await memory.add_items(
            [
                {"role": "user", "content": f"note number {n} of the long session"}
                for n in range(ITEMS)
            ]
        )


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("long") / "long.db"
    asyncio.run(fill(path))
    return path


def test_show_lists_the_newest_items_and_says_how_many_are_left_out(long_db: Path) -> None:
    shown = memstore_cli(long_db, "show", "long")
    assert shown.returncode == 0, shown.stderr
    assert "note number 129 " in shown.stdout and "note number 30 " in shown.stdout
    assert "note number 29 " not in shown.stdout
    assert "the newest 100 of 130" in shown.stdout
    assert "… 30 older active items not shown (--limit N shows more" in shown.stdout
    five = memstore_cli(long_db, "show", "long", "--limit", "5").stdout
    assert "note number 125 " in five and "note number 124 " not in five and "125 older" in five
    every = memstore_cli(long_db, "show", "long", "--limit", "all").stdout
    assert "note number 0 " in every and "not shown" not in every


def test_show_json_lists_every_item_unless_limited(long_db: Path) -> None:
    every = json.loads(memstore_cli(long_db, "show", "long", "--json").stdout)
    assert len(every["items"]) == ITEMS and "items_hidden" not in every
    limited = json.loads(memstore_cli(long_db, "show", "long", "--json", "--limit", "7").stdout)
    assert [item["seq"] for item in limited["items"]] == list(range(ITEMS - 6, ITEMS + 1))
    assert limited["items_hidden"] == ITEMS - 7


def test_replay_at_lists_the_newest_items_and_their_input(long_db: Path) -> None:
    at = memstore_cli(long_db, "replay", "long", "--at", str(ITEMS - 10))
    assert at.returncode == 0, at.stderr
    assert "… 20 older active items not shown" in at.stdout
    model_input = json.loads(at.stdout[at.stdout.index("[\n") :])
    assert len(model_input) == 100
    assert model_input[-1]["content"] == f"note number {ITEMS - 11} of the long session"
    at_json = memstore_cli(long_db, "replay", "long", "--at", str(ITEMS - 10), "--json")
    whole = json.loads(at_json.stdout)
    assert len(whole["items"]) == ITEMS - 10 and len(whole["input"]) == ITEMS - 10


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_limit_is_a_usage_error(long_db: Path, value: str) -> None:
    result = memstore_cli(long_db, "show", "long", "--limit", value)
    assert result.returncode == 2 and "--limit" in result.stderr
