"""Fitting a summary into its room (:mod:`memstore.extraction.summary_fit`): whole lines go,
those that say least per token first; a statement too long for the room may leave its short
form; a model's own sections go before any fact; never over the budget."""

from __future__ import annotations

import re

import pytest
from sessions import summarize
from talk import Talk

from memstore import ExtractiveSummarizer, TiktokenEstimator, WordEstimator
from memstore.extraction.digest import Digest, parse_summary
from memstore.extraction.fact_list import make_fact
from memstore.extraction.protocols import SummaryText
from memstore.extraction.summary_fit import fit_summary

COUNT = WordEstimator().count


def said(*sentences: str, role: str = "user") -> Talk:
    items = Talk()
    for sentence in sentences:
        items.say(role, sentence)
    return items


def facts_of(text: str) -> list[str]:
    """A summary's fact lines, one speaker's shared line split into its facts."""
    return [part for part in re.split(r"\n- (?:\w+: )?|\n| \| ", text) if part]


# -- never over the room -----------------------------------------------------------------------


def test_a_fitted_text_is_within_its_budget_or_empty_at_every_budget() -> None:
    text = "Session date: 8 May 2023\nFacts:\n- get_order(W-31): shipped, DHL, in transit"
    for budget in range(COUNT(text) + 1):
        fitted = fit_summary(text, budget, COUNT)
        assert COUNT(fitted) <= budget
        # a date alone says little: the line's head, cut, when it fits
        assert fitted in ("", "Session date: 8 May 2023", text) or fitted.startswith(
            "- get_order(W-31): shipped"
        )


def test_a_summary_never_exceeds_its_room() -> None:
    items = Talk()
    for n in range(25):
        items.say("user", f"Crate {n} for depot D-{n:02d} weighs {200 + n} kg, seal S{n}.")
    for room in (0, 3, 5, 9, 14, 30, 90, 200):
        assert COUNT(summarize(items.items, room=room)) <= room


def test_a_room_a_line_fits_never_comes_back_empty() -> None:
    text = (
        "Facts:\n- Assistant: Pottery helps me relax after work. | I went to a climbing gym in "
        "Braga."
    )
    alone = "Facts:\n- Assistant: Pottery helps me relax after work."
    for budget in range(COUNT(alone), COUNT(text) + 1):
        assert fit_summary(parse_summary(text), budget, COUNT), budget


def test_the_last_fact_of_a_speakers_line_is_charged_no_separator() -> None:
    one = "Facts:\n- Assistant: The museum opens at 10 on Sundays."
    digest = parse_summary(f"{one} | The garden behind it is lovely in spring.")
    assert fit_summary(digest, COUNT(one), COUNT) == one  # exactly the room one fact needs


# -- what goes first ---------------------------------------------------------------------------


def test_over_budget_whole_lines_go_least_informative_and_oldest_first() -> None:
    items = said(
        "I really liked the new office kitchen downtown.",
        "My cousin Ana moved to Berlin in March 2021 for a job at Siemens.",
        "I really liked the new cafe menu downtown.",
        "We adopted a beagle named Biscuit last year, she is 14 months old.",
    )
    full = summarize(items.items)
    tight = summarize(items.items, room=COUNT(full) - 3)
    assert COUNT(tight) <= COUNT(full) - 3
    assert "office" not in tight and "cafe" in tight  # alike: the oldest went first
    assert "Berlin" in tight and "Biscuit" in tight
    whole = set(facts_of(full))
    assert all(fact in whole for fact in facts_of(tight) if " mentioned: " not in fact)
    tighter = summarize(items.items, room=COUNT(full) - 12)
    assert "cafe" not in tighter and "Berlin" in tighter and "Biscuit" in tighter


def test_a_line_that_adds_nothing_new_goes_before_one_that_does() -> None:
    items = said(
        "My cousin Ana moved to Berlin for a job at Siemens in March.",
        "We adopted a beagle named Biscuit from a shelter.",
        "My cousin Ana moved to Berlin in March for Siemens, she loves it.",  # mostly said
    )
    full = summarize(items.items)
    assert full.count("Berlin") == 2  # different words: not the same fact
    tight = summarize(items.items, room=COUNT(full) - 8)
    assert "Biscuit" in tight and tight.count("Berlin") == 1


