"""MemstoreHistory: what a pydantic-ai model is sent stays within the hard limit, compacted
with memstore's policy, while the conversation store keeps every message and the summaries;
another process resumes from the stored summary. Real offline agent runs (FunctionModel,
tools), stored with memstore's conversation store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_twins import keeps_added_messages

from memstore import MemoryItem, MemoryLimits, MemoryStore, WordEstimator
from memstore.adapters.pydantic_ai import dump_message
from memstore.adapters.pydantic_ai_history import MARK, memstore_summary
from memstore.core.conversation_units import message_units
from memstore.core.values import ITEM_OVERHEAD_TOKENS, SUMMARY_OVERHEAD_TOKENS
from memstore.pydantic_ai import MemstoreConversationStore, MemstoreHistory

LIMITS = MemoryLimits(hard=120, target=80, keep_recent=2)
#: Whether a run's conversation keeps the summary the processor added (pydantic-ai 2.78 does;
#: 2.68 keeps only the trimmed history, so there each run summarizes again).
KEEPS_SUMMARIES = keeps_added_messages()
WORDS = WordEstimator()


class Recorder:
    """A FunctionModel that calls the lookup tool at each prompt and answers its result,
    keeping every history it was sent."""

    def __init__(self) -> None:
        self.sent: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append(list(messages))
        if any(part.part_kind == "user-prompt" for part in messages[-1].parts):
            call = ToolCallPart(
                "lookup", {"order": len(self.sent)}, tool_call_id=f"c{len(self.sent)}"
            )
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(f"Order {len(self.sent)} shipped on Tuesday by sea.")])


class Summaries:
    """A summarizer that says what it folded, keeping every call."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str | None, list[MemoryItem]]] = []
        self.fail = fail

    async def __call__(self, previous: str | None, items: Sequence[MemoryItem]) -> str:
        self.calls.append((previous, list(items)))
        if self.fail:
            raise RuntimeError("the summarizer is down")
        return f"Summary {len(self.calls)}: {len(items)} older units about shipped orders."


def agent_with(history: MemstoreHistory, model: Recorder) -> Agent[None, str]:
    agent = Agent(
        FunctionModel(model),
        system_prompt="You track orders.",
        capabilities=[ProcessHistory(history)],
    )

    @agent.tool_plain
    def lookup(order: int) -> str:
        """Where an order is."""
        return f"order {order} is in the warehouse in Rotterdam waiting for the next ship"

    return agent


def sent_tokens(messages: list[ModelMessage]) -> int:
    """What memstore counts of a history it sent: the summary and the units after it."""
    body, summary = list(messages), None
    if body and (summary := memstore_summary(body[0])) is not None:
        body = body[1:]
    elif body and isinstance(body[0], ModelRequest):  # the system prompt is not counted
        rest = [p for p in body[0].parts if not isinstance(p, SystemPromptPart)]
        body = ([ModelRequest(parts=rest)] if rest else []) + body[1:]
    units = message_units([json.loads(dump_message(message)) for message in body])
    total = sum(WORDS.count(unit.text) + unit.media + ITEM_OVERHEAD_TOKENS for unit in units)
    return total + (0 if summary is None else WORDS.count(summary) + SUMMARY_OVERHEAD_TOKENS)


async def chat(store: MemstoreConversationStore, agent: Agent[None, str], turns: int) -> int:
    saved = 0
    for turn in range(turns):
        conversation = await store.load("chat") or Conversation(conversation_id="chat")
        result = await agent.run(
            f"Where is order {turn}? Please check it.", conversation=conversation
        )
        saved += len(await store.save(result))
    return saved


async def test_below_the_hard_limit_the_history_goes_as_it_is() -> None:
    history = MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=Summaries())
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart("hello")])
    ]
    assert await history(messages) is messages
    assert await history([]) == []


