"""A newer value replaces an older one across compactions, not only within one.

A fact line names its slot (:func:`memstore.core.tool_results.line_slot`): the subject before
the colon and the keys of its values. A line read back from a summary names the same slot
as when it was extracted, so the next compaction's newer value of it replaces it; statements
never replace each other.
"""

from __future__ import annotations

import json

import pytest
from test_summarizers import item, lookup

from memstore import ExtractiveSummarizer, MemoryKind, MemoryLimits, MemoryStore, WordEstimator
from memstore.core.facts import FACT, FactList, extract, make_fact
from memstore.core.slots import fact_slot
from memstore.core.summarizers import parse_summary
from memstore.core.tool_results import line_slot

SHIPPED = "Order 3: status shipped, carrier DHL"
DELIVERED = "Order 3: status delivered, carrier DHL"


def order(seq: int, number: int, status: str, reply: str = "Done.") -> list:
    return lookup(
        seq,
        f"Where is order {number}?",
        "lookup_order",
        {"order_id": number},
        json.dumps({"order_id": number, "status": status, "carrier": "DHL"}),
        reply,
    )


def fold(previous: str | None, *items: object) -> str:
    return ExtractiveSummarizer(max_tokens=400).summarize(previous, list(items))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "slot"),
    [
        ("Order 3: status shipped, carrier DHL", ("Order 3", "carrier status")),
        ("EZ690: gate A12, boarding 20:15, status delayed", ("EZ690", "boarding gate status")),
        ("Ticket T-77; Status: escalated; Assignee: Bob Smith", ("Ticket T-77", "assignee status")),
        ("Caroline: I went to a support group yesterday (7 May 2023).", ("", "")),
        ("Caroline: we went camping, kids loved it.", ("", "")),  # a sentence: a full stop
        ("User: prefers window seats", ("", "")),  # a speaker's label names no thing
        ("Order 3: It left the warehouse on Monday", ("", "")),  # an answer in words
        ("Id A-1042, state in transit", ("", "")),  # no label
        ("", ("", "")),
    ],
)
def test_a_line_names_its_slot_or_none(line: str, slot: tuple[str, str]) -> None:
    assert line_slot(line) == slot


def test_a_fresh_fact_and_its_read_back_line_name_the_same_slot() -> None:
    (fresh,) = extract(order(1, 3, "shipped")).facts
    assert fresh.text == SHIPPED
    (back,) = parse_summary(f"Facts:\n- {fresh.text}").facts.facts
    assert (back.subject, back.attribute) == (fresh.subject, fresh.attribute) != ("", "")
    assert fact_slot(back) == fact_slot(fresh) == "fact:order-3:carrier-status"


def test_an_order_whose_status_changes_between_compactions_keeps_only_the_newest() -> None:
    first = fold(None, *order(1, 3, "shipped"))
    assert SHIPPED in first
    second = fold(first, *order(5, 3, "delivered"))
    assert f"- {DELIVERED}" in second.splitlines()
    assert "shipped" not in second
    third = fold(second, item("Thanks, that is all for today.", seq=9))
    assert "shipped" not in third and f"- {DELIVERED}" in third.splitlines()


def test_two_orders_keep_both_lines() -> None:
    first = fold(None, *order(1, 3, "shipped"))
    second = fold(first, *order(5, 4, "delivered"))
    lines = second.splitlines()
    assert f"- {SHIPPED}" in lines and "- Order 4: status delivered, carrier DHL" in lines


def test_a_different_kind_of_result_about_the_same_order_keeps_both() -> None:
    first = fold(None, *order(1, 3, "shipped"))
    refund = lookup(5, "Was order 3 refunded?", "refund_status", {"order_id": 3},
                    json.dumps({"refund": "none", "reason": "not requested"}), "No.")  # fmt: skip
    lines = fold(first, *refund).splitlines()
    assert f"- {SHIPPED}" in lines and "- Order 3: refund none, reason not requested" in lines


def test_two_statements_by_the_same_speaker_both_stay() -> None:
    said = [
        item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        item("Caroline: I live in Lisbon with my sister Maria and our dog.", seq=2),
    ]
    first = fold(None, *said)
    moved = item("Caroline: I moved to Porto last month with my partner Joao.", seq=3)
    second = fold(first, moved)
    assert "Lisbon" in second and "Porto" in second
    # The same with any speaker's label, and with the user's own.
    facts = FactList()
    assert facts.add(make_fact("User: my home is Lisbon", slot_from_line=True))
    assert facts.add(make_fact("User: my home is Porto now", slot_from_line=True))
    assert len(facts.facts) == 2


def test_an_answer_in_words_never_replaces_another() -> None:
    facts = FactList()
    for text in ("Flight BA117: It boards at gate B32.", "Flight BA117: It boards at gate C4."):
        assert facts.add(make_fact(text, kind=FACT, slot_from_line=True))
    assert len(facts.facts) == 2


async def test_through_the_store_the_summary_keeps_only_the_newest_status(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session(
        "orders",
        limits=MemoryLimits(hard=400, target=200, keep_recent=2),
        estimator=WordEstimator(),
    )
    for status in ("awaiting stock", "shipped", "delivered"):
        await memory.add("user", "Where is order 3?")
        await memory.add("tool", json.dumps({"order_id": 3, "status": status, "carrier": "DHL"}))
        await memory.add("assistant", f"Order 3 is {status}.")
        await memory.add("user", "Fine. Please also remind me to call the bank on Friday.")
        await memory.add("assistant", "I will remind you to call the bank on Friday at noon.")
        await memory.compact()
    reports = await memory.reports()
    assert len(reports) >= 3 and all(r.summary_error is None for r in reports)
    summary = await memory.summary() or ""
    statuses = [line for line in summary.splitlines() if "status" in line]
    assert statuses == ["- Order 3: status delivered, carrier DHL"], summary


async def test_consolidation_supersedes_by_the_same_slot(any_store: MemoryStore) -> None:
    memory = any_store.session(
        "orders-1", scope="user:alice", estimator=WordEstimator(), consolidate=False
    )
    filler = " ".join(["We walked through the usual checks together, nothing unusual."] * 6)
    for status in ("shipped", "delivered"):
        await memory.add("user", "Where is order 3?")
        await memory.add("tool", json.dumps({"order_id": 3, "status": status, "carrier": "DHL"}))
        await memory.add("assistant", filler)
        await memory.consolidate()
    entry = await any_store.ltm.get("fact:order-3:carrier-status", scope="user:alice")
    assert entry is not None and (entry.value, entry.version) == (DELIVERED, 2)
    history = await any_store.ltm.history("fact:order-3:carrier-status", scope="user:alice")
    assert [change.value for change in history] == [SHIPPED, DELIVERED]
