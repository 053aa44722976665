"""benchmarks/kinds.py's probes and kept_values.py's measure, on small hand-made sessions."""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from corpora import Session, assistant, call_items, user
from kept_values import Run, as_message, measure, tool_names
from kinds import (
    dated_facts,
    day_pattern,
    forgotten_facts,
    headings,
    sentences,
    statements,
)

# -- sentences and statements ---------------------------------------------------------------------


def test_sentences_end_at_their_marks_in_latin_and_cjk_text() -> None:
    assert sentences("We moved. Is it far?\nYes!") == ["We moved.", "Is it far?", "Yes!"]
    assert sentences("我住在上海。你呢？好的") == ["我住在上海。", "你呢？", "好的"]
    assert sentences("It costs 3.5 euros.") == ["It costs 3.5 euros."]


def test_statements_leave_out_questions_and_sentences_without_specifics() -> None:
    text = 'Hi there! My flight is BA 2490 on the 14th. Can you check gate "C7"? Thanks.'
    assert statements(text) == [["2490", "14"]]
    assert statements("Мой рейс 2490. Где выход?") == [["2490"]]
    assert statements("我的航班是2490。登机口在哪里？") == [["2490"]]


# -- dates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "2018-05-02: moved",
        "on 2018/05/02 we met",
        "- 2 May 2018: met Ana",
        "May 2, 2018",
        "(2 may) met",
        "Wed May 2: met",
        "2018年5月2日 见面",
    ],
)
def test_a_day_is_named_in_the_usual_ways(line: str) -> None:
    assert day_pattern(date(2018, 5, 2)).search(line) is not None


@pytest.mark.parametrize(
    "line", ["May 20", "12 May", "2018-05-20", "Mar 2", "22 May 2018", "May 2018", "on 2 Ma"]
)
def test_another_day_is_not_this_one(line: str) -> None:
    assert day_pattern(date(2018, 5, 2)).search(line) is None


def test_a_heading_rules_the_lines_under_it() -> None:
    lines = ["Facts:", "- a", "## 2 May 2018", "- b", "- c: d", "Open:", "- e"]
    assert headings(lines) == ["Facts:", "Facts:", "## 2 May 2018", "## 2 May 2018",
                               "## 2 May 2018", "Open:", "Open:"]  # fmt: skip


def test_kept_facts_are_dated_by_their_line_or_their_heading() -> None:
    summary = "\n".join(
        [
            "2 May 2018:",
            "- User: We finally adopted a grey cat from the shelter.",
            "Facts:",
            "- User (3 May 2018): Our new flat is on the fourth floor.",
            "- User: I started a pottery class near the station.",
            "- Room 304 is booked",
        ]
    )
    facts = [
        ("We finally adopted a grey cat from the shelter today.", True, date(2018, 5, 2)),
        ("Our new flat is on the fourth floor, sadly.", True, date(2018, 5, 3)),
        ("I started a pottery class near the station.", True, date(2018, 5, 4)),
        ("304", False, date(2018, 5, 4)),
        ("We never talked about this at all.", True, date(2018, 5, 4)),
    ]
    assert dated_facts(facts, summary) == (4, 2)


def test_forgotten_facts_are_the_timed_sentences_and_specifics_before_the_window() -> None:
    day = datetime(2018, 5, 2, 20, 15, tzinfo=UTC)
    session = Session("s", "multi-day")
    session.turns = [
        [user("My sister moved to Porto last week with her kids. Ok.", day)],
        [assistant("That is 300 km from here, more or less.", day)],
        [user("I will visit her on the 18th of June.", day)],
    ]
    assert forgotten_facts(session, 2) == [
        ("My sister moved to Porto last week with her kids.", True, day.date()),
        ("That is 300 km from here, more or less.", True, day.date()),
        ("300", False, day.date()),
    ]


# -- kept_values.measure --------------------------------------------------------------------------


def test_measure_compares_memstore_truncation_and_the_digest_at_the_same_tokens() -> None:
    session = Session("s", "bfcl")
    filler = " ".join(["nothing to note here"] * 40)
    session.turns = [
        [user('Please track order "K-3301" for me')],
        call_items("c1", "track", "{}", '{"status": "in transit", "eta": "Friday", "kg": 12}'),
        [assistant(filler)],
        [user(filler)],
        [assistant("Anything else?")],
    ]
    messages = [as_message(item) for item in session.items]
    summary = "Summary: track K-3301 is in transit, eta Friday"
    run = Run(
        session=session,
        limits="600/350/2",
        messages=[{"role": "developer", "content": summary}, *messages[-1:]],
        active=[False] * 5 + [True],
        summary=summary,
        compactions=2,
        summary_errors=0,
        seconds=0.5,
    )
    row = measure(run)
    # The input weighs less than the filler: truncation keeps the last reply alone.
    assert row["forgotten_items"] == 5
    assert row["tool_values"] == 3  # in transit, Friday, 12; the call's arguments are no value
    assert row["tool_kept"] == {"memstore": 2, "truncation": 0, "digest": 3}
    assert row["user_specifics"] == 2  # K-3301, and 3301: a number of two or more digits
    assert row["user_kept"] == {"memstore": 2, "truncation": 0, "digest": 0}
    assert row["compactions"] == 2


def test_tool_names_pair_outputs_with_their_calls() -> None:
    items = [*call_items("a", "lookup", "{}", "1"), *call_items("b", "pay", "{}", "2")]
    messages = [as_message(item) for item in items]
    assert tool_names(messages) == [None, "lookup", None, "pay"]
