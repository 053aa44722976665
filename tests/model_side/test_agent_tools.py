"""The agent's tools (remember, recall, the application's own), with the real ``openai``
client against a stand-in model: each call runs, in order, and its result or error goes back
to the model as the next request's input."""

from __future__ import annotations

import json
from typing import Any

from test_agent import SCOPE, call, make_agent, roles, say

from memstore import MemoryKind, MemoryStore, Priority
from memstore.model_side.agent import Tool, check_arguments
from memstore.model_side.stand_in_server import Reply, StandInModel, tool_call_reply
from memstore.render.input import MEMORIES_OPEN


async def test_remember_runs_and_its_result_goes_back(store: MemoryStore) -> None:
    standin = StandInModel()
    standin.queue(
        call(("remember", {"key": "test_framework", "value": "pytest"})),
        say("I will use pytest."),
    )
    agent = await make_agent(store, standin)
    result = await agent.run_turn("From now on I prefer pytest.")
    assert result.reply == "I will use pytest." and result.requests == 2
    assert [c.name for c in result.tool_calls] == ["remember"]

    entry = await store.ltm.get("test_framework", scope=SCOPE)
    assert entry is not None and entry.value == "pytest" and entry.version == 1

    first, second = standin.bodies
    assert first["input"] == [{"role": "user", "content": "From now on I prefer pytest."}]
    in_flight = [i for i in second["input"] if i.get("type")]
    call_item, output_item = in_flight
    assert call_item["type"] == "function_call" and call_item["name"] == "remember"
    assert json.loads(call_item["arguments"]) == {"key": "test_framework", "value": "pytest"}
    assert output_item == {
        "type": "function_call_output",
        "call_id": call_item["call_id"],
        "output": f"saved 'test_framework' in {SCOPE} (version 1)",
    }
    # The new memory is already in the next request's input, fenced, before the items.
    assert roles(second) == ["developer", "user", "function_call", "function_call_output"]
    memories = second["input"][0]["content"]
    assert memories.startswith("Relevant memories") and MEMORIES_OPEN in memories
    assert '"key":"test_framework","value":"pytest"' in memories

    items = await agent.memory.items()
    assert [(i.item_type, i.kind, i.role.value) for i in items] == [
        (None, MemoryKind.USER_MESSAGE, "user"),
        ("function_call", MemoryKind.ASSISTANT_MESSAGE, "assistant"),
        # remember changed something: its output is a decision, which summaries keep first.
        ("function_call_output", MemoryKind.DECISION, "assistant"),
        ("message", MemoryKind.ASSISTANT_MESSAGE, "assistant"),
    ]
    assert items[1].content == call_item["name"] + "(" + call_item["arguments"] + ")"
    assert items[2].payload == output_item
    # The next turn shows the model its own call and output, as the API produced them.
    standin.queue(say("ok"))
    await agent.run_turn("Thanks.")
    third = standin.bodies[-1]
    assert roles(third) == [
        "developer", "user", "function_call", "function_call_output", "assistant", "user",
    ]  # fmt: skip
    assert third["input"][2] == call_item and third["input"][3] == output_item


async def test_recall_and_parallel_calls_run_in_order(store: MemoryStore) -> None:
    await store.ltm.set("editor", "vim", scope=SCOPE)
    standin = StandInModel()
    standin.queue(
        call(("recall", {"key": "editor"}), ("recall", {"key": "shell"})),
        say("You use vim."),
    )
    agent = await make_agent(store, standin)
    result = await agent.run_turn("Which editor do I use?")
    outputs = [c.output for c in result.tool_calls]
    assert json.loads(outputs[0]) == {"key": "editor", "value": "vim", "version": 1}
    assert outputs[1] == f"nothing saved under 'shell' in {SCOPE}"
    second = standin.bodies[1]
    assert roles(second)[-4:] == [  # parallel calls, then their outputs, as the API sends
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    sent = [i["output"] for i in second["input"] if i.get("type") == "function_call_output"]
    assert sent == outputs
    records = [i for i in await agent.memory.items() if i.kind is MemoryKind.TOOL_OBSERVATION]
    assert [r.priority for r in records] == [Priority.LOW, Priority.LOW]
    standin.queue(say("ok"))
    await agent.run_turn("ok")
    later = standin.bodies[-1]["input"]
    assert [i["name"] for i in later if i.get("type") == "function_call"] == ["recall", "recall"]


async def test_injected_tools_errors_go_back_to_the_model(store: MemoryStore) -> None:
    seen: list[dict[str, Any]] = []

    async def lookup(ticket: str, verbose: bool = False) -> dict[str, Any]:
        seen.append({"ticket": ticket, "verbose": verbose})
        if ticket == "boom":
            raise RuntimeError("ticket service down")
        return {"ticket": ticket, "status": "open"}

    tool = Tool(
        "lookup_ticket",
        "Look a ticket up.",
        {
            "type": "object",
            "properties": {"ticket": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["ticket"],
            "additionalProperties": False,
        },
        lookup,
        priority=Priority.HIGH,
    )
    standin = StandInModel()
    standin.queue(
        call(
            ("lookup_ticket", {"ticket": "T-1"}),
            ("lookup_ticket", {"ticket": "boom"}),
            ("lookup_ticket", {}),
            ("lookup_ticket", {"ticket": 7}),
            ("lookup_ticket", {"ticket": "T-2", "color": "red"}),
            ("no_such_tool", {}),
        ),
        lambda r: Reply(
            {
                **tool_call_reply(r, ("lookup_ticket", {})).body,
                "output": [
                    {
                        "type": "function_call",
                        "call_id": "c-bad",
                        "name": "lookup_ticket",
                        "arguments": "{not json",
                    }
                ],
            }
        ),
        say("done"),
    )
    calls: list[str] = []
    agent = await make_agent(
        store,
        standin,
        tools=[tool],
        memory_tools=False,
        on_tool_call=lambda c: calls.append(c.name),
    )
    result = await agent.run_turn("Check T-1.")
    assert result.reply == "done"
    assert [t["name"] for t in standin.bodies[0]["tools"]] == ["lookup_ticket"]
    outputs = [c.output for c in result.tool_calls]
    assert outputs == [
        json.dumps({"ticket": "T-1", "status": "open"}),
        "error: RuntimeError: ticket service down",
        "error: missing argument(s): ticket",
        "error: argument 'ticket' must be of type string",
        "error: unexpected argument(s): color",
        "error: there is no tool named 'no_such_tool'",
        "error: the arguments are not a JSON object",
    ]
    assert [c.ok for c in result.tool_calls] == [True] + [False] * 6
    assert seen == [{"ticket": "T-1", "verbose": False}, {"ticket": "boom", "verbose": False}]
    assert len(calls) == 7
    records = [i for i in await agent.memory.items() if i.kind is MemoryKind.TOOL_OBSERVATION]
    assert len(records) == 7
    assert records[0].priority is Priority.HIGH  # the tool's own priority
    assert all(r.priority is Priority.LOW for r in records[1:])  # failed calls are noise


def test_check_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
        "required": ["n"],
    }
    assert check_arguments(schema, {"n": 1, "x": 2.5, "other": 1}) is None
    assert check_arguments(schema, {"n": True}) == "argument 'n' must be of type integer"
    assert check_arguments(schema, {"x": 1}) == "missing argument(s): n"
