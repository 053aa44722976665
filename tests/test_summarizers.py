"""The extractive summarizer's rules, one by one: what it keeps, how it folds, how it fits."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import make_item

from memstore import ExtractiveSummarizer, MemoryKind, Priority, TiktokenEstimator, WordEstimator
from memstore.core.values import MemoryItem, MemoryRole
from memstore.extraction.digest import parse_summary
from memstore.extraction.protocols import SummaryText
from memstore.extraction.summary_fit import fit_summary


def item(
    text: str,
    kind: MemoryKind = MemoryKind.USER_MESSAGE,
    priority: Priority = Priority.NORMAL,
    seq: int = 1,
) -> MemoryItem:
    return make_item(text, kind, priority, seq)


def carried(seq: int, payload: dict[str, Any], text: str) -> MemoryItem:
    """A Responses item as an Agents SDK session stores it (call, output or message)."""
    kind, role = {
        "function_call": (MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT),
        "function_call_output": (MemoryKind.TOOL_OBSERVATION, MemoryRole.TOOL),
        "user": (MemoryKind.USER_MESSAGE, MemoryRole.USER),
        "assistant": (MemoryKind.ASSISTANT_MESSAGE, MemoryRole.ASSISTANT),
    }[payload.get("type") or payload["role"]]
    return MemoryItem(
        id=str(uuid.uuid4()),
        session_id="s",
        seq=seq,
        role=role,
        kind=kind,
        priority=Priority.NORMAL,
        content=text,
        timestamp=datetime.now(UTC),
        estimated_tokens=len(text.split()),
        payload=payload,
        call_id=payload.get("call_id"),
    )


def lookup(seq: int, question: str, call: str, args: dict[str, Any], result: str, reply: str):
    """One answered question: the user's message, the call, its output, the reply."""
    call_id = f"call_{seq}"
    return [
        carried(seq, {"role": "user", "content": question}, question),
        carried(
            seq + 1,
            {
                "type": "function_call",
                "call_id": call_id,
                "name": call,
                "arguments": json.dumps(args),
            },
            f"{call}({json.dumps(args)})",
        ),
        carried(
            seq + 2, {"type": "function_call_output", "call_id": call_id, "output": result}, result
        ),
        carried(seq + 3, {"role": "assistant", "content": reply}, reply),
    ]


def summarize(*items: MemoryItem, previous: str | None = None, budget: int = 400) -> str:
    return ExtractiveSummarizer(max_tokens=budget).summarize(previous, list(items))


def test_an_answered_question_is_one_attributed_fact_and_not_open() -> None:
    items = lookup(
        1,
        "Which gate does BA117 leave from?",
        "flight_status",
        {"flight": "BA117"},
        json.dumps({"gate": "B32", "boarding_time": "14:05", "status": "on time"}),
        "BA117 boards at 14:05 from gate B32.",
    )
    text = summarize(*items)
    assert text == "Facts:\n- Flight BA117: gate B32, boarding time 14:05, status on time"
    assert "?" not in text  # neither the question's wording nor an open question


def test_a_tool_result_without_a_call_is_attributed_to_the_question() -> None:
    text = summarize(
        item("What's the weather in Lisbon today?", seq=1),
        item("21°C, light rain, wind 14 km/h", MemoryKind.TOOL_OBSERVATION, seq=2),
        item("It's 21 degrees with light rain in Lisbon.", MemoryKind.ASSISTANT_MESSAGE, seq=3),
    )
    assert text == "Facts:\n- Lisbon: 21°C, light rain, wind 14 km/h"


def test_a_reply_answers_a_question_in_the_repliers_words() -> None:
    text = summarize(
        item("Where did you grow up?", seq=1),
        item(
            "I grew up in Portland, Oregon, and moved to Phoenix at 17.",
            MemoryKind.ASSISTANT_MESSAGE,
            seq=2,
        ),
    )
    assert text == "Facts:\n- Assistant: I grew up in Portland, Oregon, and moved to Phoenix at 17."


def test_only_a_question_the_conversation_moved_on_from_is_open() -> None:
    text = summarize(
        item("Does the vendor portal support SSO?", seq=1),
        item("Check the nightly backup of orders-db first.", seq=2),
        item("Who owns the billing runbook now?", seq=3),
    )
    # The first was left unanswered; the last may be answered by the items that stay.
    assert text == (
        "Current objective: Who owns the billing runbook now?\n"
        "Open questions:\n"
        "- Does the vendor portal support SSO?"
    )


