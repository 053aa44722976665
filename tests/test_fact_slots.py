"""A newer value replaces an older one across compactions, not only within one.

Within a compaction a tool result's slot is its subject and its tool. A line read back from a
summary no longer knows its tool: a JSON result's new line replaces it when the old line has
exactly the same subject and fields (:func:`memstore.extraction.actions.same_shape`).
Statements, answers in words and results with other fields never replace one another.
"""

from __future__ import annotations

import json
import re

import pytest
from test_summarizers import item, lookup

from memstore import ExtractiveSummarizer, MemoryKind, MemoryLimits, MemoryStore, WordEstimator
from memstore.core.consolidation_report import OVER_BUDGET
from memstore.extraction.actions import same_shape, value_keys
from memstore.extraction.facts import FactList, extract, make_fact
from memstore.extraction.slots import decide, entry_cost, fact_slot

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
    ("line", "same"),
    [
        ("Order 3: status shipped, carrier DHL", True),
        ("Order 3: status shipped, carrier DHL, eta 4 June", False),  # other fields
        ("Order 4: status shipped, carrier DHL", False),  # another subject
        ("Order 3: carrier DHL, status shipped", False),  # another order of fields
        ("Caroline: status is what she cares about, carrier pigeons too", False),
        ("Order 3: It left the warehouse on Monday, carrier said", False),  # words
        ("Order 3: status shipped", False),
    ],
)
def test_only_a_line_with_the_same_subject_and_fields_has_the_same_shape(
    line: str, same: bool
) -> None:
    assert same_shape(line, "Order 3", ("status", "carrier")) is same


def test_a_flat_json_result_names_its_fields_in_the_order_its_line_lists_them() -> None:
    result = json.dumps({"order_id": 3, "status": "shipped", "carrier": "DHL"})
    assert value_keys(result, "order 3") == ("status", "carrier")  # the id is the subject
    assert value_keys("Shipped with DHL.", "order 3") == ()  # text: no fields
    assert value_keys(json.dumps({"items": [{"sku": 1}]}), "") == ()  # nested: no pairs


def test_a_fresh_fact_keeps_its_tool_slot_and_the_fields_of_its_line() -> None:
    (fresh,) = extract(order(1, 3, "shipped")).facts
    assert fresh.text == SHIPPED
    assert (fresh.subject, fresh.attribute, fresh.shape) == (
        "order 3", "lookup_order", ("status", "carrier"),
    )  # fmt: skip
    assert fact_slot(fresh) == "fact:order-3:lookup_order"  # consolidation's key, unchanged


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


def test_a_result_never_replaces_a_statement_or_an_answer_in_words() -> None:
    facts = FactList()
    for text in ("Caroline: went to the support group", "Order 3: it left on Monday, late"):
        assert facts.add(make_fact(text))
    assert facts.add(make_fact("Caroline: phone 555-0101", shape=("phone",)))  # a contact
    assert facts.add(make_fact("Order 3: status shipped", shape=("status",)))
    assert len(facts.facts) == 4


def test_two_tools_about_one_order_keep_both_lines_within_a_compaction() -> None:
    returns = lookup(
        5,
        "And its return?",
        "return_status",
        {"order_id": 3},
        json.dumps({"order_id": 3, "status": "pending", "carrier": "DHL"}),
        "Ok.",
    )
    lines = fold(None, *order(1, 3, "shipped"), *returns).splitlines()  # fmt: skip
    assert f"- {SHIPPED}" in lines and "- Order 3: status pending, carrier DHL" in lines


def test_a_text_result_of_the_same_tool_replaces_the_older_within_a_compaction() -> None:
    first = lookup(1, "Where is order 3?", "track", {"order_id": 3}, "Left the depot in Leeds.",
                   "Ok.")  # fmt: skip
    later = lookup(5, "And now?", "track", {"order_id": 3}, "Delivered to Ana in Porto.", "Ok.")
    summary = fold(None, *first, *later)
    assert "Porto" in summary and "Leeds" not in summary


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
    key = "fact:order-3:carrier-status"  # no call named a tool: its fields name the slot
    entry = await any_store.ltm.get(key, scope="user:alice")
    assert entry is not None and (entry.value, entry.version) == (DELIVERED, 2)
    history = await any_store.ltm.history(key, scope="user:alice")
    assert [change.value for change in history] == [SHIPPED, DELIVERED]


def test_results_about_no_known_subject_never_replace_each_other() -> None:
    first = lookup(1, "Any bookings?", "list_bookings", {"date": "2024-06-14"},
                   json.dumps({"count": 3, "first": "19:00"}), "Three.")  # fmt: skip
    later = lookup(5, "And the next day?", "list_bookings", {"date": "2024-06-15"},
                   json.dumps({"count": 5, "first": "20:00"}), "Five.")  # fmt: skip
    facts = extract([*first, *later]).facts
    assert [f.attribute for f in facts if "count" in f.text.lower()] == ["", ""]
    summary = fold(fold(None, *first), *later)
    assert "19:00" in summary and "20:00" in summary


def test_an_empty_field_left_off_the_line_still_lets_the_newer_value_replace_it() -> None:
    def status(seq: int, value: str) -> list:
        return lookup(seq, "Where is order 3?", "lookup_order", {"order_id": 3},
                      json.dumps({"order_id": 3, "status": value, "carrier": "DHL", "eta": None,
                                  "notes": "", "tags": []}), "Ok.")  # fmt: skip

    second = fold(fold(None, *status(1, "shipped")), *status(5, "delivered"))
    assert "- Order 3: status delivered, carrier DHL" in second.splitlines()
    assert "shipped" not in second


def test_a_result_never_replaces_a_decision_line() -> None:
    decided = make_fact("Order 3: status cancelled, refund 20 EUR", kind="decision")
    facts = FactList()
    assert facts.add(decided)
    assert facts.add(
        make_fact("Order 3: status refunded, refund 20 EUR", shape=("status", "refund"))
    )
    assert [f.kind for f in facts.facts] == ["decision", "fact"]


def test_a_statements_key_is_the_same_for_the_same_fact_in_other_punctuation() -> None:
    said = make_fact("User: I adopted a beagle named Biscuit in January.", subject="User")
    again = make_fact("User: i adopted a beagle, named Biscuit, in January!", subject="User")
    assert fact_slot(said) == fact_slot(again)
    assert re.fullmatch(r"fact:user:adopted-beagle~[0-9a-f]{6}", fact_slot(said))


def test_consolidation_takes_facts_on_different_things_before_repeats() -> None:
    facts = [
        make_fact("User: My sister Maria moved to Lisbon, she works as a nurse.", subject="User",
                  seqs=(1,)),
        make_fact("User: My sister Maria, a nurse, moved to Lisbon in spring.", subject="User",
                  seqs=(2,)),  # another slot (another word), but mostly the same thing
        make_fact("User: I adopted a beagle named Biscuit.", subject="User", seqs=(3,)),
    ]  # fmt: skip
    count = WordEstimator().count
    costs = [entry_cost(fact_slot(f), f.text, count) for f in facts]
    decisions = decide(facts, {}, budget=costs[0] + costs[2], count=count)
    written = {d.text for d in decisions if d.writes}
    assert facts[2].text in written and len(written) == 2  # Biscuit, and Maria once
    assert [d.reason for d in decisions if not d.writes] == [OVER_BUDGET]
