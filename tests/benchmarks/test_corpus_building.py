"""How benchmarks/corpora*.py turn data into sessions, on hand-made data (no fetching)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import corpora
from chat_corpora import asks_for_review, language_of
from corpora import Item, chained, user
from tool_corpora import _parsed_call, _run


def unit(size: int) -> list[list[Item]]:
    return [[user(f"message {n}")] for n in range(size)]


def test_sessions_chain_whole_units_up_to_their_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpora, "SESSION_ITEMS", 10)
    monkeypatch.setattr(corpora, "MAX_SESSION_ITEMS", 12)
    sessions = chained("c", [unit(4), unit(4), unit(3), unit(5), unit(6), unit(2)])
    assert [len(s.items) for s in sessions] == [11, 11]  # the last 2 items are too few
    assert [s.name for s in sessions] == ["c-1", "c-2"]


def test_a_unit_that_would_pass_the_most_starts_the_next_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(corpora, "SESSION_ITEMS", 10)
    monkeypatch.setattr(corpora, "MAX_SESSION_ITEMS", 12)
    sessions = chained("c", [unit(8), unit(6), unit(7)], limit=5)
    assert [len(s.items) for s in sessions] == [8, 6, 7]


def test_a_short_last_session_is_kept_only_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpora, "SESSION_ITEMS", 10)
    monkeypatch.setattr(corpora, "MAX_SESSION_ITEMS", 12)
    assert [len(s.items) for s in chained("c", [unit(3)])] == [3]
    assert [len(s.items) for s in chained("c", [unit(10), unit(6)])] == [10, 6]
    assert [len(s.items) for s in chained("c", [unit(10), unit(4)])] == [10]
    assert len(chained("c", [unit(10), unit(10), unit(10)], limit=2)) == 2


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Could you help me plan a trip to the coast with my two kids in June?", "en"),
        ("Necesito una lista de nombres para el equipo de robótica de la escuela.", "es"),
        ("Помоги мне написать письмо арендодателю о ремонте крана.", "ru"),
        ("请帮我写一封给房东的信，说明厨房的水龙头坏了。", "zh"),
        ("집주인에게 부엌 수도꼭지가 고장 났다고 편지를 써 주세요.", "ko"),
        ("台所の蛇口が壊れたと大家さんに手紙を書いてください。", "ja"),
        ("SELECT id FROM t; 42", None),
    ],
)
def test_the_language_of_a_users_messages(text: str, language: str | None) -> None:
    assert language_of(text) == language


def test_a_request_to_review_pasted_code() -> None:
    code = "def total(items):\n    s = 0\n    for i in items: s += i.price()\n    return s\n" * 3
    assert asks_for_review("Can you review this and find the bugs?\n" + code)
    assert not asks_for_review("Can you review my essay about the war of 1812? " * 5)
    assert not asks_for_review("Write a function that adds two numbers.\n" + code)


class Shelf:
    """A stand-in with the shape of the Leaderboard's API classes."""

    def __init__(self) -> None:
        self.books: dict[str, int] = {}

    def add(self, title: str, copies: int = 1) -> dict[str, Any]:
        self.books[title] = self.books.get(title, 0) + copies
        return {"title": title, "copies": self.books[title]}

    def remove(self, title: str) -> str:
        if title not in self.books:
            raise KeyError(title)
        del self.books[title]
        return "removed"


def test_a_ground_truth_call_runs_with_its_arguments_by_name() -> None:
    shelf = Shelf()
    methods = {"add": shelf.add, "remove": shelf.remove}
    name, arguments = _parsed_call("add('Dune', copies=2)", methods)
    assert (name, arguments) == ("add", {"title": "Dune", "copies": 2})
    assert json.loads(_run(methods[name], arguments)) == {"title": "Dune", "copies": 2}
    assert _run(shelf.remove, {"title": "Emma"}) == "Error during execution: 'Emma'"
    with pytest.raises(ValueError, match="not a plain call"):
        _parsed_call("shelf.add('Dune')", methods)
