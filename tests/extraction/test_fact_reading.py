"""Facts from items (:mod:`memstore.extraction.facts` and :mod:`.fact_list`): actions, task
turns, questions and their answers, statements, rules and decisions, each once."""

from __future__ import annotations

import pytest
from sessions import summarize
from talk import Talk, read, texts

from memstore import MemoryKind, OfflineExtractor, Priority
from memstore.extraction.fact_list import (
    CONSTRAINT,
    DECISION,
    KIND_WEIGHT,
    MAX_FACT_WORDS,
    QUESTION,
    FactList,
    make_fact,
)
from memstore.extraction.facts import extract_facts

# -- task turns and actions --------------------------------------------------------------------


def test_a_task_turn_keeps_what_its_calls_did_not_return_as_asked() -> None:
    items = Talk().say("user", "Book a table for 4 at Casa Lima on 12 April at 19:30, name Ortega.")
    items.call(
        "book_table",
        {"restaurant": "Casa Lima", "guests": 4},
        {"restaurant": "Casa Lima", "booking_id": "BK-2201", "status": "confirmed"},
    )
    found = read(items)
    asked, call = found.facts  # oldest first: what the user asked, then the call
    assert call.text == "book_table(Casa Lima, 4): BK-2201, confirmed"
    assert asked.speaker == "User asked" and asked.text.startswith("User asked: ")
    assert "12 April at 19:30" in asked.values and "Ortega" in asked.values
    assert found.objective is None  # done: its calls followed
    # The call's line says Casa Lima: the summary's ask says only what no call did.
    lines = summarize(items.items).splitlines()
    assert "- book_table(Casa Lima, 4): BK-2201, confirmed" in lines
    (ask,) = [line for line in lines if line.startswith("- User asked: ")]
    assert "Casa Lima" not in ask and "12 April at 19:30" in ask and "Ortega" in ask


def test_what_is_only_mentioned_is_kept_for_its_exact_values() -> None:
    # Too short to be a statement: what it names is kept as mentioned, if one is exact.
    (mentioned,) = read(Talk().say("user", "Flight TP13 Oslo.")).facts
    assert mentioned.text == "User mentioned: TP13 Oslo"  # the name beside the value
    assert not read(Talk().say("user", "Maybe Nebraska.")).facts  # a name alone says little


def test_what_a_task_turn_stated_with_a_cue_stays_a_fact() -> None:
    items = Talk().say(
        "user", "I prefer aisle seats. Book me on flight TP1352 to Funchal on 12 April."
    )
    items.call("book_flight", {"flight": "TP1352"}, {"pnr": "QX4K7L", "seat": "14C"})
    found = read(items).facts
    stated = [fact for fact in found if fact.stated == "preference"]
    assert [fact.text for fact in stated] == ["User: I prefer aisle seats."]
    (asked,) = [fact for fact in found if fact.speaker == "User asked"]
    assert "Funchal" in asked.values and "12 April" in asked.values
    assert not any("Book me" in fact.text for fact in found)  # the task itself: its lines


def test_a_call_and_its_output_become_one_line_whatever_the_tool_is_called() -> None:
    items = Talk().call(
        "zz_fetch_v2", {"ref": "K-19"}, {"state": "archived", "owner": "Haruto", "size": 2048}
    )
    (fact,) = read(items).facts
    assert fact.text == "zz_fetch_v2(K-19): archived, Haruto, 2048"
    assert fact.values == ("archived", "Haruto", "2048") and fact.attribute == "call"


def test_a_newer_output_of_the_same_call_replaces_the_older_and_counts_the_fills() -> None:
    items = Talk()
    items.call("get_ticket", {"ticket": "OPS-310"}, {"status": "open", "owner": "Haruto"})
    items.call("get_ticket", {"ticket": "OPS-311"}, {"status": "open", "owner": "Lena"})
    items.call("get_ticket", {"ticket": "OPS-310"}, {"status": "closed", "owner": "Haruto"})
    found = read(items).facts
    assert [(fact.text, fact.repeats) for fact in found] == [
        ("get_ticket(OPS-311): open, Lena", 1),  # another call: another slot
        ("get_ticket(OPS-310): closed, Haruto", 2),
    ]