def test_a_shorter_line_uses_the_room_a_longer_worthier_one_left() -> None:
    long_line = (
        "My cousin Ana Ruiz moved to Berlin in March 2021 for Siemens, Tom joined her in "
        "May 2021 with Lea, Max and Biscuit."
    )
    items = said("I guess the cafe was kind of nice and I liked it there a lot, it was good.")
    items.say("user", long_line)
    full = summarize(items.items)
    tight = summarize(items.items, room=COUNT(full) - COUNT(long_line))
    assert "cafe" in tight and "Siemens, Tom joined" not in tight


def test_a_line_that_says_nothing_is_never_kept() -> None:
    reply = "\n".join(["Facts:", "- ok", "- Order 5: awaiting stock at the Leeds depot"])
    fitted = fit_summary(reply, COUNT(reply) - 1, COUNT)
    assert fitted == "Facts:\n- Order 5: awaiting stock at the Leeds depot"


def test_a_models_sections_are_kept_and_go_before_any_fact() -> None:
    previous = "\n".join(
        [
            "Current objective: fix checkout",
            "Constraints:",
            "- never deploy on Fridays",
            "Actions attempted:",
            "- restarted the cache",
            "- rolled back fraud",
            "Open questions:",
            "- who owns billing?",
        ]
    )
    kept = summarize([], previous=previous)
    assert "Actions attempted:\n- restarted the cache\n- rolled back fraud" in kept
    assert kept.index("Open questions:") < kept.index("Actions attempted:")
    tight = summarize([], previous=previous, room=COUNT(kept) - 2)
    assert "restarted the cache" not in tight and "rolled back fraud" in tight  # oldest first
    assert "never deploy on Fridays" in tight and "who owns billing?" in tight


# -- the frame: objective and date --------------------------------------------------------------


def test_an_objective_alone_over_the_budget_is_dropped() -> None:
    assert summarize(said("Check " + "the depot inventory " * 10).items, room=5) == ""


def test_a_frame_over_the_budget_leaves_its_room_to_the_facts() -> None:
    facts = "Facts:\n- get_order(W-31): shipped, DHL"
    objective = f"Current objective: {'check the order ' * 20}"
    assert fit_summary(f"{objective}\n{facts}", COUNT(facts), COUNT) == facts
    dated = f"{facts}\nSession date: 8 May 2023"
    assert fit_summary(f"{objective}\n{dated}", COUNT(dated), COUNT) == dated  # the date fits
    # A date its fact's heading already says is not written, so it takes no room.
    on_the_day = "On 8 May 2023:\n- Rosa: I repotted the lemon tree"
    text = f"{objective}\nSession date: 8 May 2023\n{on_the_day}"
    assert fit_summary(text, COUNT(on_the_day), COUNT) == on_the_day


# -- short forms ----------------------------------------------------------------------------


LONG_STATEMENT = (
    "My flight to Oslo leaves at 14:05 from gate B32, and the layover in Frankfurt is long "
    "because the connecting plane was moved to the evening slot."
)


@pytest.mark.parametrize(("role", "speaker"), [("assistant", "Assistant"), ("user", "User")])
def test_a_statement_that_does_not_fit_leaves_its_specifics(role: str, speaker: str) -> None:
    items = said(LONG_STATEMENT, role=role)
    full = summarize(items.items)
    assert f"- {speaker}: {LONG_STATEMENT}" in full.splitlines()  # room: the statement
    short = summarize(items.items, room=COUNT(full) - 1)
    (line,) = [line for line in short.splitlines() if line.startswith("- ")]
    assert line.startswith(f"- {speaker} mentioned: ")
    for value in ("14:05", "B32", "Frankfurt"):
        assert value in line


