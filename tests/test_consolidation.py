"""Consolidation's contract, on SQLite and PostgreSQL.

A scoped session distils what it said into long-term entries of its scope: every entry names
its source, a second run (or an imported copy of the same items) writes nothing, a person's
entry is never superseded, a newer fact supersedes an older one as a new version kept in
history, a dry run writes nothing, the entries hold at most a fifth of the conversation's
tokens, compactions of a scoped session consolidate what they remove, and purging a source
session deletes its derived entries only when asked.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import table_counts

from memstore import MemoryItem, MemoryLimits, MemoryStore, ValidationError, WordEstimator
from memstore.extraction.slots import (
    ALREADY_CONSIDERED,
    ALREADY_KNOWN,
    ALREADY_RECORDED,
    FACT_PREFIX,
    PERSON_WROTE,
)

SCOPE = "user:alice"
#: Sentences of a life, the kind the offline extractor keeps (people, places, plans, likes).
CONVERSATION = [
    ("user", "Hi there! How are you today?"),
    ("assistant", "I'm good, thanks. What did you do this weekend?"),
    ("user", "My sister Maria moved to Lisbon last month and she works as a nurse there."),
    ("assistant", "That sounds exciting. Do you visit her often?"),
    ("user", "I am flying to Lisbon on March 14 to see her, and I love the food there."),
    ("assistant", "My favorite dish is grilled sardines, and I always order them in Porto."),
    ("user", "I adopted a beagle named Biscuit in January and he loves the beach."),
    ("assistant", "Biscuit is a great name. I have two cats called Miso and Tofu."),
]


@dataclass(frozen=True)
class SlotFact:
    """A fact of the shape extractors return (subject, attribute, text, seqs, said_on, weight)."""

    subject: str
    attribute: str
    text: str
    seqs: tuple[int, ...]
    said_on: str | None
    weight: float


class SlotExtractor:
    """An extractor that proposes its own keys, as a model extractor does: an item written
    ``subject / attribute = text`` states that fact. It lets a test name the slot a fact
    fills, which the offline extractor derives from the wording."""

    name = "slots"

    async def __call__(self, items: Sequence[MemoryItem]) -> list[SlotFact]:
        out = []
        for item in items:
            head, _, text = item.content.partition(" = ")
            subject, _, attribute = head.partition(" / ")
            if text and attribute:
                stamp = item.timestamp.isoformat()
                out.append(SlotFact(subject, attribute, text, (item.seq,), stamp, 1.0))
        return out


LIMITS = MemoryLimits(hard=400, target=300, keep_recent=2)
#: A reply that states nothing: it gives a short session the tokens a fact's budget needs.
FILLER = (
    "assistant",
    "Noted. Tell me more about that whenever you like; I am listening and will keep it in mind.",
)


async def said(store: MemoryStore, session_id: str, turns: Sequence[tuple[str, str]], **kw):  # type: ignore[no-untyped-def]
    memory = store.session(session_id, scope=SCOPE, limits=LIMITS, estimator=WordEstimator(), **kw)
    for role, text in turns:
        await memory.add(role, text)
    return memory


async def fact_entries(store: MemoryStore) -> dict[str, tuple[object, int]]:
    return {
        e.key: (e.value, e.version) for e in await store.ltm.list(scope=SCOPE, prefix=FACT_PREFIX)
    }


def copied(records: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """An export's records as another session's (what importing a copy of it gives)."""
    out = []
    for record in records:
        if record["type"] == "session":
            out.append({**record, "id": session_id})
        elif record["type"] == "item":
            out.append({**record, "session_id": session_id, "id": str(uuid.uuid4())})
        else:
            out.append({**record, "session_id": session_id})
    return out


# -- scope -----------------------------------------------------------------------------------


async def test_scope_is_recorded_shown_and_carried_by_export(any_store: MemoryStore) -> None:
    await said(any_store, "s1", CONVERSATION[:2])
    info = await any_store.session_info("s1")
    assert info.scope == SCOPE and info.to_dict()["scope"] == SCOPE
    records = await any_store.export_session("s1")
    assert records[0]["scope"] == SCOPE
    copy = copied(records, "s1-copy")
    await any_store.import_session(copy)
    assert (await any_store.session_info("s1-copy")).scope == SCOPE
    unscoped = any_store.session("plain", estimator=WordEstimator())
    await unscoped.add("user", "hello")
    assert (await any_store.session_info("plain")).scope is None
    with pytest.raises(ValidationError) as bad:
        any_store.session("x", scope="not a scope")
    assert bad.value.field == "scope"


async def test_a_handle_of_another_scope_cannot_append_to_a_scoped_session(
    any_store: MemoryStore,
) -> None:
    bob = any_store.session("bob-1", scope="user:bob", estimator=WordEstimator())
    await bob.add("user", "My locker code is 4471.")
    before = (await table_counts(any_store), await any_store.session_info("bob-1"))
    alice = any_store.session("bob-1", scope=SCOPE, estimator=WordEstimator())
    for write in (
        alice.add("user", "Alice writing into Bob's session."),
        alice.add_items([{"role": "user", "content": "And a batch of it."}]),
    ):
        with pytest.raises(ValidationError) as refused:
            await write
        assert refused.value.field == "scope" and "user:bob" in str(refused.value)
    assert (await table_counts(any_store), await any_store.session_info("bob-1")) == before
    # A handle that names no scope (an operator's) may still append; it stays Bob's.
    await any_store.session("bob-1", estimator=WordEstimator()).add("user", "Operator note.")
    assert (await any_store.session_info("bob-1")).scope == "user:bob"


async def test_an_unscoped_session_cannot_consolidate(any_store: MemoryStore) -> None:
    memory = any_store.session("plain", estimator=WordEstimator())
    await memory.add("user", "My sister Maria moved to Lisbon last month.")
    with pytest.raises(ValidationError) as refused:
        await memory.consolidate()
    assert refused.value.field == "scope"
    assert await any_store.ltm.list() == []


# -- provenance, idempotency, compactness ---------------------------------------------------------


async def test_every_entry_names_its_source(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", CONVERSATION)
    report = await memory.consolidate()
    assert report is not None and report.number == 1 and report.written
    assert report.items == tuple(range(1, len(CONVERSATION) + 1))
    entries = await any_store.ltm.list(scope=SCOPE)
    assert entries and all(e.key.startswith(FACT_PREFIX) for e in entries)
    for entry in entries:
        source = entry.source
        assert source is not None
        assert source["session"] == "s1" and source["extractor"] == "extractive"
        assert source["run"] == 1 and source["seqs"]
        assert set(source["seqs"]) <= set(report.items)
        said_text = " ".join(CONVERSATION[s - 1][1] for s in source["seqs"]).casefold()
        assert any(word in said_text for word in str(entry.value).casefold().split())
        (change,) = await any_store.ltm.history(entry.key, scope=SCOPE)
        assert change.source == source
    assert [r.number for r in await memory.consolidation_reports()] == [1]


async def test_a_second_run_and_an_imported_copy_write_nothing(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", CONVERSATION)
    first = await memory.consolidate()
    assert first is not None and first.written
    before = await fact_entries(any_store)
    counts = await table_counts(any_store)

    again = await memory.consolidate()
    assert again is not None and again.number is None and again.proposed == 0
    assert await table_counts(any_store) == counts

    records = await any_store.export_session("s1")
    copy = copied(records, "s1-copy")
    await any_store.import_session(copy)
    twin = any_store.session("s1-copy", scope=SCOPE, limits=LIMITS, estimator=WordEstimator())
    imported = await twin.consolidate()
    assert imported is not None and imported.proposed == len(first.decisions)
    assert not imported.written and not imported.superseded
    assert {d.reason for d in imported.skipped} <= {ALREADY_KNOWN, ALREADY_CONSIDERED}
    assert await fact_entries(any_store) == before  # no version bumped


async def test_entries_hold_at_most_a_fifth_of_the_tokens(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", CONVERSATION * 3)
    report = await memory.consolidate()
    assert report is not None
    assert report.budget == report.source_tokens // 5  # the session's first run
    assert 0 < report.entry_tokens <= report.budget
    counted = sum(
        WordEstimator().count(f"{e.key} {e.value}") for e in await any_store.ltm.list(scope=SCOPE)
    )
    assert counted <= report.source_tokens / 5


async def test_a_dry_run_writes_nothing(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", CONVERSATION)
    counts = await table_counts(any_store)
    preview = await memory.consolidate(dry_run=True)
    assert preview is not None and preview.dry_run and preview.number is None
    assert preview.written  # it says what a run would write...
    assert await table_counts(any_store) == counts  # ...and writes nothing
    assert await any_store.ltm.list() == []
    done = await memory.consolidate()
    assert done is not None
    assert [d.key for d in done.written] == [d.key for d in preview.written]


@pytest.mark.parametrize("flag", ["yes", "no", 1, None])
async def test_a_dry_run_flag_that_is_no_bool_is_refused(any_store: MemoryStore, flag: Any) -> None:
    memory = await said(any_store, "s1", CONVERSATION, consolidate=False)
    counts = await table_counts(any_store)
    with pytest.raises(ValidationError) as refused:
        await memory.consolidate(dry_run=flag)
    assert refused.value.field == "dry_run"
    assert await table_counts(any_store) == counts


# -- people win; supersession -------------------------------------------------------------------


async def test_a_persons_entry_is_never_superseded(any_store: MemoryStore) -> None:
    extractor = SlotExtractor()
    key = "fact:user:home-city"
    person = await any_store.ltm.set(key, "Berlin (set by Alice herself)", scope=SCOPE)
    assert person.source is None
    memory = await said(any_store, "s1", [("user", "user / home city = I live in Lisbon."), FILLER],
                        extractor=extractor)  # fmt: skip
    report = await memory.consolidate()
    assert report is not None and not report.written and not report.superseded
    (skip,) = report.skipped
    assert (skip.key, skip.reason) == (key, PERSON_WROTE)
    entry = await any_store.ltm.get(key, scope=SCOPE)
    assert entry is not None and entry.version == person.version and entry.source is None
    # The same holds for a fact entry a person later overwrote.
    await memory.add("user", "user / pet = I have a beagle.")
    await memory.consolidate()
    await any_store.ltm.set("fact:user:pet", "a beagle called Biscuit", scope=SCOPE)
    await memory.add("user", "user / pet = I have a cat now.")
    later = await memory.consolidate()
    assert later is not None and [d.reason for d in later.skipped] == [PERSON_WROTE]
    assert (await any_store.ltm.get("fact:user:pet", scope=SCOPE)).value == (  # type: ignore[union-attr]
        "a beagle called Biscuit"
    )


async def test_a_newer_fact_supersedes_the_older_one_in_history(any_store: MemoryStore) -> None:
    extractor = SlotExtractor()
    first = await said(any_store, "s1", [("user", "user / home city = I live in Lisbon."), FILLER],
                       extractor=extractor)  # fmt: skip
    await first.consolidate()
    second = await said(any_store, "s2", [("user", "user / home city = I moved to Porto."), FILLER],
                        extractor=extractor)  # fmt: skip
    report = await second.consolidate()
    assert report is not None and [d.key for d in report.superseded] == ["fact:user:home-city"]
    assert report.superseded[0].replaced == "I live in Lisbon."
    entry = await any_store.ltm.get("fact:user:home-city", scope=SCOPE)
    assert entry is not None and entry.value == "I moved to Porto." and entry.version == 2
    assert entry.source is not None and entry.source["session"] == "s2"
    history = await any_store.ltm.history("fact:user:home-city", scope=SCOPE)
    assert [(c.version, c.value, (c.source or {}).get("session")) for c in history] == [
        (1, "I live in Lisbon.", "s1"),
        (2, "I moved to Porto.", "s2"),
    ]
    # The older fact seen again (an imported copy of s1) does not undo the newer one.
    records = await any_store.export_session("s1")
    copy = copied(records, "s1-copy")
    await any_store.import_session(copy)
    twin = any_store.session("s1-copy", scope=SCOPE, estimator=WordEstimator(),
                             extractor=extractor)  # fmt: skip
    again = await twin.consolidate()
    assert again is not None and [d.reason for d in again.skipped] == [ALREADY_RECORDED]
    assert (await any_store.ltm.get("fact:user:home-city", scope=SCOPE)).version == 2  # type: ignore[union-attr]


# -- after compactions; purge ------------------------------------------------------------------


async def test_compactions_of_a_scoped_session_consolidate_what_they_remove(
    any_store: MemoryStore,
) -> None:
    memory = await said(any_store, "s1", CONVERSATION * 4)
    reports = await memory.reports()
    assert reports, "the limits are meant to force compactions"
    runs = await memory.consolidation_reports()
    assert runs and all(run.compaction is not None for run in runs)
    forgotten = {item.seq for item in await memory.forgotten_items()}
    consumed = {seq for run in runs for seq in run.items}
    assert consumed <= forgotten
    assert await any_store.ltm.list(scope=SCOPE)

    quiet = await said(any_store, "s2", CONVERSATION * 4, consolidate=False)
    assert await quiet.reports() and await quiet.consolidation_reports() == []


async def test_purge_deletes_derived_entries_only_when_asked(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", CONVERSATION)
    await memory.consolidate()
    derived = await any_store.derived_entries("s1")
    assert derived and {e.source["session"] for e in derived} == {"s1"}  # type: ignore[index]
    await any_store.ltm.set("fact:kept-by-person", "mine", scope=SCOPE)
    await any_store.purge("s1")
    assert {e.key for e in await any_store.ltm.list(scope=SCOPE)} >= {e.key for e in derived}

    again = await said(any_store, "s1", CONVERSATION[:3])
    await again.consolidate()
    await any_store.purge("s1", with_derived=True)
    left = await any_store.ltm.list(scope=SCOPE)
    assert [e.key for e in left] == ["fact:kept-by-person"]


async def test_an_import_with_a_bad_scope_is_refused(any_store: MemoryStore) -> None:
    await said(any_store, "s1", CONVERSATION[:2])
    records = copied(await any_store.export_session("s1"), "s1-copy")
    records[0]["scope"] = "not a scope"
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    assert refused.value.field == "record 1.scope"
    assert [info.id for info in await any_store.sessions()] == ["s1"]
