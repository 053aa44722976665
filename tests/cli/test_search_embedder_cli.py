"""``--embedder`` and ``--mode`` on the command line, ``memstore check``'s embedding lines,
and the MCP search tool's ``mode``: with the offline embedder (WordLlama) itself."""

from __future__ import annotations

import json
from pathlib import Path

from clients import mcp_client, memstore_cli, tool_text
from concept_embedder import ConceptEmbedder

from memstore import MemoryLimits, MemoryStore, WordEstimator

NEVER = MemoryLimits(hard=10_000, target=9_000, keep_recent=2)
TEXTS = ["We bought a blue sedan last week.", "I like pizza on fridays.", "The meeting moved."]


async def written(path: Path) -> Path:
    async with MemoryStore.open(path) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        for text in TEXTS:
            await memory.add("user", text)
    return path


async def test_semantic_mode_without_an_embedder_is_a_usage_error(tmp_path: Path) -> None:
    db = await written(tmp_path / "m.db")
    done = memstore_cli(db, "search", "car", "--mode", "semantic")
    assert done.returncode == 2
    assert "--mode" in done.stderr and "embedder" in done.stderr
    assert "Traceback" not in done.stderr


async def test_an_unknown_embedder_is_a_usage_error(tmp_path: Path) -> None:
    db = await written(tmp_path / "m.db")
    done = memstore_cli(db, "--embedder", "cohere:x", "search", "car")
    assert done.returncode == 2
    assert "--embedder" in done.stderr


async def test_the_offline_embedder_finds_the_car_by_meaning(tmp_path: Path) -> None:
    db = await written(tmp_path / "m.db")
    assert memstore_cli(db, "search", "my car").stdout.strip() == "no matches"
    done = memstore_cli(db, "--embedder", "offline", "search", "my car", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert hits[0]["text"] == TEXTS[0]
    # The option works after the command too, and semantic ranks every row.
    done = memstore_cli(db, "search", "my car", "--embedder", "offline", "--mode", "semantic")
    assert done.returncode == 0, done.stderr
    assert "blue sedan" in done.stdout.splitlines()[4]
    assert "3 best match(es)" in done.stdout


async def test_check_shows_how_much_is_left_to_embed(tmp_path: Path) -> None:
    db = await written(tmp_path / "m.db")
    done = memstore_cli(db, "--embedder", "offline", "check")
    assert done.returncode == 0, done.stderr
    assert "0 row(s) embedded, 3 left to embed" in done.stdout
    memstore_cli(db, "--embedder", "offline", "search", "my car")  # embeds what it searched
    report = json.loads(memstore_cli(db, "check", "--json").stdout)
    (status,) = report["embeddings"]
    assert (status["embedded"], status["pending"], status["failed"]) == (3, 0, 0)
    assert status["embedder"].startswith("wordllama:")


async def test_the_mcp_search_tool_ranks_by_meaning(tmp_path: Path) -> None:
    db = await written(tmp_path / "m.db")
    async with (
        MemoryStore.open(db, embedder=ConceptEmbedder()) as store,
        mcp_client(store) as client,
    ):
        words = tool_text(await client.call_tool("search", {"query": "my car", "mode": "lexical"}))
        assert "blue sedan" not in words
        text = tool_text(await client.call_tool("search", {"query": "my car"}))
        assert text.index("blue sedan") < text.index("pizza")
        refused = await client.call_tool("search", {"query": "car", "mode": "fuzzy"})
        assert refused.is_error and "mode" in tool_text(refused)


async def test_an_import_with_an_embedder_ends_with_its_vectors(tmp_path: Path) -> None:
    source = await written(tmp_path / "source.db")
    exported = memstore_cli(source, "export", "s").stdout
    (tmp_path / "s.jsonl").write_text(exported)
    target = tmp_path / "target.db"
    done = memstore_cli(target, "--embedder", "offline", "import", str(tmp_path / "s.jsonl"))
    assert done.returncode == 0, done.stderr
    report = json.loads(memstore_cli(target, "--embedder", "offline", "check", "--json").stdout)
    assert report["embeddings"][0]["embedded"] == len(TEXTS)
