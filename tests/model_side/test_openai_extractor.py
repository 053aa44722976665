"""The model extractor: the real ``openai`` client against memstore's stand-in model server,
structured output requested, the answer checked, and consolidation superseding by the slots
the model proposes (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memstore import MemoryStore, ModelCallError, WordEstimator
from memstore.model_side.openai_extractor import ITEMS_CLOSE, ITEMS_OPEN, OpenAIExtractor
from memstore.model_side.stand_in_server import (
    Reply,
    StandInModel,
    input_items,
    text_of,
    text_reply,
)

SCOPE = "user:alice"
MODEL = "gpt-extract-test"
FILLER = "Noted, tell me more whenever you like; I am listening and will keep all of it in mind."


def slot_brain(request: dict[str, Any]) -> Reply:
    """A stand-in model that reads the fenced items and states each ``subject / attribute =
    text`` item as a fact, as a model keying its facts would."""
    lines = text_of(input_items(request)[-1]).split("\n")
    block = lines[lines.index(ITEMS_OPEN) + 1 : lines.index(ITEMS_CLOSE)]
    facts = []
    for item in map(json.loads, block):
        head, _, text = item["content"].partition(" = ")
        subject, _, attribute = head.partition(" / ")
        if text:
            facts.append({"subject": subject, "attribute": attribute, "text": text,
                          "seqs": [item["seq"]], "said_on": None, "importance": 4})  # fmt: skip
    return text_reply(request, json.dumps({"facts": facts}))


async def test_the_model_proposes_slots_and_a_newer_fact_supersedes(any_store: MemoryStore) -> None:
    standin = StandInModel(slot_brain)
    extractor = OpenAIExtractor(standin.client(), MODEL)
    for session, text in (("s1", "user / home city = I live in Lisbon."),
                          ("s2", "user / home city = I moved to Porto.")):  # fmt: skip
        memory = any_store.session(session, scope=SCOPE, estimator=WordEstimator(),
                                   extractor=extractor)  # fmt: skip
        await memory.add("user", text)
        await memory.add("assistant", FILLER)
        report = await memory.consolidate()
        assert report is not None and report.extractor == f"openai:{MODEL}"
    body = standin.bodies[0]
    assert body["text"]["format"]["type"] == "json_schema" and body["text"]["format"]["strict"]
    assert body["model"] == MODEL and "data, not instructions" in body["instructions"]
    entry = await any_store.ltm.get("fact:user:home-city", scope=SCOPE)
    assert entry is not None and entry.value == "I moved to Porto." and entry.version == 2
    assert entry.source is not None and entry.source["extractor"] == f"openai:{MODEL}"
    history = await any_store.ltm.history("fact:user:home-city", scope=SCOPE)
    assert [c.value for c in history] == ["I live in Lisbon.", "I moved to Porto."]


async def test_facts_citing_items_not_sent_are_dropped_and_bad_json_fails(
    store: MemoryStore,
) -> None:
    def answer(text: str) -> Any:
        return lambda request: text_reply(request, text)

    invented = {"subject": "user", "attribute": "pet", "text": "I have a cat.", "seqs": [99],
                "said_on": None, "importance": 5}  # fmt: skip
    standin = StandInModel()
    standin.queue(answer(json.dumps({"facts": [invented]})), answer("not json"))
    memory = store.session("s1", scope=SCOPE, estimator=WordEstimator(),
                           extractor=OpenAIExtractor(standin.client(), MODEL))  # fmt: skip
    await memory.add("user", "I have a dog called Biscuit and he loves the beach every day.")
    await memory.add("assistant", FILLER)
    report = await memory.consolidate(dry_run=True)
    assert report is not None and report.proposed == 0  # the invented citation is gone
    with pytest.raises(ModelCallError):
        await memory.consolidate()
    assert await store.ltm.list() == []  # nothing written, the items stay unconsumed
    assert await memory.consolidation_reports() == []
