"""``MemoryLimits.for_model``: the hard limit is what the window leaves after the output
reserve, the instructions and the tool schemas, less a safety margin; the target a fixed
share below it; no room is an error naming what ran out of it."""

from __future__ import annotations

import json

import pytest

from memstore import ConfigurationError, MemoryLimits, TiktokenEstimator, WordEstimator
from memstore.core.budget import SAFETY_MARGIN, TARGET_SHARE
from memstore.core.input_counts import CountFit, InputCount, input_tokens
from memstore.core.model_windows import choose_limits, model_window

TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Find an order by its number.",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
    }
]


def test_hard_is_what_the_window_leaves_less_the_margin() -> None:
    words = WordEstimator()
    instructions = "You are a careful assistant who answers in one short paragraph."
    limits = MemoryLimits.for_model(
        context_window=10_000,
        max_output_tokens=2_000,
        instructions=instructions,
        tools=TOOLS,
        estimator=words,
    )
    room = 10_000 - 2_000 - words.count(instructions) - words.count(json.dumps(TOOLS))
    assert limits.hard == room - int(room * SAFETY_MARGIN)
    assert limits.hard >= room * 0.9  # at most a 10% margin
    assert limits.target == int(limits.hard * TARGET_SHARE)
    assert limits.keep_recent == MemoryLimits().keep_recent


def test_the_default_estimator_is_tiktoken() -> None:
    tiktoken = TiktokenEstimator()
    instructions = "Answer in French. " * 50
    limits = MemoryLimits.for_model(
        context_window=128_000, max_output_tokens=16_384, instructions=instructions
    )
    room = 128_000 - 16_384 - tiktoken.count(instructions)
    assert limits.hard == room - int(room * SAFETY_MARGIN)
    bare = MemoryLimits.for_model(context_window=128_000, max_output_tokens=16_384)
    assert bare.hard > limits.hard and bare.hard == 111_616 - 11_161