def test_the_answer_to_a_pending_question_arrives_in_the_next_fold() -> None:
    first = summarize(item("Where is order A-1042?", seq=1))
    assert first == "Current objective: Where is order A-1042?"
    answer = lookup(
        2, "", "lookup_order", {"order_id": "A-1042"}, "in transit via DHL, due 14 June", ""
    )
    text = summarize(*answer[1:3], previous=first)
    assert text == "Facts:\n- Order A-1042: in transit via DHL, due 14 June"


def test_chatter_noise_and_restated_replies_are_left_out() -> None:
    items = [
        item("Hi there! Thanks, that helps.", seq=1),
        item("kubectl: 6 Running", MemoryKind.TOOL_OBSERVATION, Priority.LOW, seq=2),
        item("ok cool", MemoryKind.ASSISTANT_MESSAGE, seq=3),
        *lookup(
            4,
            "How many KB-204 are left?",
            "check_stock",
            {"sku": "KB-204"},
            "There are 37 units of KB-204 at Leeds.",
            "We have 37 of KB-204 in Leeds.",
        ),
    ]
    assert summarize(*items) == "Facts:\n- There are 37 units of KB-204 at Leeds."


def test_constraints_decisions_and_statements_go_to_their_sections_once() -> None:
    constraint = "Never restart payments during business hours."
    text = summarize(
        item(f"Ok. {constraint} Investigate checkout latency.", seq=1),
        item("Rolled back fraud to v2.30.4.", MemoryKind.DECISION, seq=2),
        item("payments p95 is 1720ms.", MemoryKind.TOOL_OBSERVATION, Priority.HIGH, seq=3),
        item(f"Thanks. {constraint}", seq=4),
    )
    assert text.splitlines() == [
        "Current objective: Investigate checkout latency.",
        "Constraints:",
        f"- {constraint}",
        "Decisions:",
        "- Rolled back fraud to v2.30.4.",
        "Facts:",
        "- Payments p95 is 1720ms.",
    ]


def test_a_session_marker_dates_what_follows_and_is_not_a_fact() -> None:
    text = summarize(
        item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        item("Caroline: I went to a LGBTQ support group yesterday and it was powerful.", seq=2),
        item(
            "Melanie: My kids and I are going camping next month at Lake Tahoe.",
            MemoryKind.ASSISTANT_MESSAGE,
            seq=3,
        ),
        item("New conversation session on 1:14 pm on 25 May, 2023.", MemoryKind.DECISION, seq=4),
        item(
            "Melanie: I ran a charity race for mental health last Saturday.",
            MemoryKind.ASSISTANT_MESSAGE,
            seq=5,
        ),
    )
    assert text.splitlines() == [
        "On 8 May 2023:",
        "- Caroline: I went to a LGBTQ support group yesterday (7 May 2023) and it was powerful.",
        "- Melanie: My kids and I are going camping next month (June 2023) at Lake Tahoe.",
        "On 25 May 2023:",
        "- Melanie: I ran a charity race for mental health last Saturday (20 May 2023).",
    ]
    # The date stays in force for the next fold even when no fact of that day is left.
    later = summarize(
        item("Melanie: Pottery is my favorite way to relax.", seq=6),
        previous="Session date: 25 May 2023",
    )
    assert later == "On 25 May 2023:\n- Melanie: Pottery is my favorite way to relax."


def test_the_date_in_force_survives_a_day_that_holds_only_a_decision() -> None:
    text = summarize(
        item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        item("Caroline: I went to a support group in Boston yesterday.", seq=2),
        item("New conversation session on 9 May 2023.", MemoryKind.DECISION, seq=3),
        item("Ship the blue car to Lisbon on Friday.", MemoryKind.DECISION, seq=4),
    )
    assert "Session date: 9 May 2023" in text
    later = summarize(item("Caroline: I adopted a dog named Max yesterday.", seq=5), previous=text)
    assert "On 9 May 2023:\n- Caroline: I adopted a dog named Max yesterday (8 May 2023)." in later


def test_a_summary_round_trips_and_folds_without_drift() -> None:
    items = [
        item("Never deploy on Fridays.", seq=1),
        *lookup(
            2,
            "Is flight EZ690 on time?",
            "flight_status",
            {"flight": "EZ690"},
            "EZ690: gate A12, boarding 20:15, status delayed",
            "It is delayed.",
        ),
        item("I prefer aisle seats and I'm flying to Porto on 14 June 2024.", seq=6),
    ]
    first = summarize(*items)
    assert parse_summary(first).render() == first
    assert summarize(previous=first) == first


