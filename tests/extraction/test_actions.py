"""Actions as facts (:mod:`memstore.extraction.actions`): a call's label, what its output
said, and the lines that hold them, written and read back."""

from __future__ import annotations

import json

import pytest

from memstore.extraction.actions import (
    ASKED,
    MAX_LINE_VALUES,
    MAX_VALUE_CHARS,
    MENTIONED,
    action_line,
    asked_line,
    call_label,
    chunks,
    label_values,
    parse_action,
    parse_asked,
    parse_values,
    question_subject,
    result_values,
    scalar_text,
)

# -- a call's label ----------------------------------------------------------------------------


def test_a_label_shows_the_identifying_arguments_first_at_most_two_in_their_order() -> None:
    arguments = {"colour": "teal", "size": "M", "sku": "TS-88", "store_id": "LIS-2"}
    assert call_label("reserve_item", arguments) == "reserve_item(TS-88, LIS-2)"
    # Without ids, the first two short arguments, in the order given.
    assert call_label("pick", {"colour": "teal", "size": "M", "fit": "slim"}) == "pick(teal, M)"
    # A value with a digit identifies as an id does.
    assert call_label("book", {"city": "Lisbon", "guests": 2}) == "book(Lisbon, 2)"
    assert call_label("book", {"city": "Lisbon", "note": "quiet", "guests": 2}) == (
        "book(Lisbon, 2)"
    )


def test_a_label_leaves_long_and_nested_arguments_out() -> None:
    arguments = {
        "query": "restaurants with a terrace near the old harbour",  # over the label's length
        "filters": {"open": True},  # not a scalar
        "limit": 5,
    }
    assert call_label("search_places", arguments) == "search_places(5)"
    assert call_label("search_places", {"query": "x" * 40}) == "search_places()"
    assert call_label("notify", {"to": ["ana@x.io", "bo@x.io"], "subject": "late"}) == (
        "notify(ana@x.io/bo@x.io, late)"  # a short list of scalars, joined
    )


def test_a_label_reads_json_text_plain_text_and_nothing() -> None:
    assert call_label("get_order", json.dumps({"order_id": "W-31"})) == "get_order(W-31)"
    assert call_label("shell", "ls -la /srv") == "shell(ls -la /srv)"  # not JSON: the input
    assert call_label("list_orders", "") == "list_orders()"
    assert call_label("", {"order_id": "W-31"}) == "tool(W-31)"  # a call with no name
    assert label_values("get_order(W-31, EU)") == ["W-31", "EU"]
    assert label_values("list_orders()") == []


def test_booleans_in_a_label_are_written_as_json_writes_them() -> None:
    assert call_label("set_flag", {"flag_id": "beta-ui", "on": False}) == "set_flag(beta-ui, false)"


# -- what an output said -----------------------------------------------------------------------


def test_a_json_output_gives_its_scalar_leaves_in_order_each_once() -> None:
    output = {
        "order": {"id": "W-31", "status": "delivered"},
        "paid": True,
        "gift": False,
        "total": 54.3,
        "count": 3,
        "ratio": 1e-7,
        "items": [{"name": "desk lamp", "price": 42.0}, {"name": "mug", "price": 12.3}],
        "carrier": None,  # a null says nothing
        "note": "",
        "status_again": "delivered",  # said again: once
    }
    assert result_values(json.dumps(output)) == [
        "W-31",
        "delivered",
        "true",
        "false",
        "54.3",
        "3",
        "1e-07",
        "desk lamp",
        "42.0",
        "mug",
        "12.3",
    ]


def test_prose_over_the_value_length_is_left_out_of_a_json_output() -> None:
    history = "The customer called twice about the parcel and asked for a callback later."
    assert len(history) > MAX_VALUE_CHARS
    exactly = "z" * MAX_VALUE_CHARS
    output = {"ticket": "SUP-9", "history": history, "code": exactly}
    assert result_values(json.dumps(output)) == ["SUP-9", exactly]


