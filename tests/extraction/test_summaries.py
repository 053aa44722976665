"""What the extractive summary keeps of sessions of every kind, once they leave memory.

Each test runs a real store (a SQLite file, tiktoken's counts, hard 600 / target 350 /
keep 2) or the summarizer alone, on sessions written for the behaviour tested
(:mod:`sessions`): a test log, facts said in Russian and Chinese, a session over several
days, lines that open with ``Error:``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sessions import PYTEST_LOG, TRIP_FACTS, TRIP_LATER, Items, summarize, trip

from memstore import MemoryLimits, MemoryStore, TiktokenEstimator
from memstore.extraction.digest import parse_summary

LIMITS = MemoryLimits(hard=600, target=350, keep_recent=2)
FILLER = (
    "Let me walk through the remaining steps one at a time, checking each before moving on, "
    "so that nothing is skipped and the result can be verified afterwards by anyone."
)


async def compacted(tmp_path: Path, items: Items, later: str = FILLER) -> tuple[str, str]:
    """Append ``items`` and enough later turns to compact them away; the summary and the
    whole model input's text."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    async with MemoryStore.open(tmp_path / "s.db") as store:
        memory = store.session("s", limits=LIMITS, estimator=TiktokenEstimator())
        for item in items.items:
            if item.payload is not None:
                if item.payload["type"] == "function_call":
                    continue
                call = next(i for i in items.items if i.call_id == item.call_id and i is not item)
                await memory.add_items([dict(call.payload or {}), dict(item.payload)])
            else:
                await memory.add(item.role, item.content, kind=item.kind)
        while not await memory.reports() or len(await memory.items()) > 2:
            await memory.add("assistant", later)
        summary = await memory.summary() or ""
        messages = await memory.build_model_input()
    return summary, "\n".join(str(m["content"]) for m in messages)


async def test_a_test_log_keeps_its_failures_counts_and_expected_value(tmp_path: Path) -> None:
    items = Items().say("user", "Run the refund tests and tell me what broke.")
    items.call("run_tests", {"path": "tests/test_refunds.py"}, PYTEST_LOG)
    summary, _ = await compacted(tmp_path, items)
    assert "1 failed, 211 passed" in summary
    assert "tests/test_refunds.py::test_partial_refund" in summary
    assert "10.0 == 12.5" in summary
    assert "test_case_3 PASSED" not in summary  # the passing lines are not the outcome


@pytest.mark.parametrize("language", ["en", "ru", "zh"])
async def test_facts_said_in_any_language_survive_a_compaction(
    tmp_path: Path, language: str
) -> None:
    summary, _ = await compacted(tmp_path, trip(language), TRIP_LATER[language])
    kept = [fact for fact in TRIP_FACTS[language] if fact.casefold() in summary.casefold()]
    assert kept == TRIP_FACTS[language], summary


async def test_the_same_session_keeps_as_much_in_russian_and_chinese_as_in_english(
    tmp_path: Path,
) -> None:
    """At the same limits, each language's model input keeps the trip's facts within 10
    points of the English one's."""
    shares = {}
    for language in TRIP_FACTS:
        _, given = await compacted(tmp_path / language, trip(language), TRIP_LATER[language])
        shares[language] = _share(language, given)
    assert shares["en"] == 1.0
    assert abs(shares["ru"] - shares["en"]) <= 0.1 and abs(shares["zh"] - shares["en"]) <= 0.1


def _share(language: str, summary: str) -> float:
    facts = TRIP_FACTS[language]
    return sum(fact.casefold() in summary.casefold() for fact in facts) / len(facts)


def test_a_session_over_three_days_dates_its_facts() -> None:
    items = Items()
    items.say("user", "I booked the dentist for Thursday at 15:30, the clinic on Rua Augusta.")
    items.say("user", "The plumber is coming tomorrow morning to fix the kitchen sink.", day=1)
    items.say("user", "The plumber charged 180 euros, invoice INV-2207.", day=2)
    summary = summarize(items.items)
    digest = parse_summary(summary)
    assert {fact.said_on for fact in digest.facts.facts} == {
        "2 March 2026",
        "3 March 2026",
        "4 March 2026",
    }
    assert "tomorrow (4 March 2026)" in summary  # relative days pinned to the item's own day
    heading = {line: n for n, line in enumerate(summary.splitlines())}
    assert heading["On 2 March 2026:"] < heading["On 4 March 2026:"]


