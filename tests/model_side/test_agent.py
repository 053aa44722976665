"""The Responses API agent, with the real ``openai`` client against a stand-in model.

Every request the agent makes is recorded by the stand-in and asserted: instructions, the
input's roles and labels, the tools, the second turn carrying the first, tool calls executed
and their results sent back; and the failure paths (HTTP 500, timeout, malformed reply).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI

from memstore import (
    CompactionReport,
    MemoryKind,
    MemoryLimits,
    MemoryStore,
    WordEstimator,
)
from memstore.errors import ConfigurationError, ModelCallError, ToolLoopError
from memstore.extraction.summarizer import ExtractiveSummarizer
from memstore.model_side.agent import DEFAULT_INSTRUCTIONS, Agent, Tool
from memstore.model_side.stand_in_server import (
    Reply,
    StandInModel,
    error_reply,
    extractive_brain,
    is_summary_request,
    text_reply,
    tool_call_reply,
)

SCOPE = "user:alice"
MODEL = "gpt-agent-test"


def say(text: str) -> Any:
    return lambda request: text_reply(request, text)


def call(*calls: tuple[str, dict[str, Any]]) -> Any:
    return lambda request: tool_call_reply(request, *calls)


async def make_agent(
    store: MemoryStore,
    standin: StandInModel,
    session: str = "chat-1",
    *,
    limits: MemoryLimits | None = None,
    **options: Any,
) -> Agent:
    memory = store.session(
        session,
        limits=limits or MemoryLimits(hard=1500, target=900, keep_recent=4),
        estimator=WordEstimator(),
        summarizer=ExtractiveSummarizer(),
        ltm_scopes=[SCOPE],
    )
    return Agent(standin.client(), memory, model=MODEL, **options)


def roles(body: dict[str, Any]) -> list[str]:
    return [item.get("role") or item["type"] for item in body["input"]]


async def test_first_turn_request_and_what_memory_keeps(store: MemoryStore) -> None:
    standin = StandInModel()
    standin.queue(say("Hello Alice."))
    agent = await make_agent(store, standin)
    result = await agent.run_turn("Hi, I am Alice.")
    assert result.reply == "Hello Alice." and result.requests == 1
    assert result.usage is not None and result.usage["total_tokens"] > 0

    (body,) = standin.bodies
    assert body["model"] == MODEL
    assert body["instructions"] == DEFAULT_INSTRUCTIONS
    assert body["store"] is False
    assert body["input"] == [{"role": "user", "content": "Hi, I am Alice."}]
    assert [t["name"] for t in body["tools"]] == ["remember", "recall", "search_memory"]
    remember = body["tools"][0]
    assert remember["type"] == "function"
    assert remember["parameters"]["required"] == ["key", "value"]
    assert "tool_choice" not in body

    items = await agent.memory.items()
    assert [(i.kind, i.content) for i in items] == [
        (MemoryKind.USER_MESSAGE, "Hi, I am Alice."),
        (MemoryKind.ASSISTANT_MESSAGE, "Hello Alice."),
    ]


async def test_the_second_turn_carries_the_first(store: MemoryStore) -> None:
    standin = StandInModel()
    standin.queue(say("Noted."), say("You said checkout."))
    agent = await make_agent(store, standin, instructions="Be terse.")
    await agent.run_turn("Investigate checkout latency.")
    await agent.run_turn("What did I ask?")
    second = standin.bodies[1]
    assert second["instructions"] == "Be terse."
    user, reply, question = second["input"]
    assert user == {"role": "user", "content": "Investigate checkout latency."}
    # The reply comes back as the output item the server sent, verbatim.
    assert reply["type"] == "message" and reply["role"] == "assistant"
    assert reply["content"][0]["text"] == "Noted." and reply["id"].startswith("msg_")
    assert question == {"role": "user", "content": "What did I ask?"}


async def test_a_looping_model_is_stopped(store: MemoryStore) -> None:
    standin = StandInModel(lambda r: tool_call_reply(r, ("recall", {"key": "x"})))
    agent = await make_agent(store, standin, max_tool_rounds=2)
    with pytest.raises(ToolLoopError, match="after 2 rounds"):
        await agent.run_turn("loop")
    assert len(standin.bodies) == 3
    assert [b.get("tool_choice") for b in standin.bodies] == [None, None, "none"]
    kinds = [i.kind for i in await agent.memory.items()]
    # The user's message and the two executed calls (with their outputs); no reply.
    call_and_output = [MemoryKind.ASSISTANT_MESSAGE, MemoryKind.TOOL_OBSERVATION]
    assert kinds == [MemoryKind.USER_MESSAGE, *call_and_output, *call_and_output]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (error_reply(500, "model overloaded"), "HTTP 500: model overloaded"),
        (Reply(b"not json at all"), "malformed reply"),
        (Reply({"id": "x"}), "malformed reply"),
        (say("   "), "empty reply"),
    ],
)
async def test_model_failures_raise_model_call_error(
    store: MemoryStore, reply: Any, expected: str
) -> None:
    standin = StandInModel()
    standin.queue(reply)
    agent = await make_agent(store, standin)
    with pytest.raises(ModelCallError, match=expected) as caught:
        await agent.run_turn("hello?")
    assert "\n" not in str(caught.value)
    if "HTTP" in expected:
        assert caught.value.status_code == 500
    assert [i.kind for i in await agent.memory.items()] == [MemoryKind.USER_MESSAGE]


async def test_timeout_over_a_real_socket(store: MemoryStore) -> None:
    standin = StandInModel()
    standin.queue(Reply({}, delay=3.0))
    with standin.serve() as base_url:
        client = AsyncOpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
        memory = store.session("t", estimator=WordEstimator(), ltm_scopes=[SCOPE])
        agent = Agent(client, memory, model=MODEL, timeout=0.3)
        with pytest.raises(ModelCallError, match=r"did not answer within 0.3s"):
            await agent.run_turn("hello?")
        await client.close()


async def test_compactions_reach_the_observer_and_input_stays_bounded(
    store: MemoryStore,
) -> None:
    limits = MemoryLimits(hard=120, target=80, keep_recent=2)
    standin = StandInModel(lambda r: text_reply(r, "Understood, noted that constraint for later."))
    reports: list[CompactionReport] = []
    agent = await make_agent(store, standin, limits=limits, on_compaction=reports.append)
    for n in range(12):
        await agent.run_turn(f"Turn {n}: never deploy service-{n} on Fridays without a rollback.")
    assert reports and [r.compaction_count for r in reports] == list(range(1, len(reports) + 1))
    count = WordEstimator().count
    for body in standin.bodies:
        compact = {"ensure_ascii": False, "separators": (",", ":")}
        tokens = [
            count(json.dumps(i, **compact) if "type" in i else i["content"]) for i in body["input"]
        ]
        assert sum(t + 4 for t in tokens) <= limits.hard + 12
    summary = await agent.memory.summary()
    # The summary fits the room the target leaves: whole constraints, the newest kept.
    assert summary is not None and summary.startswith("Constraints:\n")
    # The day the facts were said on closes the summary (their "today" and "tomorrow").
    *lines, day = summary.splitlines()[1:]
    assert day.startswith("Date: ")
    assert lines and all(
        line.startswith("- Turn ") and line.endswith("without a rollback.") for line in lines
    )
    assert "service-8 on Fridays" in summary and "service-0 on Fridays" not in summary


async def test_openai_summarizer_by_default_and_memories_across_sessions(
    store: MemoryStore,
) -> None:
    summaries = extractive_brain()

    def brain(request: dict[str, Any]) -> Reply:
        if is_summary_request(request):
            return summaries(request)
        return text_reply(request, "ok")

    standin = StandInModel(brain)
    standin.queue(call(("remember", {"key": "tone", "value": "formal"})), say("Saved."))
    window = {"context_window": 16_000}
    first = await Agent.open(
        store, "session-a", client=standin.client(), model=MODEL, scope=SCOPE, **window
    )
    assert first.memory.summarizer.name == f"openai:{MODEL}"  # type: ignore[attr-defined]
    await first.run_turn("Please always answer formally.")

    second = await Agent.open(
        store, "session-b", client=standin.client(), model=MODEL, scope=SCOPE, **window
    )
    await second.run_turn("Hello.")
    body = standin.bodies[-1]
    assert roles(body) == ["developer", "user"]
    assert '"key":"tone","value":"formal"' in body["input"][0]["content"]


async def test_open_keeps_an_existing_sessions_estimator(store: MemoryStore) -> None:
    await store.session("old", estimator=WordEstimator()).add("user", "hello there")
    agent = await Agent.open(store, "old", client=StandInModel().client(), model=MODEL)
    assert agent.memory.estimator.name == WordEstimator().name
    assert agent.scope == "global"


async def test_open_with_recall_gives_the_session_a_recall_budget(store: MemoryStore) -> None:
    limits = MemoryLimits(hard=400, target=250, keep_recent=2)
    agent = await Agent.open(
        store, "r", client=StandInModel().client(), model=MODEL, limits=limits, recall=True
    )
    assert agent.memory.recall_budget == 150
    plain = await Agent.open(store, "p", client=StandInModel().client(), model="gpt-4o-mini")
    assert plain.memory.recall_budget is None
    assert "search_memory" in plain.tools


async def test_bad_configuration_is_refused(store: MemoryStore) -> None:
    async def handler() -> str:
        return ""

    with pytest.raises(ConfigurationError, match="name"):
        Tool("bad name!", "", {"type": "object"}, handler)
    with pytest.raises(ConfigurationError, match="parameters"):
        Tool("ok", "", {"type": "string"}, handler)
    with pytest.raises(ConfigurationError, match="record_as"):
        Tool("ok", "", {"type": "object"}, handler, record_as=MemoryKind.USER_MESSAGE)
    standin = StandInModel()
    duplicate = Tool("recall", "", {"type": "object"}, handler)
    with pytest.raises(ConfigurationError, match="two tools"):
        await make_agent(store, standin, tools=[duplicate])
    with pytest.raises(ConfigurationError, match="scope"):
        await make_agent(store, standin, scope="user:bob")
    with pytest.raises(ConfigurationError, match="max_tool_rounds"):
        await make_agent(store, standin, max_tool_rounds=0)


async def test_reasoning_items_go_back_verbatim_with_store_false(store: MemoryStore) -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user wants the recall key."}],
        "encrypted_content": "gAAAAB-opaque==",
    }

    def think_then_call(request: dict[str, Any]) -> Reply:
        reply = tool_call_reply(request, ("recall", {"key": "editor"}))
        reply.body["output"].insert(0, reasoning)
        return reply

    standin = StandInModel()
    standin.queue(think_then_call, say("You use vim."), say("ok"))
    agent = await make_agent(store, standin)
    await agent.run_turn("Which editor?")
    await agent.run_turn("Thanks.")
    first, second, third = standin.bodies
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    assert second["input"][-3]["type"] == "reasoning"  # in flight, before its call
    carried = [i for i in third["input"] if i.get("type") == "reasoning"]
    assert carried == [reasoning]  # stored and sent back byte for byte, blob included
    stored = next(i for i in await agent.memory.items() if i.item_type == "reasoning")
    assert stored.content == "The user wants the recall key."  # what summaries read


async def test_open_fits_the_limits_to_the_instructions_and_tools(store: MemoryStore) -> None:
    async def lookup(ticket: str) -> str:
        return ticket

    schema = {"type": "object", "properties": {"ticket": {"type": "string"}}}
    tools = (Tool(f"lookup_{n}", "Look a ticket up. " * 20, schema, lookup) for n in range(3))
    agent = await Agent.open(
        store, "fit", client=StandInModel().client(), model=MODEL, estimator=WordEstimator(),
        context_window=4_000, max_output_tokens=500, tools=tools, instructions="Be brief.",
    )  # fmt: skip
    assert sorted(agent.tools) == ["lookup_0", "lookup_1", "lookup_2", "recall", "remember",
                                   "search_memory"]  # fmt: skip
    expected = MemoryLimits.for_model(
        context_window=4_000,
        max_output_tokens=500,
        instructions="Be brief.",
        tools=list(agent.tools.values()),
        estimator=WordEstimator(),
    )
    assert agent.memory.limits == expected
    assert agent.max_output_tokens == 500


async def test_end_consolidates_a_scoped_conversation(store: MemoryStore) -> None:
    standin = StandInModel()
    chatter = "That sounds lovely; tell me more whenever you like, I am happy to listen to it all."
    for _ in range(4):
        standin.queue(say(chatter))
    agent = await Agent.open(
        store,
        "trip",
        client=standin.client(),
        model=MODEL,
        scope=SCOPE,
        summarizer=ExtractiveSummarizer(),
        estimator=WordEstimator(),
        limits=MemoryLimits(hard=1500, target=900, keep_recent=4),
    )
    assert agent.memory.scope == SCOPE
    await agent.run_turn("My sister Maria moved to Lisbon and I am flying there on March 14.")
    assert (await store.session_info("trip")).scope == SCOPE
    for _ in range(3):
        await agent.run_turn("Nothing much else to say today, we just talked about the weather.")
    report = await agent.end()
    assert report is not None and report.number == 1 and report.written
    entries = await store.ltm.list(scope=SCOPE, prefix="fact:")
    assert entries and all(e.source and e.source["session"] == "trip" for e in entries)
    assert await agent.end() is not None  # a second end writes nothing
    assert len(await store.ltm.list(scope=SCOPE, prefix="fact:")) == len(entries)

    unscoped = await Agent.open(
        store, "plain", client=StandInModel().client(), model=MODEL, limits=MemoryLimits()
    )
    assert unscoped.memory.scope is None and await unscoped.end() is None