async def test_a_long_conversation_is_bounded_and_the_store_keeps_everything(
    any_store: MemoryStore,
) -> None:
    model, summaries = Recorder(), Summaries()
    agent = agent_with(MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=summaries), model)
    store = MemstoreConversationStore(any_store)
    saved = await chat(store, agent, turns=12)

    assert all(sent_tokens(sent) <= LIMITS.hard for sent in model.sent)
    assert len(summaries.calls) >= 3
    for sent in model.sent:
        assert isinstance(sent[0].parts[0], SystemPromptPart)  # the system prompt stays first
        calls = {p.tool_call_id for m in sent for p in m.parts if isinstance(p, ToolCallPart)}
        results = [p.tool_call_id for m in sent for p in m.parts if isinstance(p, ToolReturnPart)]
        assert set(results) <= calls  # no result without its call
    loaded = await store.load("chat")
    assert loaded is not None and len(loaded.messages) == saved
    stored = [m for m in loaded.messages if memstore_summary(m) is None]
    assert len(stored) == 12 * 4  # every prompt, call, result and answer
    summaries_stored = [m for m in loaded.messages if memstore_summary(m) is not None]
    if not KEEPS_SUMMARIES:
        assert summaries_stored == []
        return
    assert all(previous is not None for previous, _ in summaries.calls[1:])  # folded in
    assert len(summaries_stored) == len(summaries.calls)  # each compaction's summary, once
    part = next(p for p in summaries_stored[-1].parts if isinstance(p, CompactionPart))
    assert part.metadata is not None and part.metadata[MARK]["after_tokens"] <= LIMITS.target


async def test_another_process_resumes_from_the_stored_summary(any_store: MemoryStore) -> None:
    store = MemstoreConversationStore(any_store)
    first = Summaries()
    history = MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=first)
    await chat(store, agent_with(history, Recorder()), turns=6)
    conversation = await store.load("chat")
    assert conversation is not None and first.calls
    stored = [s for m in conversation.messages if (s := memstore_summary(m)) is not None]
    later, model = Summaries(), Recorder()  # another process: a new processor, nothing kept
    history = MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=later)
    await agent_with(history, model).run("And order 99?", conversation=conversation)
    if not KEEPS_SUMMARIES:  # no summary was stored: it summarizes the history afresh
        assert stored == [] and later.calls and later.calls[0][0] is None
        return
    # It starts from the newest stored summary: sends it, or folds what followed into it.
    resumed = memstore_summary(model.sent[0][0]) == stored[-1]
    folded = bool(later.calls) and later.calls[0][0] == stored[-1]
    assert resumed or folded
    assert all(previous is not None for previous, _ in later.calls)  # never from scratch


async def test_a_failing_summarizer_still_bounds_what_is_sent(any_store: MemoryStore) -> None:
    model, summaries = Recorder(), Summaries(fail=True)
    agent = agent_with(MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=summaries), model)
    store = MemstoreConversationStore(any_store)
    await chat(store, agent, turns=8)
    assert summaries.calls  # it was asked, failed, and the oldest units were evicted instead
    assert all(sent_tokens(sent) <= LIMITS.hard for sent in model.sent)


async def test_the_request_being_answered_always_goes() -> None:
    history = MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=Summaries())
    huge = "word " * 500
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("hello")]),
        ModelResponse(parts=[TextPart("hi")]),
        ModelRequest(parts=[UserPromptPart(huge)]),
    ]
    sent = await history(messages)
    assert sent[-1] is messages[-1]


@pytest.mark.parametrize("turns", [1, 5])
async def test_what_the_model_is_sent_keeps_the_newest_units_verbatim(turns: int) -> None:
    model = Recorder()
    history = MemstoreHistory(limits=LIMITS, estimator=WORDS, summarizer=Summaries())
    agent = agent_with(history, model)
    messages: list[ModelMessage] = []
    for turn in range(turns):
        result = await agent.run(f"Where is order {turn}?", message_history=messages)
        messages = result.all_messages()
    last = model.sent[-1]
    assert last[-1].parts[-1].part_kind == "tool-return"  # the result being answered
    assert any(
        isinstance(p, UserPromptPart) and f"order {turns - 1}?" in str(p.content)
        for m in last
        for p in m.parts
    )


def test_a_summary_is_found_only_when_memstore_wrote_it() -> None:
    ours = ModelRequest(parts=[CompactionPart("s", metadata={MARK: {}})])
    theirs = ModelRequest(parts=[CompactionPart("s")])
    assert memstore_summary(ours) == "s" and memstore_summary(theirs) is None
    assert memstore_summary(ModelResponse(parts=[TextPart("x")])) is None
