"""Search: ``memory.search`` over one session's history, ``store.search`` across sessions and
long-term memory, on SQLite and PostgreSQL. Queries are text, never syntax."""

from __future__ import annotations

import pytest

from memstore import MemoryLimits, MemoryStore, ValidationError, WordEstimator
from memstore.core.search_terms import MAX_TERMS, search_terms
from memstore.memory.session import SessionMemory

LIMITS = MemoryLimits(hard=80, target=60, keep_recent=2)
#: Said early, each with a word no filler uses; compaction removes them all.
FACTS = [
    ("user", "My sister Ingrid moved to Trondheim last spring."),
    ("tool", "Disk usage on volume gamma reached 91 percent."),
    ("assistant", "I booked the pottery workshop for Saturday morning."),
]


async def history(store: MemoryStore, session_id: str = "s1") -> SessionMemory:
    """A session whose facts left working memory: dropped, summarized or evicted."""
    memory = store.session(session_id, limits=LIMITS, estimator=WordEstimator())
    await memory.add("tool", FACTS[1][1], priority="LOW")  # noise: phase 1 drops it
    await memory.add(FACTS[0][0], FACTS[0][1])
    await memory.add(FACTS[2][0], FACTS[2][1])
    for i in range(12):
        await memory.add("user" if i % 2 else "assistant", f"filler turn {i} about nothing much")
    return memory


async def test_forgotten_items_are_found_with_their_fate_and_compaction(
    any_store: MemoryStore,
) -> None:
    memory = await history(any_store)
    hits = await memory.search("Where did Ingrid move?")
    assert hits[0].source == "item" and hits[0].text == FACTS[0][1]
    assert hits[0].item is not None and hits[0].item.content == FACTS[0][1]
    assert hits[0].fate in {"summarized", "evicted"} and hits[0].compaction == 1
    assert hits[0].seq == 2 and hits[0].session_id == "s1"
    assert hits[0].score > 0 and "[Ingrid]" in hits[0].snippet
    dropped = await memory.search("gamma volume")
    assert [(h.seq, h.fate) for h in dropped if h.source == "item"] == [(1, "dropped")]


async def test_active_items_only_on_request(any_store: MemoryStore) -> None:
    memory = await history(any_store)
    forgotten = await memory.search("filler 11", limit=50)
    assert forgotten and all(hit.fate is not None for hit in forgotten)
    active = await memory.search("filler 11", include_active=True, limit=50)
    assert any(
        hit.fate is None and hit.text.endswith("turn 11 about nothing much") for hit in active
    )


async def test_summaries_current_and_superseded(any_store: MemoryStore) -> None:
    memory = await history(any_store)
    reports = await memory.reports()
    assert len(reports) >= 2  # two summaries: the first one superseded
    current = await memory.summary()
    assert current is not None
    word = current.split()[-1]
    everything = await memory.search(word, include_active=True, limit=100)
    summaries = [h for h in everything if h.source == "summary"]
    assert {h.fate for h in summaries} <= {None, "superseded"}
    assert [h.text for h in summaries if h.fate is None] == [current]
    forgotten = await memory.search(word, limit=100)
    assert all(h.fate == "superseded" for h in forgotten if h.source == "summary")


async def test_store_search_across_sessions_and_long_term_memory(any_store: MemoryStore) -> None:
    await history(any_store, "s1")
    other = any_store.session("s2", limits=LIMITS, estimator=WordEstimator())
    await other.add("user", "Ingrid says the fjord ferry leaves at noon.")
    await any_store.ltm.set("sister", "Ingrid lives in Trondheim", scope="user:alice")
    await any_store.ltm.set("editor", "vim", scope="user:bob")
    hits = await any_store.search("Ingrid", limit=20)
    assert {(h.source, h.session_id) for h in hits} >= {
        ("item", "s1"),
        ("item", "s2"),
        ("ltm", None),
    }
    entry = next(h for h in hits if h.source == "ltm")
    assert entry.entry is not None and entry.entry.key == "sister"
    assert entry.text == 'sister: "Ingrid lives in Trondheim"'
    only_s2 = await any_store.search("Ingrid", sessions=["s2"])
    assert [(h.source, h.session_id) for h in only_s2] == [("item", "s2")]
    only_alice = await any_store.search("Ingrid", scopes=["user:alice"])
    assert [h.source for h in only_alice] == ["ltm"]
    both = await any_store.search("Ingrid", sessions=["s2"], scopes=["user:alice"])
    assert sorted(h.source for h in both) == ["item", "ltm"]
    by_key = await any_store.search("editor")
    assert [h.entry.value for h in by_key if h.entry is not None] == ["vim"]


