"""OpenAISummarizer within the room a compaction leaves it: the budget said in the request,
the call's output capped from it, and a reply still over it fitted by whole lines, the same
way the extractive summary fits (one ``fit_summary``). Real ``openai`` client, stand-in
``/v1/responses``."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_item

from memstore import MemoryLimits, MemoryStore, OpenAISummarizer, WordEstimator
from memstore.errors import ModelCallError
from memstore.extraction.digest import parse_summary
from memstore.extraction.protocols import SummaryText
from memstore.extraction.summary_fit import fit_summary
from memstore.model_side.openai_summarizer import (
    MIN_OUTPUT_TOKENS,
    SUMMARY_INSTRUCTIONS,
)
from memstore.model_side.stand_in_server import StandInModel, text_reply

MODEL = "gpt-summary-test"
COUNT = WordEstimator().count
ITEMS = [make_item("Where is order 3?", seq=1)]
#: A model's summary of 45 words: the objective, a constraint, five facts, a model section.
REPLY = "\n".join(
    [
        "Current objective: find order 3.",
        "Constraints:",
        "- Never refund before the carrier confirms a loss.",
        "Facts:",
        "- Order 3: status shipped, carrier DHL, eta 2024-06-14",
        "- Order 4: status delivered",
        "- ok",
        "- Ticket T-9: owner Ana Ruiz, status escalated, due 2024-06-20",
        "- Order 5: awaiting stock",
        "Actions attempted:",
        "- looked up order 3",
    ]
)


def summarizer(standin: StandInModel, **options: Any) -> OpenAISummarizer:
    return OpenAISummarizer(standin.client(), MODEL, **options)


def replying(text: str) -> StandInModel:
    standin = StandInModel()
    standin.queue(lambda request: text_reply(request, text))
    return standin


async def test_the_request_says_the_room_and_caps_the_output() -> None:
    standin = replying("Current objective: find order 3.")
    summarize = summarizer(standin, max_output_tokens=800, max_words=300)
    result = await summarize(None, ITEMS, max_tokens=200, count_tokens=COUNT)
    assert result == "Current objective: find order 3."
    (body,) = standin.bodies
    instructions = " ".join(body["instructions"].split())
    assert "room for at most 200 tokens" in instructions
    assert "Keep it under 150 words." in instructions  # the room in words, under 300
    assert body["max_output_tokens"] == 300  # 1.5x the room: a model counts its own way


@pytest.mark.parametrize(
    ("room", "own_cap", "sent"),
    [(10, 800, MIN_OUTPUT_TOKENS), (2000, 800, 800), (40, 50, 50)],
)
async def test_the_cap_has_a_floor_and_never_exceeds_the_summarizers_own(
    room: int, own_cap: int, sent: int
) -> None:
    standin = replying("Current objective: x")
    await summarizer(standin, max_output_tokens=own_cap)(None, ITEMS, max_tokens=room)
    assert standin.bodies[0]["max_output_tokens"] == sent


async def test_an_over_long_reply_is_fitted_by_whole_lines_least_informative_first() -> None:
    assert COUNT(REPLY) > 30
    result = await summarizer(replying(REPLY))(None, ITEMS, max_tokens=30, count_tokens=COUNT)
    assert isinstance(result, SummaryText) and result.usage is not None
    assert COUNT(result) <= 30
    lines = result.splitlines()
    assert set(lines) <= set(REPLY.splitlines())  # whole lines, never a cut one
    assert "Current objective: find order 3." in lines
    assert sum(line.startswith("- ") for line in lines) >= 2  # facts kept, not a stub
    assert COUNT(result) >= 24  # the room used, not left empty
    assert "- ok" not in lines  # says nothing: the first to go
    assert "- looked up order 3" not in lines  # a model's own section goes before any fact
    # The same lines the extractive summary's fitting keeps: one implementation.
    assert result == fit_summary(REPLY, 30, COUNT)


async def test_the_room_is_counted_with_the_sessions_estimator() -> None:
    def by_characters(text: str) -> int:
        return len(text)

    result = await summarizer(replying(REPLY))(
        None, ITEMS, max_tokens=120, count_tokens=by_characters
    )
    assert 0 < len(result) <= 120


async def test_without_a_room_the_call_is_as_before() -> None:
    standin = replying(REPLY)
    result = await summarizer(standin, max_output_tokens=321)(None, ITEMS)
    assert result == REPLY  # nothing fitted
    (body,) = standin.bodies
    assert body["instructions"] == SUMMARY_INSTRUCTIONS.format(max_words=300)
    assert body["max_output_tokens"] == 321


async def test_a_reply_of_which_no_line_fits_comes_back_empty_with_its_usage() -> None:
    long_line = "Current objective: " + " ".join(f"step{n}" for n in range(40))
    result = await summarizer(replying(long_line))(None, ITEMS, max_tokens=5, count_tokens=COUNT)
    assert result == "" and not result.kept_nothing  # not an answer: nothing usable
    assert result.usage is not None and result.usage["output_tokens"] > 0  # it was paid for
    standin = replying("Current objective: x")
    assert await summarizer(standin)(None, ITEMS, max_tokens=1) == ""
    assert standin.bodies[0]["max_output_tokens"] == MIN_OUTPUT_TOKENS  # never asked for 1
    assert await summarizer(standin)(None, ITEMS, max_tokens=0) == ""
    assert len(standin.bodies) == 1  # no room at all: no paid call


async def test_an_empty_reply_is_still_an_error() -> None:
    with pytest.raises(ModelCallError, match="empty summary"):
        await summarizer(replying("  "))(None, ITEMS, max_tokens=50, count_tokens=COUNT)


async def test_in_a_compaction_the_summary_fits_the_room_and_an_empty_fit_is_recorded(
    store: MemoryStore,
) -> None:
    fits, too_long = StandInModel(), StandInModel()
    fits.queue(*[lambda request: text_reply(request, REPLY)] * 10)
    long_line = "Current objective: " + " ".join(f"step{n}" for n in range(200))
    too_long.queue(*[lambda request: text_reply(request, long_line)] * 10)
    limits = MemoryLimits(hard=80, target=60, keep_recent=2)
    for name, standin in (("fits", fits), ("too-long", too_long)):
        memory = store.session(
            name, limits=limits, estimator=WordEstimator(), summarizer=summarizer(standin)
        )
        for n in range(12):
            await memory.add("user", f"Message {n} about order {n} and its courier DPD today.")
        reports = await memory.reports()
        assert reports and await memory.estimated_tokens() <= limits.hard
        if name == "fits":
            assert all(r.summary_error is None for r in reports)
            summary = await memory.summary()
            assert summary is not None and set(summary.splitlines()) <= set(REPLY.splitlines())
        else:
            errors = {r.summary_error for r in reports}
            assert errors == {"summarizer returned no usable text"}  # as an empty summary is
            assert all(r.usage and r.usage["output_tokens"] > 0 for r in reports)
            assert await memory.summary() is None


def test_fit_summary_returns_a_fitting_text_unchanged_and_fits_a_digest_the_same() -> None:
    odd = "Facts:\n* Order 3:  status shipped"  # a model's own bullets and spacing
    assert fit_summary(odd, 100, COUNT) == odd
    assert fit_summary(REPLY, 30, COUNT) == fit_summary(parse_summary(REPLY), 30, COUNT)
    assert fit_summary(REPLY, 0, COUNT) == ""
