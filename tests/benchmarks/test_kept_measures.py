"""The definitions benchmarks/kept_values.py measures by: values, windows, the naive digest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from kept_measures import (
    ITEM_OVERHEAD,
    cost,
    input_text,
    kept,
    message_text,
    naive_digest,
    tool_values,
    user_specifics,
    window_start,
)


def words(text: str) -> int:
    """A token count anyone can check by eye: one token a word."""
    return len(text.split())


# -- tool values ----------------------------------------------------------------------------------


def test_json_leaves_are_strings_of_two_to_sixty_characters_and_numbers() -> None:
    output = json.dumps(
        {
            "booking": {"ref": "QX-4471", "seat": "B", "gate": "12A"},
            "legs": [{"from": "Lyon", "price": 129.5}, {"from": "Oslo", "price": 88}],
            "confirmed": True,
            "note": None,
            "remark": "x" * 61,
            "code": "x" * 60,
        }
    )
    assert tool_values(output) == ["QX-4471", "12A", "Lyon", "129.5", "Oslo", "88", "x" * 60]


def test_a_value_said_twice_is_one_value_case_aside() -> None:
    output = json.dumps({"a": "Paid", "b": "paid", "c": [7, 7]})
    assert tool_values(output) == ["Paid", "7"]


def test_a_json_scalar_is_a_leaf_and_nan_is_none() -> None:
    assert tool_values("42") == ["42"]
    assert tool_values("2.50") == ["2.5"]  # as JSON writes the number
    assert tool_values("NaN") == []


def test_text_output_gives_its_tokens_with_a_digit() -> None:
    log = "FAILED tests/test_v2.py::test_total - assert 41 == 42\n1 failed, 211 passed in 3.2s"
    assert tool_values(log) == [
        "tests/test_v2.py::test_total",
        "41",
        "42",
        "1",
        "211",
        "3.2s",
    ]
    assert tool_values("None") == []
    assert tool_values("Transfer successful") == []


# -- user specifics -------------------------------------------------------------------------------


def test_quoted_strings_in_any_quotes() -> None:
    text = "Rename it \"draft v2\", then 'final', “notes”, «Северный», „Plan“ and 「小雨」."
    assert user_specifics(text) == ["draft v2", "final", "notes", "Северный", "Plan", "小雨"]


def test_apostrophes_are_not_quotes() -> None:
    assert user_specifics("I don't think the cats' toys are Sam's.") == []


def test_numbers_of_two_or_more_digits() -> None:
    text = "Seat 7, row 14, 1,250 points, 3.75 kg, room 302号, flight at 09:40"
    assert user_specifics(text) == ["14", "1,250", "3.75", "302", "09", "40"]


def test_specifics_in_russian_and_chinese() -> None:
    assert user_specifics("Бронь 48213, сестра живёт в «Казани».") == ["Казани", "48213"]
    assert user_specifics("我女儿叫「小雨」，今年12岁。") == ["小雨", "12"]


def test_kept_is_verbatim_case_aside() -> None:
    assert kept(["QX-4471", "Lyon", "oslo"], "booking qx-4471 from LYON") == 2


# -- messages and windows -------------------------------------------------------------------------


def test_the_text_of_each_kind_of_input_item() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "find", "arguments": '{"q": 1}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "found 3"}
    parts = {"role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    plain = {"role": "user", "content": "Hello"}
    assert message_text(call) == 'find\n{"q": 1}'
    assert message_text(output) == "found 3"
    assert message_text(parts) == "Done."
    assert input_text([plain, parts]) == "Hello\nDone."
    assert cost(plain, words) == 1 + ITEM_OVERHEAD


@pytest.mark.parametrize(
    ("budget", "start"),
    [(0, 4), (4, 4), (5, 3), (11, 2), (12, 1), (100, 0)],
)
def test_the_window_is_the_newest_items_that_fit(budget: int, start: int) -> None:
    assert window_start([9, 1, 6, 5], budget) == start


# -- the naive digest -----------------------------------------------------------------------------


def session() -> tuple[list[dict[str, object]], list[str | None]]:
    messages: list[dict[str, object]] = [
        {"role": "user", "content": 'Book "Blue Room" for 30 people'},
        {"type": "function_call", "call_id": "a", "name": "book", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": '{"ref": "R-77", "n": 30}'},
        {"role": "assistant", "content": "Booked R-77 for 30."},
        {"role": "user", "content": "thanks"},
        {"type": "function_call", "call_id": "b", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "Lyon 21C wind 14 km/h"},
    ]
    names: list[str | None] = [None, None, "book", None, None, None, "weather"]
    return messages, names


def test_the_digest_writes_newest_first_each_value_once() -> None:
    messages, names = session()
    digest = naive_digest(messages, names, start=7, room=100, count=words)
    assert digest.splitlines() == ["weather: 21C, 14", "book: R-77, 30", "user: Blue Room"]


def test_the_digest_only_covers_items_before_its_window() -> None:
    messages, names = session()
    digest = naive_digest(messages, names, start=3, room=100, count=words)
    assert digest.splitlines() == ["book: R-77, 30", "user: Blue Room"]


def test_a_line_over_the_room_is_left_out_and_older_ones_still_tried() -> None:
    messages, names = session()
    messages[6] = {**messages[6], "output": " ".join(f"v{n}" for n in range(20))}
    # The 21-word weather line does not fit; the book and user lines (3 words each) do.
    digest = naive_digest(messages, names, start=7, room=3 + ITEM_OVERHEAD + 3, count=words)
    assert digest.splitlines() == ["book: R-77, 30", "user: Blue Room"]
    assert naive_digest(messages, names, start=7, room=ITEM_OVERHEAD, count=words) == ""