async def test_a_scope_selects_its_sessions_and_its_entries(any_store: MemoryStore) -> None:
    """One meaning of a scope: the sessions recorded in it and its long-term entries; never
    another scope's sessions, nor the unscoped ones."""
    for session_id, scope in [("a-1", "user:alice"), ("b-1", "user:bob"), ("n-1", None)]:
        memory = any_store.session(session_id, scope=scope, estimator=WordEstimator())
        await memory.add("user", f"Lisbon trip notes of {session_id}.")
    await any_store.ltm.set("city", "Lisbon", scope="user:alice")
    await any_store.ltm.set("city", "Lisbon too", scope="user:bob")
    alice = await any_store.search("Lisbon", scopes=["user:alice"])
    where = sorted((h.source, h.session_id or h.entry.scope) for h in alice if h.entry or h.item)
    assert where == [("item", "a-1"), ("ltm", "user:alice")]
    both = await any_store.search("Lisbon", sessions=["n-1"], scopes=["user:alice"])
    assert sorted(h.session_id for h in both if h.source == "item") == ["a-1", "n-1"]
    assert [h.entry.scope for h in both if h.entry is not None] == ["user:alice"]
    nobody = await any_store.search("Lisbon", scopes=["user:carol"])
    assert nobody == []


async def test_entries_leave_the_index_when_deleted_or_changed(any_store: MemoryStore) -> None:
    await any_store.ltm.set("pet", "a parrot named Kiwi", scope="global")
    await any_store.ltm.set("pet", "a tortoise named Boris", scope="global")
    assert await any_store.search("Kiwi") == []
    assert [h.source for h in await any_store.search("Boris")] == ["ltm"]
    await any_store.ltm.delete("pet", scope="global")
    assert await any_store.search("Boris") == []
    assert await any_store.check() == []


#: Query syntax of FTS5 and tsquery, injection attempts, scripts and oddities.
HOSTILE = [
    '"',
    '"unbalanced',
    "*",
    "ingr*",
    "NEAR(Ingrid Trondheim, 2)",
    "Ingrid NEAR Trondheim",
    "-Ingrid",
    "Ingrid -Trondheim",
    "content:Ingrid",
    "{content}: Ingrid",
    "(Ingrid OR",
    "Ingrid AND NOT Trondheim",
    "Ingrid | Trondheim & !sister",
    "Ingrid <-> Trondheim",
    "'; DROP TABLE items; --",
    "\\' OR 1=1 --",
    "^Ingrid",
    "Ingrid\x00Trondheim",
    "Ингрид переехала",
    "英格丽德搬到了特隆赫姆",
    "إنجريد",
    "Ingrid 🚢 \u202e emoji",
    "a" * 5000,
    " ".join(f"w{i}" for i in range(500)),
    "AND",
    "OR OR OR",
    "NOT",
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_raise(any_store: MemoryStore, query: str) -> None:
    memory = await history(any_store)
    assert isinstance(await memory.search(query), list)
    assert isinstance(await any_store.search(query), list)


async def test_operators_are_words_and_never_change_the_meaning(any_store: MemoryStore) -> None:
    memory = await history(any_store)
    plain = [h.seq for h in await memory.search("Ingrid Trondheim")]
    assert plain
    # A minus, NOT or a column filter would exclude or narrow; here they are separators.
    for query in ("Ingrid -Trondheim", "Ingrid NOT Trondheim", "content:Ingrid Trondheim"):
        assert [h.seq for h in await memory.search(query)] == plain
    assert [h.seq for h in await memory.search('"Ingrid')] == [
        h.seq for h in await memory.search("Ingrid")
    ]


async def test_non_latin_words_are_searched_as_words(any_store: MemoryStore) -> None:
    memory = any_store.session("s1", limits=LIMITS, estimator=WordEstimator())
    await memory.add("user", "Встреча перенесена на пятницу в Москве")
    await memory.add("user", "Ο καιρός στην Αθήνα είναι ζεστός")
    found = await memory.search("москве", include_active=True)
    assert [h.seq for h in found] == [1]
    assert [h.seq for h in await memory.search("ΑΘΉΝΑ", include_active=True)] == [2]


def test_query_words_are_what_a_search_looks_for() -> None:
    assert search_terms("When did Ingrid move to Trondheim?") == ("ingrid", "move", "trondheim")
    assert search_terms("who are you") == ("who", "are", "you")  # nothing but common words
    assert search_terms('"NEAR*(a_b) -c:d') == ("near", "b", "c", "d")
    assert search_terms("***") == ()
    assert len(search_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_TERMS


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": 42}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 10_001}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": True}, "limit"),
        ({"query": "x", "limit": 1001}, "limit"),
        ({"query": "x", "sessions": "s1"}, "sessions"),
        ({"query": "x", "sessions": ["bad/id"]}, "sessions"),
        ({"query": "x", "scopes": ["nope"]}, "scopes"),
    ],
)
async def test_bad_arguments_name_the_field(
    store: MemoryStore, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        await store.search(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