def test_a_new_day_dates_what_an_undated_summary_held() -> None:
    first = summarize(Items().say("user", "My locker code is 4512, locker B7 on floor two.").items)
    assert "Date: 2 March 2026" in first and "On " not in first  # one day: written once
    later = Items(start=Items().start).say("user", "I moved to locker C3 on floor three.", day=1)
    folded = summarize(later.items, previous=first)
    assert "On 2 March 2026:" in folded and "On 3 March 2026:" in folded
    assert folded.index("4512") < folded.index("On 3 March 2026:")


def test_a_date_line_still_dates_an_imported_history() -> None:
    items = Items()
    items.say("developer", "New conversation session on 8 May 2023.")
    items.say("user", "I adopted a grey cat called Pixel from the shelter on Elm Street.")
    summary = summarize(items.items)
    assert "On 8 May 2023:" in summary and "2026" not in summary


def test_error_and_note_lines_are_text_not_speakers() -> None:
    items = Items()
    items.say("user", "Error: the deploy of build 7731 failed on staging with exit code 137.")
    items.say("user", "Note: the staging cluster runs out of memory above 6 replicas.")
    summary = summarize(items.items)
    assert "- User: Error: the deploy of build 7731" in summary
    assert "Note: the staging cluster" in summary
    assert not re.search(r"^- (Error|Note): ", summary, re.M)


def test_a_transcript_names_its_speakers() -> None:
    items = Items()
    lines = [
        ("user", "Ana: I started the pottery course at the community centre on Monday."),
        ("assistant", "Ben: Nice, mine starts on 12 June at the harbour studio."),
        ("user", "Ana: My first bowl cracked in the kiln at 1200 degrees."),
        ("assistant", "Ben: The studio fires at 1100 degrees, maybe that helps."),
        ("user", "Ana: I will ask the teacher, Mrs Okafor, on Thursday."),
        ("assistant", "Ben: She also runs the glazing workshop in August."),
    ]
    for role, text in lines:
        items.say(role, text)
    summary = summarize(items.items)
    assert "- Ana: " in summary and "- Ben: " in summary and "- User: " not in summary


def test_an_action_becomes_one_line_of_its_values() -> None:
    items = Items().say("user", "Check order W2378 and the customer's account please.")
    items.call(
        "get_order_details",
        {"order_id": "#W2378"},
        {"order_id": "#W2378", "status": "delivered", "total": 54.3, "paid": True,
         "items": [{"name": "desk lamp", "price": 42.0}, {"name": "mug", "price": 12.3}]},
    )  # fmt: skip
    summary = summarize(items.items)
    line = next(line for line in summary.splitlines() if "get_order_details" in line)
    assert line.startswith("- get_order_details(#W2378): ")
    for value in ("delivered", "54.3", "true", "desk lamp", "42.0", "mug", "12.3"):
        assert value in line
    assert line.count("#W2378") == 1  # a value its arguments say is said once


def test_a_newer_output_of_the_same_call_replaces_the_older_and_counts() -> None:
    items = Items()
    items.call("get_ticket_status", {"ticket": "SUP-88"}, {"status": "open", "owner": "kai"})
    items.call("get_ticket_status", {"ticket": "SUP-88"}, {"status": "resolved", "owner": "kai"})
    summary = summarize(items.items)
    assert "resolved" in summary and "open" not in summary
    assert "(×2)" in summary
    again = summarize(
        Items().call("get_ticket_status", {"ticket": "SUP-88"}, {"status": "closed"}).items,
        previous=summary,
    )
    assert "closed" in again and "resolved" not in again and "(×3)" in again


def test_what_a_task_asked_for_is_kept_beside_its_calls() -> None:
    items = Items().say("user", "Post 'Launch day!' to our feed and tag @mira and @devteam.")
    items.call("post", {"text": "Launch day!"}, {"id": 9941, "status": "posted"})
    summary = summarize(items.items)
    assert "9941" in summary and "posted" in summary
    assert "@mira" in summary and "@devteam" in summary


def test_a_summary_never_exceeds_its_room_and_never_fails_for_lack_of_it() -> None:
    items = Items()
    for n in range(30):
        items.say("user", f"Shipment {n} to warehouse W-{n:02d} weighs {100 + n} kg, pallet P{n}.")
    for room in (5, 8, 12, 40, 120):
        text = summarize(items.items, room=room)
        assert len(text.split()) <= room
    assert summarize(items.items, room=12)  # a line's head fits where no whole line does


def test_greetings_and_acknowledgements_are_not_kept() -> None:
    items = Items()
    chatter = [
        ("user", "Hello!"),
        ("assistant", "Hi there, how can I help?"),
        ("user", "Thanks a lot!"),
        ("user", "Спасибо!"),
        ("user", "好的，谢谢"),
    ]
    for role, text in chatter:
        items.say(role, text)
    assert summarize(items.items) == ""