def test_low_priority_output_is_noise_and_reasoning_is_no_fact() -> None:
    items = Talk()
    items.note("healthcheck: 6 pods Running, 0 restarts", priority=Priority.LOW)
    items.reasoning("The user probably wants the cheaper plan; compare plan B-40 first.")
    assert texts(items) == []


def test_a_tool_output_without_a_call_is_about_the_question_it_answers() -> None:
    items = Talk().say("user", "What is the weather in Braga today?")
    items.note("17°C, cloudy, wind 9 km/h")
    found = read(items)
    (fact,) = found.facts
    assert fact.subject == "Braga" and fact.text == "Braga: 17°C, cloudy, wind 9 km/h"
    assert found.open_questions == () and found.objective is None


# -- questions and answers ---------------------------------------------------------------------


def test_a_question_answered_by_a_result_is_one_fact_neither_open_nor_the_objective() -> None:
    items = Talk().say("user", "Which gate does flight TP1352 leave from?")
    items.call("flight_status", {"flight": "TP1352"}, {"gate": "B32", "boarding": "14:05"})
    found = read(items)
    assert [fact.text for fact in found.facts if fact.attribute == "call"] == [
        "flight_status(TP1352): B32, 14:05"
    ]
    assert found.open_questions == () and found.objective is None
    assert not any("?" in fact.text for fact in found.facts)


def test_a_reply_that_only_repeats_the_result_adds_no_fact() -> None:
    items = Talk().say("user", "Which gate does flight TP1352 leave from?")
    items.call(
        "flight_status",
        {"flight": "TP1352"},
        {"flight": "TP1352", "gate": "B32", "boarding": "14:05"},
    )
    items.say("assistant", "TP1352 boards at 14:05 from gate B32.")
    found = read(items).facts
    assert [fact.text for fact in found if fact.attribute == "call"] == [
        "flight_status(TP1352): B32, 14:05"
    ]
    assert not [fact for fact in found if fact.speaker == "Assistant"]


def test_a_question_answered_by_a_reply_is_one_fact_in_the_repliers_words() -> None:
    items = Talk().say("user", "Where did you leave the spare keys?")
    items.say("assistant", "I left the spare keys with Marta at the office on Dover Street.")
    found = read(items)
    assert [fact.text for fact in found.facts] == [
        "Assistant: I left the spare keys with Marta at the office on Dover Street."
    ]
    assert found.open_questions == () and found.objective is None


def test_an_answer_about_a_named_subject_is_listed_under_it() -> None:
    items = Talk().say("user", "Where is order 3 now?")
    items.say("assistant", "It left the Leeds depot on Monday with DPD, due on 14 June.")
    (fact,) = read(items).facts
    assert fact.text == "Order 3: It left the Leeds depot on Monday with DPD, due on 14 June."
    assert fact.subject == "order 3" and fact.speaker == ""


def test_a_question_the_conversation_moved_on_from_is_open_and_the_last_is_the_objective() -> None:
    items = Talk()
    items.say("user", "Does the vendor portal support SSO?")
    items.say("user", "Check the nightly backup of orders-db first.")
    items.say("user", "Who owns the billing runbook now?")
    found = read(items)
    assert [q.text for q in found.open_questions] == ["Does the vendor portal support SSO?"]
    assert all(q.kind == QUESTION for q in found.open_questions)
    assert found.objective == "Who owns the billing runbook now?"


def test_a_carried_question_is_answered_by_the_next_items() -> None:
    items = Talk().call("lookup_order", {"order_id": "A-1042"}, "in transit via DHL, due 14 June")
    found = read(items, objective="Where is order A-1042?")
    assert found.objective is None
    assert [fact.text for fact in found.facts] == [
        "lookup_order(A-1042): in transit via DHL, due 14 June"
    ]