def test_tools_count_by_their_definition() -> None:
    from memstore.model_side.agent_tools import Tool

    async def handler(order: str) -> str:
        return order

    tool = Tool(
        name="lookup",
        description="Find an order by its number.",
        parameters=TOOLS[0]["parameters"],  # type: ignore[arg-type]
        handler=handler,
    )
    words = WordEstimator()
    as_tool = MemoryLimits.for_model(
        context_window=5_000, max_output_tokens=500, tools=[tool], estimator=words
    )
    as_json = MemoryLimits.for_model(
        context_window=5_000, max_output_tokens=500, tools=[tool.definition()], estimator=words
    )
    assert as_tool == as_json
    assert (
        as_tool.hard
        < MemoryLimits.for_model(context_window=5_000, max_output_tokens=500, estimator=words).hard
    )


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"context_window": 1_000, "max_output_tokens": 1_000}, "max_output_tokens"),
        ({"context_window": 1_000, "max_output_tokens": 999}, "max_output_tokens"),
        (
            {"context_window": 1_000, "max_output_tokens": 10, "instructions": "w " * 995},
            "instructions",
        ),
        ({"context_window": 60, "max_output_tokens": 10, "tools": TOOLS * 3}, "tools"),
        ({"context_window": 0, "max_output_tokens": 10}, "context_window"),
        ({"context_window": "8k", "max_output_tokens": 10}, "context_window"),
        ({"context_window": 1_000, "max_output_tokens": 0}, "max_output_tokens"),
        ({"context_window": 1_000, "max_output_tokens": True}, "max_output_tokens"),
        ({"context_window": 1_000, "max_output_tokens": 10, "instructions": 5}, "instructions"),
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": [object()]}, "tools"),
        # Not a list of schemas: no longer counted as if it were one.
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": "notalist"}, "tools"),
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": TOOLS[0]}, "tools"),
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": ["lookup"]}, "tools"),
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": 3}, "tools"),
        ({"context_window": 1_000, "max_output_tokens": 10, "tools": ""}, "tools"),
    ],
)
def test_no_room_or_a_bad_value_names_the_field(arguments: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        MemoryLimits.for_model(**arguments, estimator=WordEstimator())  # type: ignore[arg-type]
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ")


def test_a_small_window_still_gives_valid_limits() -> None:
    limits = MemoryLimits.for_model(
        context_window=12, max_output_tokens=8, estimator=WordEstimator()
    )
    assert limits.hard == 4 and 1 <= limits.target < limits.hard


def test_the_model_table_finds_families_by_the_longest_name() -> None:
    assert model_window("gpt-4o-mini") == model_window("gpt-4o-mini-2024-07-18")
    assert model_window("gpt-4o-2024-08-06") == model_window("gpt-4o")
    assert model_window("gpt-4o-mini") is not None and model_window("gpt-4o") is not None
    assert model_window("gpt-4.1-mini-2025-04-14") == model_window("gpt-4.1-mini")
    assert model_window("stand-in") is None and model_window("gpt-4oo") is None


def _choose(**overrides: object) -> tuple[MemoryLimits, str]:
    arguments: dict[str, object] = {
        "model": "gpt-4o-mini",
        "stored": None,
        "context_window": None,
        "max_output_tokens": None,
        "env": {},
        "instructions": "Be brief.",
        "tools": TOOLS,
        "estimator": WordEstimator(),
    }
    arguments.update(overrides)
    return choose_limits(**arguments)  # type: ignore[arg-type]


def test_choosing_limits_for_an_agent() -> None:
    words = WordEstimator()
    from_table, why = _choose()
    assert why == "model"
    assert from_table == MemoryLimits.for_model(
        context_window=128_000,
        max_output_tokens=16_384,
        instructions="Be brief.",
        tools=TOOLS,
        estimator=words,
    )
    stored = MemoryLimits(hard=700, target=400, keep_recent=3)
    assert _choose(stored=stored) == (stored, "stored")
    # A user's change wins over what was stored; the stored keep_recent stays.
    changed, why = _choose(stored=stored, context_window=20_000)
    assert why == "window" and changed.keep_recent == 3
    assert (
        changed.hard
        == MemoryLimits.for_model(
            context_window=20_000,
            max_output_tokens=16_384,
            instructions="Be brief.",
            tools=TOOLS,
            estimator=words,
        ).hard
    )
    env = {"MEMORY_HARD_LIMIT": "300", "MEMORY_TARGET_LIMIT": "200"}
    assert _choose(env=env) == (MemoryLimits(hard=300, target=200), "environment")
    with pytest.raises(ConfigurationError) as unknown:
        _choose(model="stand-in")
    assert unknown.value.field == "context_window" and "stand-in" in str(unknown.value)
    own, why = _choose(model="stand-in", context_window=8_000)
    assert why == "window" and own.hard < 8_000 - 2_000  # a default reserve for the answer
    assert _choose(model="stand-in", stored=stored) == (stored, "stored")


def test_input_tokens_count_messages_and_carried_items() -> None:
    words = WordEstimator()
    request = [
        {"role": "developer", "content": "Working memory summary: two facts."},
        {"role": "user", "content": "What is the order status?"},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"order": "7"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "shipped on Monday"},
    ]
    counted = input_tokens(request, words.count)
    assert counted >= 5 + 5 + 3 + 4 * 4
    assert input_tokens(request[:2], words.count) == 5 + 5 + 2 * 4


def test_count_fit_sums_the_requests() -> None:
    assert CountFit.of([]) is None
    fit = CountFit.of(
        [InputCount(3, "m", 90, 100), InputCount(5, "m", 120, 100), InputCount(7, "m", 10, 0)]
    )
    assert fit is not None
    assert fit.calls == 2 and fit.ratio == pytest.approx(1.05)
    assert (fit.lowest_ratio, fit.highest_ratio) == (pytest.approx(0.9), pytest.approx(1.2))
    assert fit.last.session_version == 5
    assert "105%" in fit.line() and fit.to_dict()["calls"] == 2
