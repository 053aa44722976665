"""Consolidation's rules, pure (:mod:`memstore.extraction.slots`): a fact's slot, the budget
of a conversation, and each fact's fate decided before any write."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from memstore import WordEstimator
from memstore.core.consolidation_report import OVER_BUDGET, SKIP, SUPERSEDE, WRITE
from memstore.extraction.fact_list import Fact, make_fact
from memstore.extraction.slots import (
    ALREADY_CONSIDERED,
    ALREADY_KNOWN,
    ALREADY_RECORDED,
    ENTRY_SHARE,
    FACT_PREFIX,
    LATER_IN_RUN,
    MAX_SLOT_CHARS,
    OLDER,
    PERSON_WROTE,
    SHORT_CONVERSATION_TOKENS,
    SlotState,
    budget_for,
    decide,
    entry_cost,
    fact_digest,
    fact_slot,
    normalized_text,
    provenance,
    said_on_text,
    slot_key,
)

COUNT = WordEstimator().count
SOURCE = {"session": "s1", "seqs": [1], "said_on": "2026-03-02"}


def user_fact(text: str, seq: int, stated: str = "user", said_on: str = "2 March 2026") -> Fact:
    return make_fact(
        f"User: {text}", subject="User", seqs=(seq,), said_on=said_on, stated=stated, speaker="User"
    )


def slotted(text: str, seq: int, said_on: str = "2 March 2026") -> Fact:
    return make_fact(text, subject="user", attribute="home city", seqs=(seq,), said_on=said_on)


# -- slots ------------------------------------------------------------------------------------


def test_a_named_attribute_is_the_slot() -> None:
    assert slot_key("Order 3", "Home City") == "fact:order-3:home-city"
    assert fact_slot(slotted("I live in Braga.", 1)) == "fact:user:home-city"


def test_a_statement_is_its_own_slot_whatever_its_punctuation() -> None:
    said = user_fact("I adopted a beagle named Biscuit in January.", 1)
    again = user_fact("i adopted a beagle, named Biscuit, in January!", 2)
    assert fact_slot(said) == fact_slot(again)
    assert re.fullmatch(r"fact:user:adopted-beagle~[0-9a-f]{6}", fact_slot(said))
    other = user_fact("I adopted a beagle named Pixel in June.", 3)
    assert fact_slot(other) != fact_slot(said)


def test_an_identity_fact_restated_with_a_new_value_keeps_its_slot() -> None:
    said = replace(user_fact("My passport number is XQ7731ZKJ.", 1), stated="identity")
    renewed = replace(user_fact("My passport number is now PL5520RRT.", 2), stated="identity")
    assert fact_slot(said) == fact_slot(renewed)  # what it is about, not its value
    receipt = user_fact("Receipt R0001 was for the lamp.", 3)
    other = user_fact("Receipt R0002 was for the lamp.", 4)
    assert fact_slot(receipt) != fact_slot(other)  # any other statement: its own slot


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("我女儿叫小雨，她对花生过敏。", "我住在杭州，在一家银行工作。"),
        ("Моя сестра Ирина живёт в Казани.", "Я работаю врачом в больнице."),
        ("私の娘は花子です。", "私は大阪に住んでいます。"),
    ],
    ids=["zh", "ru", "ja"],
)
def test_facts_in_any_script_get_slots_of_their_own(first: str, second: str) -> None:
    keys = {fact_slot(user_fact(first, 1)), fact_slot(user_fact(second, 2))}
    assert len(keys) == 2
    assert all(key.startswith(f"{FACT_PREFIX}user:") and key != "fact:user:_~" for key in keys)


def test_a_long_slot_is_clipped_and_kept_unique() -> None:
    one, two = slot_key("project " + "x" * 200, "a"), slot_key("project " + "x" * 200, "b")
    assert len(one) <= len(FACT_PREFIX) + MAX_SLOT_CHARS and one != two


def test_a_facts_text_compares_without_case_and_white_space() -> None:
    assert normalized_text("  I live in  Braga. ") == normalized_text("i live in braga.")
    assert fact_digest("I live in Braga.") == fact_digest("i  LIVE in braga.")
    assert said_on_text("8 May 2023") == "2023-05-08" and said_on_text(None) is None


# -- the budget ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "budget"),
    [(300, 300), (SHORT_CONVERSATION_TOKENS, 2000), (6000, 2000), (8000, 2000), (20_000, 5000)],
)
def test_a_conversations_budget(tokens: int, budget: int) -> None:
    assert budget_for(tokens) == budget
    if tokens > 8000:
        assert budget_for(tokens) == int(tokens * ENTRY_SHARE)


# -- each fact's fate --------------------------------------------------------------------------


def test_of_two_facts_of_one_run_about_one_slot_the_later_wins() -> None:
    older, newer = slotted("I live in Braga.", 1), slotted("I moved to Porto.", 4)
    decisions = decide([newer, older], {}, budget=100, count=COUNT)
    assert [(d.text, d.action, d.reason) for d in decisions] == [
        ("I moved to Porto.", WRITE, None),
        ("I live in Braga.", SKIP, LATER_IN_RUN),
    ]


def test_people_win() -> None:
    state = SlotState(version=2, value="Lisbon (set by hand)", source=None)
    (decision,) = decide([slotted("I live in Braga.", 1)], {"fact:user:home-city": state},
                         budget=100, count=COUNT)  # fmt: skip
    assert (decision.action, decision.reason) == (SKIP, PERSON_WROTE)


def test_nothing_twice() -> None:
    fact = slotted("I live in Braga.", 1)
    key = fact_slot(fact)
    live = SlotState(version=1, value="i live in  braga.", source=SOURCE)
    seen = SlotState(version=2, value="I moved to Porto.", source=SOURCE,
                     seen=frozenset({"i live in braga.", "i moved to porto."}))  # fmt: skip
    considered = SlotState(considered=frozenset({fact_digest(fact.text)}))
    for state, reason in ((live, ALREADY_KNOWN), (seen, ALREADY_RECORDED),
                          (considered, ALREADY_CONSIDERED)):  # fmt: skip
        (decision,) = decide([fact], {key: state}, budget=100, count=COUNT)
        assert (decision.action, decision.reason) == (SKIP, reason)


def test_a_newer_fact_supersedes_and_an_older_one_is_skipped() -> None:
    state = SlotState(version=1, value="I live in Braga.", source=SOURCE)
    newer = slotted("I moved to Porto.", 9, said_on="5 March 2026")
    (decision,) = decide([newer], {"fact:user:home-city": state}, budget=100, count=COUNT)
    assert (decision.action, decision.replaced, decision.expected_version) == (
        SUPERSEDE,
        "I live in Braga.",
        1,
    )
    older = slotted("I lived in Coimbra.", 2, said_on="1 March 2026")
    (decision,) = decide([older], {"fact:user:home-city": state}, budget=100, count=COUNT)
    assert (decision.action, decision.reason) == (SKIP, OLDER)


@pytest.mark.parametrize("stated", ["preference", "identity", "decision", "constraint"])
def test_what_the_user_stated_is_written_whatever_the_budget(stated: str) -> None:
    fact = user_fact("I prefer pytest over unittest in every repository.", 1, stated)
    (decision,) = decide([fact], {}, budget=0, count=COUNT)
    assert decision.action == WRITE


def test_a_short_conversation_writes_every_statement_of_the_users() -> None:
    said = [
        "My locker is on floor two near the lifts.",
        "The gym opens at seven on weekdays.",
        "Our team lunch moved to the rooftop terrace.",
        "The parking garage closes early on Fridays.",
    ]
    facts = [user_fact(text, n) for n, text in enumerate(said, 1)]
    short = decide(facts, {}, budget=0, count=COUNT, short=True)
    assert all(d.action == WRITE for d in short)
    long = decide(facts, {}, budget=0, count=COUNT, short=False)
    assert {d.reason for d in long} == {OVER_BUDGET}
    someone_else = replace(facts[0], stated="")  # not the user's: the budget decides
    (decision,) = decide([someone_else], {}, budget=0, count=COUNT, short=True)
    assert decision.reason == OVER_BUDGET


def test_within_a_budget_facts_on_different_things_go_before_repeats() -> None:
    facts = [
        user_fact("My cousin Irina moved to Porto, she works as a nurse.", 1),
        user_fact("My cousin Irina, a nurse, moved to Porto in spring.", 2),  # mostly the same
        user_fact("I adopted a beagle named Biscuit.", 3),
    ]
    costs = [entry_cost(fact_slot(f), f.text, COUNT) for f in facts]
    decisions = decide(facts, {}, budget=costs[0] + costs[2], count=COUNT)
    written = {d.text for d in decisions if d.writes}
    assert facts[2].text in written and len(written) == 2  # Biscuit, and Irina once
    assert [d.reason for d in decisions if not d.writes] == [OVER_BUDGET]
    assert sum(d.tokens for d in decisions if d.writes) <= costs[0] + costs[2]


def test_what_writes_comes_first_and_a_decision_says_what_it_costs() -> None:
    facts = [user_fact("I live in Braga near the cathedral.", 1, "identity"),
             user_fact("The weather was nice on the walk.", 2)]  # fmt: skip
    decisions = decide(facts, {}, budget=0, count=COUNT)
    assert [d.writes for d in decisions] == [True, False]
    first = decisions[0]
    assert first.tokens == entry_cost(first.key, first.text, COUNT)
    assert first.said_on == "2026-03-02" and first.seqs == (1,)


def test_an_entrys_provenance() -> None:
    (decision,) = decide([slotted("I live in Braga.", 3)], {}, budget=100, count=COUNT)
    assert provenance("s1", decision, run=2, compaction=None, extractor="extractive") == {
        "session": "s1",
        "seqs": [3],
        "compaction": None,
        "extractor": "extractive",
        "run": 2,
        "said_on": "2026-03-02",
    }
