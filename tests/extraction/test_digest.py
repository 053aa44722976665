"""The extractive summary's layout (:mod:`memstore.extraction.digest`): sections in a fixed
order, one line per speaker, dated headings, and a text that reads back into the same facts,
so folding it again changes nothing."""

from __future__ import annotations

import pytest
from sessions import summarize
from talk import Talk

from memstore.extraction.digest import Digest, parse_summary
from memstore.extraction.fact_list import make_fact


def every_kind() -> Talk:
    """A session with a line of every section."""
    items = Talk()
    items.say("user", "Never run migrations on the replica db-02.")
    items.say("developer", "Switched the CI runner to the ubuntu-24.04 image.")
    for status in ("open", "pending", "closed"):
        items.call("get_ticket", {"ticket": "OPS-310"}, {"status": status, "owner": "Haruto"})
    items.say("user", "My manager Priya Nair approved 4200 euros for the Q3 offsite in Braga.")
    items.say("user", "Does the VPN support IPv6?")
    items.say("user", "Please draft the offsite agenda for 18 September.")
    return items


def test_sections_come_in_a_fixed_order_the_day_last() -> None:
    assert summarize(every_kind().items).splitlines() == [
        "Current objective: Please draft the offsite agenda for 18 September.",
        "Constraints:",
        "- Never run migrations on the replica db-02.",
        "Decisions:",
        "- Switched the CI runner to the ubuntu-24.04 image.",
        "Facts:",
        "- get_ticket(OPS-310): closed, Haruto (×3)",
        "- User: My manager Priya Nair approved 4200 euros for the Q3 offsite in Braga.",
        "Open questions:",
        "- Does the VPN support IPv6?",
        "Date: 2 March 2026",
    ]


def test_a_summary_reads_back_into_the_same_facts_and_folds_without_drift() -> None:
    text = summarize(every_kind().items)
    digest = parse_summary(text)
    assert digest.objective == "Please draft the offsite agenda for 18 September."
    assert [(fact.kind, fact.text) for fact in digest.facts.facts] == [
        ("constraint", "Never run migrations on the replica db-02."),
        ("decision", "Switched the CI runner to the ubuntu-24.04 image."),
        ("fact", "get_ticket(OPS-310): closed, Haruto"),
        ("fact", "User: My manager Priya Nair approved 4200 euros for the Q3 offsite in Braga."),
    ]
    assert [q.text for q in digest.questions] == ["Does the VPN support IPv6?"]
    assert digest.said_on == "2 March 2026" and not digest.marked
    assert digest.render() == text
    assert summarize([], previous=text) == text
    assert summarize([], previous=summarize([], previous=text)) == text


def test_the_repeat_marker_round_trips_and_counts_on() -> None:
    text = summarize(every_kind().items)
    (action,) = [f for f in parse_summary(text).facts.facts if f.attribute == "call"]
    assert action.repeats == 3 and action.values == ("closed", "Haruto")
    later = Talk().call("get_ticket", {"ticket": "OPS-310"}, {"status": "reopened"})
    folded = summarize(later.items, previous=text)
    assert "- get_ticket(OPS-310): reopened (×4)" in folded.splitlines()
    assert "closed" not in folded  # the newest value of the slot won


def test_one_speakers_lines_share_one_line_per_section_and_read_back_apart() -> None:
    items = Talk()
    items.say("user", "I signed the lease for the flat on Rua Augusta for 950 euros.")
    items.say("assistant", "The Rua Augusta building was renovated in 2019 by Atelier Sol.")
    items.say("user", "The movers from Rapido come on Friday at 8 with 2 vans.")
    text = summarize(items.items)
    assert text.splitlines()[1:3] == [
        "- User: I signed the lease for the flat on Rua Augusta for 950 euros. | The movers "
        "from Rapido come on Friday at 8 with 2 vans.",
        "- Assistant: The Rua Augusta building was renovated in 2019 by Atelier Sol.",
    ]
    facts = parse_summary(text).facts.facts
    assert sorted(fact.text for fact in facts) == [
        "Assistant: The Rua Augusta building was renovated in 2019 by Atelier Sol.",
        "User: I signed the lease for the flat on Rua Augusta for 950 euros.",
        "User: The movers from Rapido come on Friday at 8 with 2 vans.",
    ]
    assert summarize([], previous=text) == text


@pytest.mark.parametrize(
    "said",
    ["Cities I like: Berlin, Paris |", "Options a\t|\tb for the trip to Rome", "| Rome"],
)
def test_a_fact_never_holds_the_separator_and_still_round_trips(said: str) -> None:
    text = summarize(Talk().say("user", f"My sister Ana lives in Lisbon near Alfama. {said}").items)
    assert all("|" not in fact.text.split() for fact in parse_summary(text).facts.facts)
    assert summarize([], previous=text) == text