def test_an_instruction_is_the_objective_not_a_fact() -> None:
    found = read(Talk().say("user", "Please convert the quarterly report for Q3 to PDF."))
    assert found.facts == ()
    assert found.objective == "Please convert the quarterly report for Q3 to PDF."


# -- statements ------------------------------------------------------------------------------


def test_a_users_turn_is_one_line_of_what_it_says() -> None:
    items = Talk().say(
        "user",
        "I prefer pytest. My laptop is a ThinkPad X1 from 2021. We moved to Braga in 2019. Hi!",
    )
    (fact,) = read(items).facts
    assert fact.text == (
        "User: I prefer pytest. My laptop is a ThinkPad X1 from 2021. We moved to Braga in 2019."
    )
    assert fact.stated == "preference"  # what it stated with a cue names the line


def test_every_statement_keeps_each_user_statement_as_its_own_fact() -> None:
    items = Talk().say(
        "user",
        "I prefer pytest. My laptop is a ThinkPad X1 from 2021. We moved to Braga in 2019. "
        "Hi! Is that all fine?",
    )
    items.say("user", "The weather was nice.")
    found = read(items, every_statement=True).facts
    assert [(fact.text, fact.stated) for fact in found] == [
        ("User: I prefer pytest.", "preference"),
        ("User: My laptop is a ThinkPad X1 from 2021.", "user"),
        ("User: We moved to Braga in 2019.", "user"),
        ("User: The weather was nice.", "user"),  # says little, and is still the user's
    ]


def test_a_statement_in_any_script_is_kept_like_a_latin_one() -> None:
    items = Talk()
    items.say("user", "Моя сестра Ирина живёт в Казани с 2018 года.")
    items.say("user", "我女儿叫小雨，她对花生过敏。")
    items.say("user", "Mi hermano Pablo trabaja en Valencia desde marzo.")
    assert texts(items) == [
        "User: Моя сестра Ирина живёт в Казани с 2018 года.",
        "User: 我女儿叫小雨，她对花生过敏。",
        "User: Mi hermano Pablo trabaja en Valencia desde marzo.",
    ]
    assert {fact.stated for fact in read(items).facts} == {"identity"}


def test_greetings_and_acknowledgements_are_no_facts() -> None:
    items = Talk()
    for role, said in [
        ("user", "Hello!"),
        ("assistant", "Hi there, how can I help?"),
        ("user", "Thanks a lot!"),
        ("user", "Спасибо!"),
        ("user", "好的，谢谢"),
        ("user", "ok"),
    ]:
        items.say(role, said)
    found = read(items, every_statement=True)
    assert found.facts == () and found.open_questions == ()


def test_facts_come_oldest_first() -> None:
    items = Talk()
    items.say("user", "My sister Irina lives in Porto near the Bolhão market.")
    items.say("assistant", "The Bolhão market reopened in 2022 after four years of works.")
    items.say("user", "Irina runs a bakery called Pão Quente on Rua Formosa.")
    seqs = [fact.seqs for fact in read(items).facts]
    assert seqs == sorted(seqs) == [(1,), (2,), (3,)]


def test_a_fact_said_again_is_kept_once() -> None:
    items = Talk()
    items.say("user", "My sister Irina lives in Porto near the Bolhão market.")
    items.say("assistant", "Noted, thanks.")
    items.say("user", "my sister Irina lives in Porto, near the Bolhão market!")
    assert len(read(items).facts) == 1


def test_a_long_sentence_is_clipped_to_a_facts_length() -> None:
    short = "The van from the Leeds depot brought 14 boxes of tiles for the upstairs bathroom."
    (fact,) = read(Talk().say("user", short)).facts
    assert fact.text == f"User: {short}"
    rambling = " ".join(["We carried the 14 boxes of tiles from the van up to the flat"] * 5) + "."
    (cut,) = read(Talk().say("user", rambling)).facts
    assert cut.text.endswith(" ...")
    assert len(cut.text.split()) == MAX_FACT_WORDS + 1


# -- rules and decisions -----------------------------------------------------------------------


