"""Dates in conversation text (:mod:`memstore.core.dates`): found in the forms people write,
written one way, read back, and relative ones pinned to the day they were said on."""

from __future__ import annotations

from datetime import date

import pytest

from memstore.core.dates import (
    find_date,
    format_date,
    parse_formatted,
    pin_relative,
    session_date,
)

DAY = date(2024, 6, 3)  # a Monday


@pytest.mark.parametrize(
    "text",
    [
        "3 June 2024",
        "3 Jun 2024",
        "10:20 am on 3 June, 2024",
        "June 3, 2024",
        "on the 3rd of June 2024",
        "2024-06-03",
        "The parcel arrived on 2024-06-03 at noon, two days late.",
    ],
)
def test_a_date_is_read_in_the_forms_people_write(text: str) -> None:
    assert find_date(text) == DAY


def test_the_first_date_of_a_text_is_the_one_found() -> None:
    assert find_date("Moved from 2024-06-03 to 9 July 2024.") == DAY
    assert find_date("Moved from 9 July 2024 to 2024-06-03.") == date(2024, 7, 9)


@pytest.mark.parametrize("text", ["no date here", "31 February 2024", "2024-13-01", "June 2024"])
def test_a_text_without_a_real_calendar_date_has_none(text: str) -> None:
    assert find_date(text) is None


def test_a_date_is_written_one_way_and_read_back() -> None:
    assert format_date(DAY) == "3 June 2024"
    assert parse_formatted("3 June 2024") == DAY
    assert parse_formatted(format_date(date(2023, 12, 31))) == date(2023, 12, 31)
    assert parse_formatted("2024-06-03") is None  # not the written form
    assert parse_formatted("3 June 2024 and more") is None


def test_only_a_note_that_states_a_date_and_nothing_else_marks_a_session() -> None:
    assert session_date("New conversation session on 10:20 am on 3 June, 2024.") == DAY
    assert session_date("Session date: 2024-06-03") == DAY
    assert session_date("Chat started on June 3, 2024 at 9:15") == DAY
    assert session_date("Invoice 88 is due on 3 June 2024.") is None  # says more than a date
    assert session_date("New conversation session.") is None  # no date


def test_relative_days_are_pinned_to_the_day_they_were_said() -> None:
    assert pin_relative("The boiler broke yesterday, the fitter comes tomorrow.", DAY) == (
        "The boiler broke yesterday (2 June 2024), the fitter comes tomorrow (4 June 2024)."
    )
    assert pin_relative("We met last night and again tonight.", DAY) == (
        "We met last night (2 June 2024) and again tonight (3 June 2024)."
    )


def test_weeks_months_years_and_ago_are_pinned_to_what_they_can_say() -> None:
    assert pin_relative("Renovations start next week and end next month.", DAY) == (
        "Renovations start next week (the week after 3 June 2024) and end next month (July 2024)."
    )
    assert pin_relative("We sold the van last year; three days ago we bought a bike.", DAY) == (
        "We sold the van last year (2023); three days ago (31 May 2024) we bought a bike."
    )
    assert pin_relative("The audit was last Friday.", DAY) == (
        "The audit was last Friday (31 May 2024)."
    )
    assert pin_relative("It is quiet this week.", DAY) == "It is quiet this week."  # no more to say
    assert pin_relative("Last Monday was a holiday.", DAY) == (
        "Last Monday (27 May 2024) was a holiday."  # a week back, not the day itself
    )
