"""When each item was said (:mod:`memstore.extraction.dating`): its own timestamp, unless date
lines set the days; and relative days pinned to the calendar in any claimed language."""

from __future__ import annotations

from datetime import date

import pytest
from talk import Talk, read

from memstore.extraction.dating import Calendar, parse_day, pin_days, said_on

SAID_ON = date(2026, 3, 4)


def test_days_come_from_the_items_own_timestamps() -> None:
    items = Talk()
    items.say("user", "I ordered the standing desk from Oakline for 640 euros.")
    items.say("user", "The Oakline courier brought the desk frame, tracking OK-5521.", day=1)
    items.say("user", "The desktop arrived with a scratch, claim number CL-902.", day=3)
    calendar = Calendar(None, marked=False)
    days = [calendar.read(item) for item in items.items]
    assert days == [date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 5)]
    assert calendar.spans_days and not calendar.marked
    found = read(items)
    days = [fact.said_on for fact in found.facts]
    assert days == ["2 March 2026", "3 March 2026", "5 March 2026"]
    assert found.spans_days


def test_a_single_day_does_not_span_days() -> None:
    items = Talk().say("user", "The plumber replaced the valve under sink 2 for 95 euros.")
    items.say("user", "He left an invoice numbered INV-4410 on the counter.")
    found = read(items)
    assert not found.spans_days and found.said_on == "2 March 2026"


def test_a_date_line_sets_the_days_and_wins_once_seen() -> None:
    items = Talk()
    items.say("developer", "New conversation session on 8 May 2023.")
    items.say("user", "I planted 12 tomato seedlings along the south fence.")
    items.say("user", "The seedlings came from the Ferreira nursery in Sintra.", day=2)
    items.say("developer", "Session date: 20 May 2023")
    items.say("user", "Half of the seedlings now carry green fruit, about 30 in all.", day=9)
    calendar = Calendar(None, marked=False)
    days = []
    for item in items.items:
        if calendar.marker(item) is None:
            days.append(calendar.read(item))
    # The imported items' timestamps say when they were imported, not when they were said.
    assert days == [date(2023, 5, 8), date(2023, 5, 8), date(2023, 5, 20)]
    assert calendar.marked and calendar.spans_days
    found = read(items)
    assert [fact.said_on for fact in found.facts] == ["8 May 2023", "8 May 2023", "20 May 2023"]
    assert found.marked and found.said_on == "20 May 2023"
    assert not any("conversation session" in fact.text for fact in found.facts)  # no fact


def test_only_a_developers_decision_can_be_a_date_line() -> None:
    items = Talk().say("user", "New conversation session on 8 May 2023.")
    calendar = Calendar(None, marked=False)
    assert calendar.marker(items.items[0]) is None and not calendar.marked
    items = Talk().say("developer", "Freeze the release branch until 8 May 2023.")
    assert calendar.marker(items.items[0]) is None  # says more than a date: a decision


def test_a_previous_folds_day_and_marking_carry_on() -> None:
    calendar = Calendar(date(2023, 5, 8), marked=True)
    later = Talk().say("user", "The fence got a second coat of paint.", day=400)
    assert calendar.read(later.items[0]) == date(2023, 5, 8)  # marked: timestamps ignored
    unmarked = Calendar(date(2026, 3, 1), marked=False)
    assert unmarked.read(later.items[0]) == later.items[0].timestamp.date()
    assert unmarked.spans_days  # the previous day and this one


def test_relative_days_in_a_statement_are_pinned_to_its_own_day() -> None:
    items = Talk()
    items.say("user", "The boiler broke yesterday and the fitter comes tomorrow.", day=2)
    (fact,) = read(items).facts
    assert "yesterday (3 March 2026)" in fact.text and "tomorrow (5 March 2026)" in fact.text


@pytest.mark.parametrize(
    ("said", "pinned"),
    [
        ("I called the bank yesterday.", "yesterday (3 March 2026)"),
        ("Я звонил в банк вчера, а завтра пойду снова.", "вчера (3 March 2026)"),
        ("Я звонил в банк вчера, а завтра пойду снова.", "завтра (5 March 2026)"),
        ("我昨天给银行打了电话，后天再去。", "昨天 (3 March 2026)"),
        ("我昨天给银行打了电话，后天再去。", "后天 (6 March 2026)"),
        ("昨日銀行に電話しました。明日また行きます。", "明日 (5 March 2026)"),
        ("Ayer llamé al banco y pasado mañana vuelvo.", "pasado mañana (6 March 2026)"),
        ("Gestern rief ich an, übermorgen wieder.", "Gestern (3 March 2026)"),
        ("Hier j'ai appelé, après-demain je reviens.", "après-demain (6 March 2026)"),
        ("Aujourd'hui rien de neuf.", "Aujourd'hui (4 March 2026)"),
    ],
)
def test_pin_days_in_several_languages(said: str, pinned: str) -> None:
    assert pinned in pin_days(said, SAID_ON)


def test_pin_days_leaves_a_text_alone_without_a_day_or_a_relative_one() -> None:
    assert pin_days("I called the bank yesterday.", None) == "I called the bank yesterday."
    assert pin_days("No day is named here.", SAID_ON) == "No day is named here."
    once = pin_days("Я звонил вчера.", SAID_ON)
    assert pin_days(once, SAID_ON) == once  # pinned already: not pinned twice


def test_a_day_is_written_and_read_back() -> None:
    assert said_on(SAID_ON) == "4 March 2026" and said_on(None) is None
    assert parse_day("4 March 2026") == SAID_ON
    assert parse_day(None) is None and parse_day("") is None and parse_day("soon") is None
