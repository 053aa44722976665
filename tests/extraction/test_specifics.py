"""Specifics (:mod:`memstore.extraction.specifics`): the parts of a text a fact cannot lose,
found by their shape in any language."""

from __future__ import annotations

import pytest

from memstore.extraction.specifics import (
    exact_units,
    has_digit,
    is_exact,
    specific_phrases,
    specific_units,
    specifics,
    tokens,
)


def test_numbers_and_anything_holding_a_digit() -> None:
    said = (
        "The refund of $54.30 for ticket SUP-4411 went out at 14:05 on 2024-06-14; "
        "v2.3 fixed it, p95 fell to 1720ms and 15% of users saw it."
    )
    found = specifics(said)
    for value in ("$54.30", "SUP-4411", "14:05", "2024-06-14", "v2.3", "1720ms", "15%"):
        assert any(value in specific for specific in found), value
    assert has_digit("٣ أيام")  # a digit of any script
    assert not has_digit("no digits")


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        ('She named the file "final draft" and left.', "final draft"),
        ("The label reads “handle with care” on both sides.", "handle with care"),
        ("Auf dem Schild stand „Bitte klingeln“ in Rot.", "Bitte klingeln"),
        ("На двери висела табличка «Не беспокоить» весь день.", "Не беспокоить"),
        ("看板には「本日休業」と書いてあった。", "本日休業"),
        ("タイトルは『夜の庭』に決めた。", "夜の庭"),
        ("Run `make release` from the repository root.", "make release"),
        ("We called the plan 'quiet harbour' in the notes.", "quiet harbour"),
    ],
    ids=["straight", "curly", "low-high", "guillemets", "corner", "hollow", "backtick", "single"],
)
def test_quoted_strings_in_every_quote_style(said: str, quoted: str) -> None:
    assert quoted in specifics(said)


def test_an_apostrophe_is_no_quote() -> None:
    assert specifics("It's the team's call, don't wait.") == ()


def test_paths_urls_emails_and_test_ids_are_whole() -> None:
    said = (
        "Logs are in /var/log/shop/error.log and src/shop/cart.py, the run is at "
        "https://ci.example.org/runs/81?tab=logs, mail dana.k@example.com; the failure is "
        "tests/test_cart.py::test_discount[eu-2]."
    )
    found = specifics(said)
    for whole in (
        "/var/log/shop/error.log",
        "src/shop/cart.py",
        "https://ci.example.org/runs/81?tab=logs",
        "dana.k@example.com",
        "tests/test_cart.py::test_discount[eu-2]",
    ):
        assert whole in found, whole
    assert "www.example.com" in specifics("See www.example.com for the form.")


def test_code_identifiers() -> None:
    found = specifics("Use parse_config and loadSettings from shop.core.cart when starting.")
    assert found == ("parse_config", "loadSettings", "shop.core.cart")


def test_handles_and_hashtags_are_names_whatever_their_case() -> None:
    found = specifics("ping @mira and @dev.team about #launch and #Q3-plan before noon")
    assert found == ("@mira", "@dev.team", "#launch", "#Q3-plan")


def test_names_in_latin_and_cyrillic_inside_a_sentence_and_acronyms() -> None:
    found = specifics("We met Sofia Marquez in Lisbon, and later Ирина Соколова в Казани.")
    assert found == ("Sofia Marquez", "Lisbon", "Ирина Соколова", "Казани")
    assert specifics("Ship it with DHL or UPS.") == ("DHL", "UPS")


def test_a_capital_that_opens_a_sentence_or_a_pronoun_is_no_name() -> None:
    assert specifics("Lisbon is warm. We love it. I think so.") == ()
    assert specifics("Porto next. Braga after that.") == ()  # each opens its sentence
    assert specifics("We went on to Porto.") == ("Porto",)


def test_a_name_after_a_chinese_naming_cue() -> None:
    assert specifics("我女儿叫小雨，她对花生过敏。") == ("小雨",)
    assert "王芳" in specifics("我的同事名叫王芳。")


def test_a_name_before_the_japanese_naming_cue() -> None:
    # と申します follows the name it introduces ("I am Tanaka"): the name is before it.
    assert "田中" in specifics("田中と申します。よろしくお願いします。")


@pytest.mark.parametrize(
    ("said", "merged"),
    [
        ("She got into Ivy League on a scholarship.", "Ivy League"),
        ("He took CS 235 this term.", "CS 235"),
        ("We land on 14 April 2026 in the evening.", "14 April 2026"),
        ("Ирина прилетает в Лиссабон 14 апреля.", "Лиссабон 14"),
    ],
)
def test_names_and_numbers_side_by_side_are_one(said: str, merged: str) -> None:
    assert merged in specifics(said)


def test_a_date_in_may_is_one_specific() -> None:
    # "May" is a month here, not the modal verb: the date is one specific.
    assert "8 May 2023" in specifics("The lease was signed on 8 May 2023 in Porto.")


def test_each_specific_once_in_order() -> None:
    assert specifics("Order A-77, then B-12, then A-77 again.") == ("A-77", "B-12")


def test_a_bare_number_keeps_the_words_before_it_in_its_sentence() -> None:
    assert specific_phrases("I got a 60 on the exam and then 75.") == ("got a 60", "and then 75")
    assert specific_phrases("Budget between 2000 and 3000 dollars.") == (
        "Budget between 2000 and 3000",  # overlapping phrases joined
    )
    assert specific_phrases("We have 3 kids. Then 4 dogs.") == ("We have 3", "Then 4")
    assert specific_phrases("Ticket SUP-4411 is open.") == ("SUP-4411",)  # not bare: alone
    assert specific_phrases("  7 ") == ("7",)  # nothing before it


def test_exact_values_and_names() -> None:
    assert is_exact("SUP-4411") and is_exact("make release") and is_exact("Ivy League")
    assert not is_exact("Lisbon")  # a name: a paraphrase may give it back
    units = specific_units("Ticket SUP-4411 for Lisbon")
    assert {"sup", "4411", "lisbon"} <= units
    exact = exact_units("Ticket SUP-4411 for Lisbon")
    assert {"sup", "4411"} <= exact and "lisbon" not in exact


def test_tokens_keep_joined_parts_and_lose_trailing_punctuation() -> None:
    assert tokens("Deploy v2.3.1 to eu-west-1, then ping ops@example.org.") == [
        "Deploy",
        "v2.3.1",
        "to",
        "eu-west-1",
        "then",
        "ping",
        "ops@example.org",
    ]
