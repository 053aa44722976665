"""Who said a fact: the item's role, or a transcript's name when that name opens enough of
the session's messages (:func:`memstore.extraction.speakers.transcript_speakers`)."""

from __future__ import annotations

import pytest
from talk import Talk, read

from memstore.extraction.speakers import (
    MIN_TRANSCRIPT_TURNS,
    ROLE_SPEAKERS,
    transcript_speakers,
)


def test_a_facts_speaker_is_its_items_role() -> None:
    items = Talk()
    items.say("user", "I repotted the lemon tree into a 40 litre terracotta pot.")
    items.say("assistant", "The Almeida garden centre on Rua Verde sells citrus feed for 9 euros.")
    found = sorted(read(items).facts, key=lambda fact: fact.seqs)
    assert [(fact.seqs, fact.speaker, fact.text.split(":")[0]) for fact in found] == [
        ((1,), "User", "User"),
        ((2,), "Assistant", "Assistant"),
    ]
    assert ROLE_SPEAKERS["user"] == "User" and ROLE_SPEAKERS["assistant"] == "Assistant"


def transcript(turns: int) -> Talk:
    items = Talk()
    for n in range(turns):
        items.say("user", f"Rosa: I repotted {n + 2} ferns on the balcony at Rua Nova.")
        items.say("assistant", f"Tomas: The nursery on Elm Road sells {n + 5} kinds of moss.")
    return items


def test_a_transcripts_names_are_its_speakers_from_three_turns() -> None:
    assert MIN_TRANSCRIPT_TURNS == 3
    items = transcript(3)
    assert transcript_speakers(items.items) == {"Rosa", "Tomas"}
    found = read(items).facts
    assert {fact.speaker for fact in found} == {"Rosa", "Tomas"}
    assert all(fact.text.startswith(("Rosa: I repotted", "Tomas: The nursery")) for fact in found)


def test_two_turns_are_not_yet_a_transcript() -> None:
    items = transcript(2)
    assert transcript_speakers(items.items) == set()
    found = read(items).facts
    assert {fact.speaker for fact in found} == {"User", "Assistant"}
    assert any(fact.text.startswith("User: Rosa: I repotted") for fact in found)  # text kept


def test_a_name_a_previous_summary_gave_is_a_speaker_from_its_first_turn() -> None:
    items = Talk().say("user", "Rosa: I moved the ferns indoors before the frost on Friday.")
    assert transcript_speakers(items.items) == set()
    assert transcript_speakers(items.items, known=["Rosa"]) == {"Rosa"}
    (fact,) = read(items, speakers=["Rosa"]).facts
    assert fact.speaker == "Rosa" and fact.text.startswith("Rosa: I moved the ferns")


@pytest.mark.parametrize("label", ["Error", "Note", "LGTM", "Update"])
def test_a_label_that_opens_a_line_or_two_is_text(label: str) -> None:
    items = Talk()
    items.say("user", f"{label}: the deploy of build 7731 failed on staging with exit code 137.")
    items.say("user", f"{label}: retry 2 of build 7731 failed the same way on node 4.")
    assert transcript_speakers(items.items) == set()
    found = read(items).facts
    assert found and all(fact.speaker == "User" for fact in found)
    assert all(fact.text.startswith(f"User: {label}: ") for fact in found)


def test_only_messages_count_towards_a_transcript() -> None:
    items = Talk()
    for n in range(4):
        items.note(f"Status: queue {n} drained at 0{n}:00, 0 jobs waiting.")
    assert transcript_speakers(items.items) == set()
