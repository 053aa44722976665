"""One OS process running Agents SDK turns on a shared memstore session (test_openai_agents)."""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memstore import MemoryLimits, WordEstimator
from memstore.adapters.agents_sdk import MemstoreSession


@function_tool
def lookup(order: int) -> str:
    """Look up an order."""
    return f"order {order} left the warehouse"


async def main(url: str, name: str, turns: int) -> None:
    session = MemstoreSession.from_url(
        "shared",
        url,
        limits=MemoryLimits(hard=400, target=200, keep_recent=2),
        estimator=WordEstimator(),
    )
    steps: list[object] = []
    for turn in range(turns):
        steps += [
            [function_call("lookup", {"order": turn}, call_id=f"{name}-{turn}")],
            [assistant_message(f"{name} says order {turn} shipped")],
        ]
    agent = Agent(name=name, model=ScriptedModel(steps), tools=[lookup])
    try:
        for turn in range(turns):
            await Runner.run(agent, f"{name}: where is order {turn}?", session=session)
    finally:
        await session.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