def test_a_users_rule_is_a_constraint_and_a_decision_item_a_decision() -> None:
    items = Talk()
    items.say("user", "Never restart the payments service during business hours.")
    items.say("developer", "Rolled the fraud service back to v2.30.4 after the incident.")
    items.add("assistant", "Chose the EU-West region for the replica.", kind=MemoryKind.DECISION)
    found = sorted(read(items).facts, key=lambda fact: fact.seqs)
    assert [(fact.kind, fact.stated, fact.text) for fact in found] == [
        (CONSTRAINT, CONSTRAINT, "Never restart the payments service during business hours."),
        (DECISION, DECISION, "Rolled the fraud service back to v2.30.4 after the incident."),
        (DECISION, DECISION, "Chose the EU-West region for the replica."),
    ]
    # Set down on purpose: each outweighs the same words said in passing by its kind's weight.
    for fact in found:
        plain = make_fact(fact.text)
        assert fact.weight - plain.weight == pytest.approx(KIND_WEIGHT[fact.kind])
        assert KIND_WEIGHT[fact.kind] > 0


def test_extract_facts_is_the_facts_of_extract() -> None:
    items = Talk().say("user", "My locker code is 4512, locker B7 on floor two.")
    assert extract_facts(items.items) == list(read(items).facts)


# -- the list that keeps each fact once --------------------------------------------------------


def test_a_fact_list_skips_repeats_and_lets_the_newest_fill_a_slot() -> None:
    facts = FactList()
    assert facts.add(make_fact("Order 7: shipped", subject="order 7", attribute="track", seqs=(1,)))
    assert facts.add(
        make_fact("Order 7: delivered", subject="order 7", attribute="track", seqs=(5,))
    )
    assert [(f.text, f.repeats) for f in facts.facts] == [("Order 7: delivered", 2)]
    assert not facts.add(make_fact("order 7, delivered"))  # the same words again
    assert facts.add(make_fact("Order 8: delivered", subject="order 8", attribute="track"))
    assert len(facts.facts) == 2


def test_the_lines_of_one_output_share_their_slot() -> None:
    facts = FactList()
    for part in ("a, b", "c, d"):
        fact = make_fact(
            f"dump(X-1): {part}", subject="dump(X-1)", attribute="call", seqs=(4,),
            values=tuple(part.split(", ")),
        )  # fmt: skip
        assert facts.add(fact)
    assert [fact.text for fact in facts.facts] == ["dump(X-1): a, b", "dump(X-1): c, d"]


def test_a_fact_read_back_from_a_summary_is_a_repeat_only_when_it_is_the_same() -> None:
    facts = FactList()
    assert facts.add(make_fact("Ana: We painted the hallway green and the kitchen blue."))
    smaller = make_fact("Ana: We painted the hallway green.")
    assert not facts.add(smaller)  # its words are all in a fact before it
    # A summary lists facts by section and speaker, not as said: only the same fact again
    # is a repeat when reading one back.
    assert facts.add(smaller, read_back=True)
    assert not facts.add(make_fact("Ana: we painted the hallway green!"), read_back=True)


def test_a_fact_never_holds_the_speaker_separator_as_a_word() -> None:
    fact = make_fact("User: Cities I like | Berlin | Paris", speaker="User")
    assert "|" not in fact.text.split() and fact.text == "User: Cities I like / Berlin / Paris"


async def test_the_offline_extractor_proposes_every_statement_and_no_open_question() -> None:
    items = Talk()
    items.say("user", "Does the gym near Rua Nova open on Sundays?")
    items.say("user", "I prefer swimming in the morning. My coach is called Lena.")
    items.say("assistant", "Sure.")
    extractor = OfflineExtractor()
    proposed = await extractor(items.items)
    assert [fact.text for fact in proposed] == [
        "User: I prefer swimming in the morning.",
        "User: My coach is called Lena.",
    ]
    assert await extractor(items.items, max_tokens=0, count_tokens=len) == proposed  # the same
    assert extractor.name == "extractive"