def test_a_speakers_lines_share_one_line_per_section_and_read_back_as_facts() -> None:
    text = summarize(
        item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        item("Caroline: I went to a support group and it was powerful.", seq=2),
        item(
            "Melanie: My kids and I painted a lake sunrise in the summer.",
            MemoryKind.ASSISTANT_MESSAGE,
            seq=3,
        ),
        item("Caroline: I am researching adoption agencies | counselling courses.", seq=4),
    )
    assert text.splitlines() == [
        "On 8 May 2023:",
        "- Caroline: I went to a support group and it was powerful. | I am researching "
        "adoption agencies / counselling courses.",  # a fact never holds the separator
        "- Melanie: My kids and I painted a lake sunrise in the summer.",
    ]
    digest = parse_summary(text)
    assert [fact.text for fact in digest.facts.facts] == [
        "Caroline: I went to a support group and it was powerful.",
        "Caroline: I am researching adoption agencies / counselling courses.",
        "Melanie: My kids and I painted a lake sunrise in the summer.",
    ]
    assert digest.render() == text
    # Fitted, one fact of a shared line goes and the rest of the line stays.
    tight = summarize(previous=text, budget=WordEstimator().count(text) - 4)
    assert tight.startswith("On 8 May 2023:\n- Caroline: ") and " | " not in tight


def test_a_fact_listed_under_an_earlier_speaker_survives_a_fold_again() -> None:
    # Caroline's second fact contains Melanie's; the layout lists it first (Caroline spoke
    # first), and reading the summary back must not take Melanie's for a repeat of it.
    first = summarize(
        item("New conversation session on 8 May 2023.", MemoryKind.DECISION, seq=1),
        item("Caroline: I went to a support group yesterday and it was powerful.", seq=2),
        item(
            "Melanie: I painted a lake sunrise in Oregon last summer.",
            MemoryKind.ASSISTANT_MESSAGE,
            seq=3,
        ),
        item(
            "Caroline: Wow, Melanie painted a lake sunrise in Oregon last summer, I love it!", seq=4
        ),
    )
    assert "- Melanie: I painted a lake sunrise in Oregon last summer." in first
    assert summarize(previous=first) == first


@pytest.mark.parametrize(
    "said", ["Cities I love: Berlin, Paris |", "Options a\t|\tb for the trip to Rome", "| Rome"]
)
def test_a_fact_never_holds_the_separator_as_a_word(said: str) -> None:
    text = summarize(item(f"My sister Ana lives in Lisbon. {said}", seq=1))
    facts = parse_summary(text).facts.facts
    assert all("|" not in fact.text.split() for fact in facts)
    assert summarize(previous=text) == text


def test_the_last_fact_of_a_speakers_line_is_charged_no_separator() -> None:
    count = WordEstimator().count
    one = "Facts:\n- Melanie: Pottery helps me relax after work."
    digest = parse_summary(f"{one} | I went to a support group in Boston.")
    assert fit_summary(digest, count(one), count) == one  # exactly the room one fact needs


def test_a_line_that_adds_nothing_new_goes_before_one_that_does() -> None:
    said = [
        "My sister Ana moved to Berlin for a job at Siemens in March.",
        "We adopted a puppy named Biscuit, a beagle.",
        "My sister Ana moved to Berlin in March for Siemens, she loves it.",  # newest, mostly said
    ]
    items = [item(text, seq=n) for n, text in enumerate(said, 1)]
    full = summarize(*items)
    assert all(text in full for text in said)  # different words: not the same fact
    tight = summarize(*items, budget=WordEstimator().count(full) - 8)
    assert "Biscuit" in tight and tight.count("Berlin") == 1


def test_over_budget_whole_lines_go_least_informative_and_oldest_first() -> None:
    statements = [
        "User: I really liked the new office kitchen downtown.",
        "User: My sister Ana moved to Berlin in March 2021 for a job at Siemens.",
        "User: I really liked the new cafe menu downtown.",
        "User: We adopted a puppy named Biscuit last year, she is 14 months old.",
    ]
    items = [item(line.split(": ", 1)[1], seq=n) for n, line in enumerate(statements, 1)]
    full = summarize(*items)
    count = WordEstimator().count
    tight = summarize(*items, budget=count(full) - 3)
    assert count(tight) <= count(full) - 3
    assert "office" not in tight and "cafe" in tight  # least informative, oldest first
    assert "Berlin" in tight and "Biscuit" in tight
    facts = re.split(r"\n- User: |\n| \| ", tight)  # one speaker's facts share a line
    assert all(fact in full for fact in facts)  # whole facts, never a cut one
    tighter = summarize(*items, budget=count(full) - 12)
    assert "cafe" not in tighter and "Berlin" in tighter and "Biscuit" in tighter