def test_names_alone_make_no_short_form() -> None:
    statement = LONG_STATEMENT.replace("at 14:05 from gate B32", "from the north gate")
    items = said(statement, role="user")
    full = summarize(items.items)
    assert f"- User: {statement}" in full.splitlines()
    short = summarize(items.items, room=COUNT(full) - 1)
    assert " mentioned: " not in short  # Oslo, Frankfurt: no exact value among them


def test_a_short_form_never_displaces_a_statement_that_fits() -> None:
    text = (
        "Facts:\n- Assistant: Pottery helps me relax after work. | I went to a climbing gym in "
        "Braga."
    )
    alone = "Facts:\n- Assistant: Pottery helps me relax after work."
    assert fit_summary(parse_summary(text), COUNT(alone), COUNT) == alone


def test_a_short_form_reads_back_as_it_is() -> None:
    items = said(LONG_STATEMENT, role="assistant")
    full = summarize(items.items)
    short = summarize(items.items, room=COUNT(full) - 1)
    assert summarize([], previous=short) == short
    (mentioned,) = parse_summary(short).facts.facts
    assert mentioned.text.startswith("Assistant mentioned: ") and "B32" in mentioned.values


def test_an_asks_values_a_kept_action_line_says_cost_nothing() -> None:
    def digest() -> Digest:
        found = Digest()
        found.facts.add(
            make_fact(
                "book_table(Casa Lima, 4): BK-2201, confirmed, Rua das Flores 12, 19:30",
                subject="book_table(Casa Lima, 4)",
                attribute="call",
                values=("BK-2201", "confirmed", "Rua das Flores 12", "19:30"),
            )
        )
        asked = ("Casa Lima", "Rua das Flores 12", "19:30", "Ortega")
        found.facts.add(
            make_fact(
                "User asked: " + ", ".join(asked),
                subject="User",
                speaker="User asked",
                values=asked,
            )
        )
        found.facts.add(make_fact("Assistant: The walk back was nice.", speaker="Assistant"))
        return found

    both = (
        "Facts:\n- book_table(Casa Lima, 4): BK-2201, confirmed, Rua das Flores 12, 19:30\n"
        "- User asked: Ortega"
    )
    assert fit_summary(digest(), COUNT(both), COUNT) == both


# -- the budget and who counts it --------------------------------------------------------------


def test_the_budget_is_counted_by_the_callers_estimator() -> None:
    items = said(
        *(
            f"My colleague Dana{n} moved to Osaka in 20{n:02d} to open the office."
            for n in range(1, 40)
        )
    )
    count = TiktokenEstimator().count
    text = ExtractiveSummarizer().summarize(None, items.items, max_tokens=120, count_tokens=count)
    assert 100 <= count(text) <= 120
    assert "Dana39" in text and "Dana1 " not in text  # alike lines: the oldest went first


def test_an_explicit_cap_bounds_the_room_a_compaction_offers() -> None:
    items = said(*(f"My colleague Dana{n} moved to Osaka in 20{n:02d}." for n in range(1, 40)))
    capped = ExtractiveSummarizer(max_tokens=50).summarize(None, items.items, max_tokens=300)
    assert COUNT(capped) <= 50
    roomy = ExtractiveSummarizer().summarize(None, items.items, max_tokens=300)
    assert 50 < COUNT(roomy) <= 300


def test_nothing_worth_keeping_is_an_answer_not_an_error() -> None:
    items = said("hi!").say("assistant", "ok thanks")
    text = summarize(items.items)
    assert text == "" and isinstance(text, SummaryText) and text.kept_nothing


def test_the_head_of_the_worthiest_line_when_no_whole_line_fits() -> None:
    items = said("Shipment 7 to warehouse W-07 weighs 107 kg on pallet P7 and waits at dock 4.")
    full = summarize(items.items)
    head = fit_summary(parse_summary(full), 9, COUNT)
    assert head.startswith("- User: Shipment 7") and head.endswith(" ...")
    assert COUNT(head) <= 9
    assert fit_summary(parse_summary(full), 3, COUNT) == ""  # too little room to say anything
    assert summarize(items.items, room=9) == head  # the summarizer's answer
