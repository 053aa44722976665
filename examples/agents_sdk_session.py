"""An OpenAI Agents SDK agent whose session is memstore: bounded, compacted, audited.

Offline: the SDK's own scripted model (agents.testing.ScriptedModel) plays the model, so no
key and no network are needed. The agent looks orders up with a function tool over a dozen
turns; the session's small limits make memstore compact several times, keeping every call
with its output. At the end the audit shows what was kept and what was forgotten, and why.

    pip install '.[agents]'          # in memstore's checkout
    python examples/agents_sdk_session.py --db orders.db
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from memstore import MemoryLimits, MemoryStore
from memstore.openai_agents import MemstoreSession

ORDERS = {
    n: f"order {n} left the Leeds warehouse, courier DPD, due day {n % 5 + 1}" for n in range(12)
}


@function_tool
def lookup_order(order: int) -> str:
    """Where an order is."""
    return ORDERS.get(order, f"no order {order}")


def scripted_model(turns: int) -> ScriptedModel:
    """What a model would answer: look the order up, then say where it is."""
    steps: list[object] = []
    for n in range(turns):
        steps.append([function_call("lookup_order", {"order": n}, call_id=f"call_{n}")])
        steps.append([assistant_message(f"Order {n} is with DPD, due day {n % 5 + 1}.")])
    return ScriptedModel(steps)


async def main(db: Path, turns: int) -> None:
    # The SDK exports traces to OpenAI by default; offline there is nowhere to send them
    # (it would print "OPENAI_API_KEY is not set, skipping trace export").
    set_tracing_disabled(True)
    async with MemoryStore.open(db) as store:
        memory = store.session("orders", limits=MemoryLimits(hard=400, target=250, keep_recent=4))
        memory.add_observer(
            lambda r: print(f"  compaction #{r.compaction_count}: {r.before_tokens} -> "
                            f"{r.after_tokens} tokens, {len(r.removed)} items folded away")
        )  # fmt: skip
        session = MemstoreSession(memory)  # the one line that differs from SQLiteSession
        agent = Agent(name="orders", model=scripted_model(turns), tools=[lookup_order])
        for n in range(turns):
            result = await Runner.run(agent, f"Where is order {n}?", session=session)
            print(f"turn {n}: {result.final_output}")
        kinds = [item.get("type", "message") for item in await session.get_items()]
        print(f"the model's next input: {len(kinds)} items: {', '.join(kinds)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("agents-example.db"))
    parser.add_argument("--turns", type=int, default=12)
    args = parser.parse_args()
    asyncio.run(main(args.db, args.turns))
    print(f"\naudit: memstore --db {args.db} show orders --all")
    memstore = Path(sys.executable).with_name("memstore")
    subprocess.run([str(memstore), "--db", str(args.db), "show", "orders", "--all"], check=True)
