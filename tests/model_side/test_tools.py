"""The agent's ``search_memory`` tool: what left working memory, found by its words."""

from __future__ import annotations

import json

from memstore import MemoryKind, MemoryLimits, MemoryStore, Priority, WordEstimator
from memstore.model_side.agent_tools import search_tool


async def test_search_memory_returns_passages_that_left_working_memory(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session(
        "agent", limits=MemoryLimits(hard=40, target=30, keep_recent=2), estimator=WordEstimator()
    )
    await memory.add("user", "Deploy the canary to region eu-north-1 first.")
    for i in range(12):
        await memory.add("assistant", f"working on step {i}")
    tool = search_tool(memory)
    assert tool.name == "search_memory"
    assert tool.record_as is MemoryKind.TOOL_OBSERVATION and tool.priority is Priority.LOW
    answer = await tool.handler(query="which region gets the canary?")
    first = json.loads(answer.splitlines()[0])
    assert first == {
        "seq": 1,
        "role": "user",
        "source": "item",
        "text": "Deploy the canary to region eu-north-1 first.",
    }
    assert await tool.handler(query="zeppelin") == "no earlier passage matches"