def test_a_multi_day_transcript_lists_its_facts_under_their_days() -> None:
    items = Talk()
    items.say("developer", "New conversation session on 8 May 2023.")
    items.say("user", "Ana: I signed the lease for the flat on Rua Augusta yesterday.")
    items.say("assistant", "Ben: My brother moved to Faro in 2020 and opened a surf school.")
    items.say("user", "Ana: The rent is 950 euros and the deposit two months.")
    items.say("assistant", "Ben: The surf school rents out 14 boards in summer.")
    items.say("developer", "New conversation session on 21 May 2023.")
    items.say("user", "Ana: The movers come on Friday at 8, company Rapido.")
    items.say("assistant", "Ben: I will lend you the van on Saturday, it seats 3.")
    text = summarize(items.items)
    lines = text.splitlines()
    assert lines[0] == "On 8 May 2023:" and "On 21 May 2023:" in lines
    assert "yesterday (7 May 2023)" in text
    digest = parse_summary(text)
    assert digest.marked and digest.spans_days and digest.speakers == {"Ana", "Ben"}
    assert {fact.said_on for fact in digest.facts.facts} == {"8 May 2023", "21 May 2023"}
    assert summarize([], previous=text) == text


def test_the_day_in_force_says_how_the_days_were_set() -> None:
    stamped = parse_summary("Facts:\n- User: locker B7\nDate: 8 May 2023")
    assert stamped.said_on == "8 May 2023" and not stamped.marked
    assert [fact.said_on for fact in stamped.facts.facts] == ["8 May 2023"]  # its one day
    marked = parse_summary("Session date: 8 May 2023")
    assert marked.said_on == "8 May 2023" and marked.marked
    assert parse_summary("Date: soon").said_on is None


def test_a_models_headings_are_read_as_the_same_sections_or_kept_as_its_own() -> None:
    text = "\n".join(
        [
            "Current objective: fix checkout",
            "Important observations:",
            "- payments p95 is 1720ms",
            "Unresolved questions:",
            "* who owns billing?",
            "Actions attempted:",
            "1. restarted the cache",
            "Next steps:",
            "- roll back fraud",
        ]
    )
    digest = parse_summary(text)
    assert digest.objective == "fix checkout"
    assert [fact.text for fact in digest.facts.facts] == ["payments p95 is 1720ms"]
    assert [q.text for q in digest.questions] == ["who owns billing?"]
    assert digest.other == {
        "Actions attempted": ["restarted the cache"],
        "Next steps": ["roll back fraud"],
    }
    assert digest.render().splitlines() == [
        "Current objective: fix checkout",
        "Facts:",
        "- payments p95 is 1720ms",
        "Open questions:",
        "- who owns billing?",
        "Actions attempted:",
        "- restarted the cache",
        "Next steps:",
        "- roll back fraud",
    ]


def test_lines_before_any_heading_are_facts() -> None:
    digest = parse_summary("The vendor portal moved to portal.example.org.\nFacts:\n- one more")
    assert [fact.text for fact in digest.facts.facts] == [
        "The vendor portal moved to portal.example.org.",
        "one more",
    ]
    assert parse_summary(None).render() == "" and parse_summary("").render() == ""


def test_what_a_user_asked_for_is_said_once_and_not_where_a_call_says_it() -> None:
    digest = Digest()
    digest.facts.add(
        make_fact(
            "book_table(Casa Lima, 4): BK-2201, confirmed",
            subject="book_table(Casa Lima, 4)",
            attribute="call",
            values=("BK-2201", "confirmed"),
        )
    )
    for asked in (("Casa Lima", "12 April", "Ortega"), ("Ortega", "window table")):
        digest.facts.add(
            make_fact(
                f"User asked: {', '.join(asked)}",
                subject="User",
                speaker="User asked",
                values=asked,
            )
        )
    assert digest.render().splitlines() == [
        "Facts:",
        "- book_table(Casa Lima, 4): BK-2201, confirmed",
        "- User asked: 12 April, Ortega | window table",
    ]


def test_an_action_line_keeps_every_value_it_returned() -> None:
    items = Talk()
    items.call("get_order", {"order_id": "A-1042"}, {"customer": "Ines Duarte", "city": "Braga"})
    items.call(
        "get_customer", {"email": "ines@example.pt"}, {"name": "Ines Duarte", "tier": "gold"}
    )
    lines = summarize(items.items).splitlines()
    assert "- get_order(A-1042): Ines Duarte, Braga" in lines
    assert "- get_customer(ines@example.pt): Ines Duarte, gold" in lines  # its value too


def test_the_day_in_force_survives_a_day_that_holds_only_a_decision() -> None:
    items = Talk()
    items.say("developer", "New conversation session on 8 May 2023.")
    items.say("user", "I went to a pottery class in Ghent yesterday.")
    items.say("developer", "New conversation session on 9 May 2023.")
    items.say("developer", "Ship the blue van to Ghent on Friday.")
    text = summarize(items.items)
    assert text.splitlines()[-1] == "Session date: 9 May 2023"  # no fact's heading says it
    later = Talk().say("user", "I bought a kiln from Berit yesterday.", day=30)  # imported later
    folded = summarize(later.items, previous=text)
    assert "On 9 May 2023:\n- User: I bought a kiln from Berit yesterday (8 May 2023)." in folded
    fresh = summarize(
        Talk().say("user", "Pottery is my favourite way to relax.").items,
        previous="Session date: 25 May 2023",
    )
    assert fresh == "On 25 May 2023:\n- User: Pottery is my favourite way to relax."
