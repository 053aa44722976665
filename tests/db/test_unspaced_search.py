"""Search finds words of Chinese and Japanese, which write no spaces between words.

The index holds each character of such a run (migration 0016); a query's run is a phrase of
its characters. On both backends: items (indexed and not yet), summaries and long-term
entries; a database written before the migration is indexed again when it upgrades.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from alembic import command
from conftest import raw_sqlite
from sqlalchemy import create_engine

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.core.search_terms import search_terms
from memstore.core.words import search_text, units, words
from memstore.db.audit import index_problems
from memstore.db.migrate import alembic_config
from memstore.db.search_index import index_pending

ALLERGY = "我女儿叫小雨，她对花生过敏。"
KYOTO = "来週の金曜日に京都で会議があります。"


def test_a_run_is_searched_as_the_phrase_of_its_characters() -> None:
    assert search_terms("花生") == ("花 生",)
    assert search_terms("iPhone手机 price") == ("iphone 手 机", "price")
    assert search_text("plain text") == "plain text"  # indexed exactly as before
    assert search_text(ALLERGY).endswith("我 女 儿 叫 小 雨 她 对 花 生 过 敏")
    assert words("Ｒｅｆ ＡＢ１２") == ["ref", "ab12"]  # full width folded


def test_extraction_counts_a_run_in_character_pairs() -> None:
    assert units("花生过敏") == ("花生", "生过", "过敏")
    assert units("雨") == ("雨",)
    assert units("kazan") == ("kazan",)


async def _hits(store: MemoryStore, query: str) -> list[tuple[str, int | None, str]]:
    return [(hit.source, hit.seq, hit.snippet) for hit in await store.search(query, limit=20)]


async def test_items_summaries_and_entries_are_found_by_a_word_inside_a_run(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session("family", estimator=WordEstimator())
    await memory.add("user", ALLERGY)
    await memory.add("user", KYOTO)
    await memory.add("user", "The peanut allergy is noted.")
    await any_store.ltm.set("allergy", "小雨对花生过敏", scope="user:li")
    if any_store.database.dialect == "sqlite":
        assert await any_store.database.run_write(index_pending) is False  # some indexed ...
    await memory.add("user", "她也对芝麻过敏。")  # ... and one not yet
    peanut = await _hits(any_store, "花生")
    assert ("item", 1, "我女儿叫小雨，她对[花生]过敏。") in peanut
    assert any(source == "ltm" and "[花生]" in snippet for source, _, snippet in peanut)
    assert {seq for _, seq, _ in await _hits(any_store, "过敏")} >= {1, 4}
    assert [seq for _, seq, _ in await _hits(any_store, "京都")] == [2]
    assert await _hits(any_store, "花芝") == []  # both characters, but never side by side
    assert await index_problems(any_store.database) == []


async def test_a_summary_is_found_by_a_word_inside_a_run(any_store: MemoryStore) -> None:
    memory = any_store.session(
        "long",
        estimator=WordEstimator(),
        limits=MemoryLimits(hard=60, target=40, keep_recent=1),
        summarizer=lambda previous, items: _fixed("摘要：小雨对花生过敏。"),
    )
    for turn in range(8):
        await memory.add("user", f"第{turn}天 we walked by the river number {turn}")
    assert await memory.summary() == "摘要：小雨对花生过敏。"
    hits = await any_store.search("花生")
    assert hits and {hit.source for hit in hits} == {"summary"}


async def _fixed(text: str) -> str:
    return text


async def test_a_database_written_before_is_indexed_again_when_it_upgrades(
    tmp_path: Path,
) -> None:
    path = tmp_path / "older.db"
    async with MemoryStore.open(path) as store:
        await store.session("family").add("user", ALLERGY)
        await store.ltm.set("allergy", "小雨对花生过敏", scope="user:li")
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0015")
    finally:
        engine.dispose()
    with closing(raw_sqlite(path)) as conn:  # as 0015 indexed it: the run as one token
        run = conn.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH '花生'")
        assert run.fetchone()[0] == 0
    async with MemoryStore.open(path) as store:  # upgrades
        assert [hit.source for hit in await store.search("花生")] == ["item", "ltm"]
        assert await index_problems(store.database) == []
