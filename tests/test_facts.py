"""Facts from items, pure: dates, tool results, attribution, repeats and supersession."""

from __future__ import annotations

import json
from datetime import date

import pytest
from conftest import make_item
from test_summarizers import lookup

from memstore.core.dates import find_date, format_date, pin_relative, session_date
from memstore.core.values import MemoryKind
from memstore.extraction.actions import call_subject, question_subject, result_values
from memstore.extraction.facts import Fact, FactList, extract, extract_facts, make_fact
from memstore.extraction.statements import is_constraint, is_request, score, sentences


@pytest.mark.parametrize(
    "text",
    [
        "8 May 2023",
        "1:56 pm on 8 May, 2023",
        "May 8, 2023",
        "on the 8th of May 2023",
        "2023-05-08",
    ],
)
def test_a_date_is_read_in_the_forms_people_write(text: str) -> None:
    assert find_date(text) == date(2023, 5, 8)
    assert format_date(date(2023, 5, 8)) == "8 May 2023"


def test_only_a_note_that_states_a_date_is_a_session_marker() -> None:
    assert session_date("New conversation session on 1:56 pm on 8 May, 2023.") == date(2023, 5, 8)
    assert session_date("Session date: 2023-05-08") == date(2023, 5, 8)
    assert session_date("Deploy frozen until 12 June 2024.") is None
    assert session_date("New conversation session.") is None


def test_relative_dates_are_pinned_to_the_day_they_were_said() -> None:
    said = date(2023, 5, 8)  # a Monday
    assert pin_relative("I went yesterday and will go back next week.", said) == (
        "I went yesterday (7 May 2023) and will go back next week (the week after 8 May 2023)."
    )
    assert pin_relative("We moved last year, two days ago we painted.", said) == (
        "We moved last year (2022), two days ago (6 May 2023) we painted."
    )
    assert pin_relative("It was last Friday.", said) == "It was last Friday (5 May 2023)."


def test_tool_results_keep_their_values_compactly() -> None:
    nested = {"order": {"id": "A-7", "state": "shipped", "shipping": {"carrier": "DHL"}}}
    assert result_values(json.dumps(nested)) == "id A-7, state shipped, carrier DHL"
    record = "Ticket SUP-4411\nStatus: escalated\nAssignee: Priya\nHistory: " + "note added. " * 30
    assert result_values(record) == "Ticket SUP-4411; Status: escalated; Assignee: Priya"
    prose = json.dumps({"id": "SUP-1", "status": "open", "history": "word " * 40})
    assert result_values(prose, "ticket SUP-1") == "status open"


def test_what_a_call_or_question_is_about() -> None:
    assert call_subject("lookup_order", '{"order_id": "A-1042"}') == "order A-1042"
    assert call_subject("flight_status", '{"flight": "BA117", "date": "2024-06-02"}') == (
        "flight BA117"
    )
    assert call_subject("get_weather", '{"city": "Lisbon", "units": "metric"}') == "Lisbon"
    assert call_subject("find_event", '{"query": "design review"}') == "design review"
    assert question_subject("Where is order 3?") == "order 3"
    assert question_subject("What's the weather like in New York today?") == "New York"


def test_sentences_and_their_kinds() -> None:
    assert sentences("no idea So I was at church Then we left.") == [
        "no idea",
        "So I was at church",
        "Then we left.",
    ]
    assert is_constraint("Never restart payments during business hours.")
    assert is_constraint("Turn 3: never deploy on Fridays.")
    assert not is_constraint("Never hurts to ask!")
    assert not is_constraint("You must have hiked it too.")  # a guess about the past
    assert not is_constraint("We must have been tired.")
    assert is_constraint("You must have a valid ticket to board.")
    assert is_request("Please check the nightly backup.")
    assert not is_request("I checked the nightly backup.")
    assert score("My sister Ana moved to Berlin in 2021.") > score("I think that is nice.") > 0
    assert score("haha ok") == 0


def test_extract_facts_gives_attributable_lines_with_their_items() -> None:
    items = [
        make_item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        *lookup(
            2, "Is flight EZ690 on time?", "flight_status", {"flight": "EZ690"},
            "EZ690: gate A12, boarding 20:15, status delayed", "It is delayed, gate A12.",
        ),
        make_item("My daughter Maya turns 13 on 13 August.", seq=6),
    ]  # fmt: skip
    facts = extract_facts(items)
    assert facts == [
        Fact(
            subject="flight EZ690",
            attribute="flight_status",
            text="EZ690: gate A12, boarding 20:15, status delayed",
            seqs=(4,),
            said_on="8 May 2023",
            weight=facts[0].weight,
        ),
        Fact(
            subject="User",
            attribute="",
            text="User: My daughter Maya turns 13 on 13 August.",
            seqs=(6,),
            said_on="8 May 2023",
            weight=facts[1].weight,
        ),
    ]
    assert all(f.weight > 0 for f in facts)


def test_a_newer_value_of_a_slot_replaces_the_older_and_repeats_fold() -> None:
    facts = FactList()
    assert facts.add(make_fact("Order 7: shipped", subject="order 7", attribute="track"))
    assert facts.add(make_fact("Order 7: delivered", subject="order 7", attribute="track"))
    assert not facts.add(make_fact("order 7 delivered"))  # the same words again
    assert [f.text for f in facts.facts] == ["Order 7: delivered"]


def test_a_question_answered_by_a_later_turn_of_another_speaker() -> None:
    found = extract(
        [
            make_item("Caroline: What did you do this weekend?", seq=1),
            make_item(
                "Melanie: We went camping at Big Sur with the kids.",
                MemoryKind.ASSISTANT_MESSAGE,
                seq=2,
            ),
        ]
    )
    assert [f.text for f in found.facts] == ["Melanie: We went camping at Big Sur with the kids."]
    # Answered: neither open nor the objective.
    assert found.open_questions == () and found.objective is None


def test_a_long_sentence_is_kept_whole_not_cut_mid_clause() -> None:
    said = (
        "Yeah it was hard at first but I actually had a better time in Gilbert than most "
        "of my high school years in Portland."
    )
    (fact,) = extract_facts([make_item(said, MemoryKind.USER_MESSAGE, seq=1)])
    assert fact.text == f"User: {said}"
    rambling = " ".join(["I walked to the old mill by the river with my brother"] * 4) + "."
    (cut,) = extract_facts([make_item(rambling, MemoryKind.USER_MESSAGE, seq=2)])
    assert cut.text.endswith(" ...") and len(cut.text.split()) <= 23