def test_a_shorter_line_uses_the_room_a_longer_worthier_one_left() -> None:
    long_line = (
        "My sister Ana Ruiz moved to Berlin in March 2021 for Siemens, Tom joined her in "
        "May 2021 with Lea, Max and Biscuit."
    )
    items = [
        item("I guess the cafe was kind of nice and I liked it there a lot, it was good.", seq=1),
        item(long_line, seq=2),
    ]
    full = summarize(*items)
    count = WordEstimator().count
    tight = summarize(*items, budget=count(full) - count(long_line))  # no room for it
    assert "Berlin" not in tight and "cafe" in tight


def test_the_budget_is_counted_by_the_callers_estimator() -> None:
    items = [
        item(f"My colleague Dana{n} moved to Osaka in 20{n:02d} to open the office.", seq=n)
        for n in range(1, 40)
    ]
    count = TiktokenEstimator().count
    text = ExtractiveSummarizer().summarize(None, items, max_tokens=120, count_tokens=count)
    assert 100 <= count(text) <= 120
    assert "Dana39" in text and "Dana1 " not in text  # alike lines: the oldest went first


def test_an_explicit_cap_bounds_the_room_a_compaction_offers() -> None:
    items = [
        item(f"My colleague Dana{n} moved to Osaka in 20{n:02d}.", seq=n) for n in range(1, 40)
    ]
    words = WordEstimator().count
    capped = ExtractiveSummarizer(max_tokens=50).summarize(None, items, max_tokens=300)
    assert words(capped) <= 50
    roomy = ExtractiveSummarizer().summarize(None, items, max_tokens=300)
    assert 50 < words(roomy) <= 300


def test_nothing_worth_keeping_is_an_answer_not_an_error() -> None:
    text = summarize(item("hi!", seq=1), item("ok thanks", MemoryKind.ASSISTANT_MESSAGE, seq=2))
    assert text == "" and isinstance(text, SummaryText) and text.kept_nothing


def test_a_models_sections_are_kept_and_sacrificed_first() -> None:
    previous = (
        "Current objective: fix checkout\n"
        "Constraints:\n- never deploy on Fridays\n"
        "Actions attempted:\n- restarted the cache\n- rolled back fraud\n"
        "Open questions:\n- who owns billing?"
    )
    kept = summarize(previous=previous)
    assert "Actions attempted:\n- restarted the cache\n- rolled back fraud" in kept
    assert kept.index("Open questions:") < kept.index("Actions attempted:")
    words = WordEstimator().count
    tight = summarize(previous=previous, budget=words(kept) - 2)
    assert "restarted the cache" not in tight and "rolled back fraud" in tight
    assert "never deploy on Fridays" in tight and "who owns billing?" in tight


def test_an_objective_alone_over_budget_is_dropped() -> None:
    assert summarize(item("Check " + "word " * 30, seq=1), budget=5) == ""


def test_a_fitted_summary_is_within_its_budget_or_empty() -> None:
    text = "Session date: 8 May 2023\nFacts:\n- Order 3: status shipped, carrier DHL"
    count = WordEstimator().count
    for budget in range(0, count(text) + 1):
        fitted = fit_summary(text, budget, count)
        assert count(fitted) <= budget  # the date too goes when it alone does not fit
        assert fitted in ("", "Session date: 8 May 2023", text)


def test_a_frame_over_budget_leaves_its_room_to_the_facts() -> None:
    # An objective longer than the whole budget cannot be kept: a fact that fits alone is
    # kept instead of an empty summary, and the date with it when both fit.
    facts = "Facts:\n- Order 3: status shipped, carrier DHL"
    objective = f"Current objective: {'check the order ' * 20}"
    count = WordEstimator().count
    assert fit_summary(f"{objective}\n{facts}", count(facts), count) == facts
    text = f"{objective}\nSession date: 8 May 2023\n{facts}"
    dated = fit_summary(text, count(f"Session date: 8 May 2023\n{facts}"), count)
    assert dated == f"Session date: 8 May 2023\n{facts}"  # the date goes only when it must
    # A date its fact's heading already says is not written, so it takes no room from it.
    on_the_day = "On 8 May 2023:\n- Caroline: I went to a support group"
    text = f"{objective}\nSession date: 8 May 2023\n{on_the_day}"
    assert fit_summary(text, count(on_the_day), count) == on_the_day