def test_a_scalar_as_a_line_writes_it() -> None:
    assert [scalar_text(v) for v in (True, False, None, 7, 0.1 + 0.2, 2.50)] == [
        "true",
        "false",
        None,
        "7",
        "0.30000000000000004",  # as Python writes it: no rounding changes a value
        "2.5",
    ]
    assert scalar_text("  two   spaces ") == "two spaces"
    assert scalar_text([1, 2]) is None and scalar_text({"a": 1}) is None
    assert scalar_text("   ") is None


def test_a_json_list_output_is_read_too() -> None:
    assert result_values(json.dumps([{"id": "R-1"}, {"id": "R-2"}, {"id": "R-1"}])) == [
        "R-1",
        "R-2",
    ]
    assert result_values("[]") == [] and result_values("") == []


def test_a_text_records_lines_are_its_values() -> None:
    record = "\n".join(
        [
            "Ticket SUP-4411",
            "Status: escalated",
            "Assignee: Priya Raman",
            "History: " + "note added by the night shift. " * 12,
        ]
    )
    values = result_values(record)
    assert values[:3] == ["Ticket SUP-4411", "Status: escalated", "Assignee: Priya Raman"]
    assert all(len(value) <= 200 for value in values)  # not the long history whole


def test_a_short_text_output_is_kept_whole_and_a_long_one_by_its_clauses_that_name_things() -> None:
    assert result_values("The parcel left the depot.") == ["The parcel left the depot."]
    long = (
        "The van left the Leeds depot early and the roads were quiet for most of the way "
        "north. It carries 14 boxes for order A-77, weighs 82 kg, and the driver was "
        "friendly and the weather was fine and nothing else happened on the route at all."
    )
    values = result_values(long)
    assert "It carries 14 boxes for order A-77" in values and "weighs 82 kg" in values
    assert not any("weather" in value for value in values)  # a clause that names nothing


def test_a_large_output_is_cut_into_lines_of_its_slot() -> None:
    values = [f"v{n}" for n in range(MAX_LINE_VALUES * 2 + 3)]
    cut = chunks(values)
    assert [len(part) for part in cut] == [MAX_LINE_VALUES, MAX_LINE_VALUES, 3]
    assert [value for part in cut for value in part] == values
    assert chunks([]) == []


# -- the lines, written and read back ---------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "values"),
    [
        ("get_order(W-31)", ["delivered", "54.3", "desk lamp"]),
        ("get_weather(Braga, metric)", ["17°C", "cloudy"]),
        ("list_orders()", ["W-31", "W-32"]),
        ("lookup(a, (b))", ["x"]),  # a nested parenthesis in the label
        ("ping(db-02)", []),  # returned nothing its arguments did not say
    ],
)
def test_an_action_line_round_trips(label: str, values: list[str]) -> None:
    line = action_line(label, values)
    assert parse_action(line) == (label, values)
    if not values:
        assert line == label


def test_what_is_not_an_action_line() -> None:
    assert parse_action("User: I moved to Porto.") is None
    assert parse_action("Order 3: shipped") is None
    assert action_line("", ["only", "values"]) == "only, values"
    assert parse_values("a, b, c") == ["a", "b", "c"]
    assert parse_values("") == []


@pytest.mark.parametrize("verb", [ASKED, MENTIONED])
def test_an_asked_or_mentioned_line_round_trips(verb: str) -> None:
    values = ["QX-4471", "14 April", "Casa Lima"]
    line = asked_line("User", values, verb)
    assert line == f"User {verb}: QX-4471, 14 April, Casa Lima"
    assert parse_asked(line) == ("User", values, verb)
    assert parse_asked(asked_line("Rosa Lima", ["B32"])) == ("Rosa Lima", ["B32"], ASKED)


def test_what_is_not_an_asked_line() -> None:
    assert parse_asked("User said: QX-4471") is None
    assert parse_asked("get_order(W-31): delivered") is None
    assert parse_asked("User asked:") is None


def test_what_a_question_is_about() -> None:
    assert question_subject("Where is order 3?") == "order 3"
    assert question_subject("Is flight TP1352 on time?") == "flight TP1352"
    assert question_subject("What's the weather like in New York today?") == "New York"
    assert question_subject("How are you?") == ""
