"""Consolidation through a real store, on SQLite and PostgreSQL.

A scoped session distils what it said into long-term entries of its scope: every entry names
its source; a second run, or an imported copy of the same items, writes nothing; a person's
entry is never superseded; a newer fact supersedes an older one as a new version kept in
history; a dry run writes nothing; a short conversation's every statement of the user's
becomes an entry, and a long one's entries stay within a quarter of its tokens beside what
the user stated; compactions of a scoped session consolidate what they remove; purging a
source deletes its derived entries only when asked.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import table_counts

from memstore import MemoryItem, MemoryLimits, MemoryStore, ValidationError, WordEstimator
from memstore.core.consolidation_report import OVER_BUDGET
from memstore.extraction.slots import (
    ALREADY_CONSIDERED,
    ALREADY_KNOWN,
    ALREADY_RECORDED,
    FACT_PREFIX,
    PERSON_WROTE,
    SHORT_CONVERSATION_TOKENS,
    budget_for,
)

SCOPE = "user:rosa"
#: A short planning chat: chatter, statements of the user's, an assistant that says things.
CONVERSATION = [
    ("user", "Hello! Good morning."),
    ("assistant", "Good morning. What are we planning today?"),
    ("user", "My brother Tomas is moving to Ghent in April and starts at the university there."),
    ("assistant", "Nice. Will you help him move?"),
    ("user", "I am driving the van to Ghent on 12 April, it is 780 km from Lyon."),
    ("assistant", "I usually suggest a stop in Reims on such a long drive."),
    ("user", "I prefer to leave before dawn."),
    ("assistant", "Then leaving at 5:00 gets you there by early evening."),
    ("user", "Thanks, sounds good."),
    ("user", "Tomas has a cat called Pistache that travels with us."),
    ("assistant", "Ok."),
    ("user", "Is there a vet near the Ghent campus?"),
]
#: What the user stated in it (not the greeting, the thanks or the question).
USER_STATEMENTS = ("Tomas is moving", "driving the van", "leave before dawn", "Pistache")


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
    """An extractor that names its own slots, as a model extractor does: an item written
    ``subject / attribute = text`` states that fact."""

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
#: A reply that states nothing.
FILLER = ("assistant", "Noted. Tell me more whenever you like; I am listening.")


async def said(store: MemoryStore, session_id: str, turns: Sequence[tuple[str, str]], **kw: Any):  # type: ignore[no-untyped-def]
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
    await any_store.import_session(copied(records, "s1-copy"))
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
    await bob.add("user", "My bike lock code is 3307.")
    before = (await table_counts(any_store), await any_store.session_info("bob-1"))
    rosa = any_store.session("bob-1", scope=SCOPE, estimator=WordEstimator())
    for write in (
        rosa.add("user", "Rosa writing into Bob's session."),
        rosa.add_items([{"role": "user", "content": "And a batch of it."}]),
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
    await memory.add("user", "My brother Tomas is moving to Ghent in April.")
    with pytest.raises(ValidationError) as refused:
        await memory.consolidate()
    assert refused.value.field == "scope"
    assert await any_store.ltm.list() == []


# -- what a person would note ------------------------------------------------------------------


async def test_one_stated_preference_is_one_entry(any_store: MemoryStore) -> None:
    memory = await said(any_store, "s1", [("user", "I prefer pytest.")])
    report = await memory.consolidate()
    assert report is not None and [d.text for d in report.written] == ["User: I prefer pytest."]
    assert not report.skipped
    (entry,) = await any_store.ltm.list(scope=SCOPE)
    assert entry.value == "User: I prefer pytest."


async def test_a_short_conversation_writes_every_statement_of_the_users(
    any_store: MemoryStore,
) -> None:
    memory = await said(any_store, "s1", CONVERSATION)
    report = await memory.consolidate()
    assert report is not None and report.source_tokens <= SHORT_CONVERSATION_TOKENS
    written = [d.text for d in report.written]
    for statement in USER_STATEMENTS:
        assert any(statement in text and text.startswith("User: ") for text in written), statement
    assert not any("Good morning" in t or "Thanks" in t or "vet" in t for t in written)
    assert not [d for d in report.skipped if d.text.startswith("User: ")]


def long_conversation() -> list[dict[str, str]]:
    """Some 10,000 tokens: a user telling of many neighbours and places, replies that say
    little, and two stated preferences among them."""
    names = ["Amaro", "Berit", "Chidi", "Dalia", "Emeka", "Farah", "Goran", "Hanne", "Ilse"]
    things = ["boiler", "fence", "bicycle", "piano", "roof", "gate", "kiln", "loom", "canoe"]
    places = ["Ghent", "Lyon", "Braga", "Turku", "Split", "Graz", "Cork", "Bergen", "Vigo"]
    turns = []
    for n in range(220):
        name, thing, place = names[n % 9], things[(n // 9) % 9], places[(n // 3) % 9]
        turns.append(
            {
                "role": "user",
                "content": f"My neighbour {name} repaired the {thing} of a friend in {place} "
                f"and kept the receipt number R{n:04d} in a drawer.",
            }
        )
        turns.append(
            {
                "role": "assistant",
                "content": "Understood, that is good to know; tell me whenever something "
                "else comes up and we will keep going from there together.",
            }
        )
    turns[100] = {"role": "user", "content": "I prefer tea to coffee in the afternoon."}
    turns[300] = {"role": "user", "content": "Never call me before nine in the morning."}
    return turns


async def test_a_long_conversations_entries_stay_within_a_quarter_beside_what_was_stated(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session(
        "long", scope=SCOPE, estimator=WordEstimator(), consolidate=False,
        limits=MemoryLimits(hard=200_000, target=150_000, keep_recent=2),
    )  # fmt: skip
    turns = long_conversation()
    for start in range(0, len(turns), 40):
        await memory.add_items(turns[start : start + 40])
    report = await memory.consolidate()
    assert report is not None and report.source_tokens > 8000
    assert report.budget == budget_for(report.source_tokens) == int(report.source_tokens * 0.25)
    stated = [d for d in report.written if "prefer tea" in d.text or "Never call" in d.text]
    assert len(stated) == 2  # stated preferences and rules come first, whatever the budget
    rest = [d for d in report.written if d not in stated]
    assert rest and sum(d.tokens for d in rest) <= report.budget
    assert any(d.reason == OVER_BUDGET for d in report.skipped)  # the budget governed the rest
    by_key = {e.key: e for e in await any_store.ltm.list(scope=SCOPE)}
    assert {d.key for d in report.written} == set(by_key)
    assert all(d.text in {str(e.value) for e in by_key.values()} for d in stated)


# -- provenance, idempotency -----------------------------------------------------------------


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

    await any_store.import_session(copied(await any_store.export_session("s1"), "s1-copy"))
    twin = any_store.session("s1-copy", scope=SCOPE, limits=LIMITS, estimator=WordEstimator())
    imported = await twin.consolidate()
    assert imported is not None and imported.proposed == len(first.decisions)
    assert not imported.written and not imported.superseded
    assert {d.reason for d in imported.skipped} <= {ALREADY_KNOWN, ALREADY_CONSIDERED}
    assert await fact_entries(any_store) == before  # no version bumped


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
    person = await any_store.ltm.set(key, "Lyon (set by Rosa herself)", scope=SCOPE)
    assert person.source is None
    memory = await said(any_store, "s1", [("user", "user / home city = I live in Ghent."), FILLER],
                        extractor=extractor)  # fmt: skip
    report = await memory.consolidate()
    assert report is not None and not report.written and not report.superseded
    (skip,) = report.skipped
    assert (skip.key, skip.reason) == (key, PERSON_WROTE)
    entry = await any_store.ltm.get(key, scope=SCOPE)
    assert entry is not None and entry.version == person.version and entry.source is None
    # The same holds for a fact entry a person later overwrote.
    await memory.add("user", "user / pet = I have a cat called Pistache.")
    await memory.consolidate()
    await any_store.ltm.set("fact:user:pet", "a grey cat called Pistache", scope=SCOPE)
    await memory.add("user", "user / pet = I have a parrot now.")
    later = await memory.consolidate()
    assert later is not None and [d.reason for d in later.skipped] == [PERSON_WROTE]
    pet = await any_store.ltm.get("fact:user:pet", scope=SCOPE)
    assert pet is not None and pet.value == "a grey cat called Pistache"


async def test_a_newer_fact_supersedes_the_older_one_in_history(any_store: MemoryStore) -> None:
    extractor = SlotExtractor()
    first = await said(any_store, "s1", [("user", "user / home city = I live in Lyon."), FILLER],
                       extractor=extractor)  # fmt: skip
    await first.consolidate()
    second = await said(any_store, "s2", [("user", "user / home city = I moved to Ghent."),
                                          FILLER], extractor=extractor)  # fmt: skip
    report = await second.consolidate()
    assert report is not None and [d.key for d in report.superseded] == ["fact:user:home-city"]
    assert report.superseded[0].replaced == "I live in Lyon."
    entry = await any_store.ltm.get("fact:user:home-city", scope=SCOPE)
    assert entry is not None and entry.value == "I moved to Ghent." and entry.version == 2
    assert entry.source is not None and entry.source["session"] == "s2"
    history = await any_store.ltm.history("fact:user:home-city", scope=SCOPE)
    assert [(c.version, c.value, (c.source or {}).get("session")) for c in history] == [
        (1, "I live in Lyon.", "s1"),
        (2, "I moved to Ghent.", "s2"),
    ]
    # The older fact seen again (an imported copy of s1) does not undo the newer one.
    await any_store.import_session(copied(await any_store.export_session("s1"), "s1-copy"))
    twin = any_store.session("s1-copy", scope=SCOPE, estimator=WordEstimator(),
                             extractor=extractor)  # fmt: skip
    again = await twin.consolidate()
    assert again is not None and [d.reason for d in again.skipped] == [ALREADY_RECORDED]
    home = await any_store.ltm.get("fact:user:home-city", scope=SCOPE)
    assert home is not None and home.version == 2


async def test_a_newer_output_of_the_same_call_supersedes_its_entry(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session("orders", scope=SCOPE, estimator=WordEstimator(), consolidate=False)
    for status in ("shipped", "delivered"):
        call_id = f"call-{status}"
        arguments = json.dumps({"order_id": "W-31"})
        output = json.dumps({"order_id": "W-31", "status": status, "carrier": "DPD"})
        await memory.add("user", "Where is my order W-31?")
        await memory.add_items(
            [
                {"type": "function_call", "call_id": call_id, "name": "get_order",
                 "arguments": arguments},
                {"type": "function_call_output", "call_id": call_id, "output": output},
            ]
        )  # fmt: skip
        await memory.consolidate()
    calls = [e for e in await any_store.ltm.list(scope=SCOPE) if "get_order" in str(e.value)]
    (entry,) = calls
    assert entry.value == "get_order(W-31): delivered, DPD" and entry.version == 2
    history = await any_store.ltm.history(entry.key, scope=SCOPE)
    assert [change.value for change in history] == [
        "get_order(W-31): shipped, DPD",
        "get_order(W-31): delivered, DPD",
    ]


# -- after compactions; purge ------------------------------------------------------------------


async def test_compactions_of_a_scoped_session_consolidate_what_they_remove(
    any_store: MemoryStore,
) -> None:
    memory = await said(any_store, "s1", CONVERSATION * 4)
    assert await memory.reports(), "the limits are meant to force compactions"
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
    assert derived and {(e.source or {}).get("session") for e in derived} == {"s1"}
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
