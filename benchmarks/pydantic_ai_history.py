"""Loading a pydantic-ai conversation from memstore: its history in one recursive query, beside
pydantic-ai's default ``read_history`` (one ``read_entry`` per message), in one run on one
database.

    python benchmarks/pydantic_ai_history.py [--url URL] [--lengths 50,500,2000] [--rounds 15]

For each length a conversation of that many messages (a prompt, a tool call, its result and
an answer per turn) is saved through ``MemstoreConversationStore``; then each round loads it
whole, and its newest 20 messages (``load(limit=20)``), once through memstore's override and
once through the base class's loop over ``read_entry``, in turn first (interleaved, so a noisy
moment of a shared machine hits both alike), each after a garbage collection (one load's
garbage is not the next one's cost). It prints the median seconds of each and their ratio.
``--url`` runs it on PostgreSQL (a database it may write conversations named ``bench-N`` to).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationStore
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from memstore import MemoryStore
from memstore.pydantic_ai import MemstoreConversationStore

#: Messages ``load(limit=)`` reads in the windowed case: a run that needs the recent turns.
WINDOW = 20


class EntryByEntry(MemstoreConversationStore):
    """memstore's store with pydantic-ai's default ``read_history``: the baseline."""

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        return await ConversationStore.read_history(self, head_id, limit=limit)


def history(length: int) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    for turn in range(length // 4 + 1):
        call = f"call-{turn}"
        result = ToolReturnPart("lookup", {"status": "shipped"}, tool_call_id=call)
        messages += [
            ModelRequest(parts=[UserPromptPart(f"Where is order {turn}? It was due on Monday.")]),
            ModelResponse(parts=[ToolCallPart("lookup", {"order": turn}, tool_call_id=call)]),
            ModelRequest(parts=[result]),
            ModelResponse(parts=[TextPart(f"Order {turn} shipped on Tuesday from Rotterdam.")]),
        ]
    return messages[:length]


async def timed(load: Callable[[], Awaitable[Any]]) -> float:
    gc.collect()  # the last load's garbage is not this one's cost
    began = time.perf_counter()
    await load()
    return time.perf_counter() - began


async def measure(url: str, length: int, rounds: int) -> dict[str, float]:
    async with MemoryStore.open(url) as store:
        ours, baseline = MemstoreConversationStore(store), EntryByEntry(store)
        name = f"bench-{length}"
        await ours.delete(name)
        await ours.save(Conversation(conversation_id=name, messages=history(length)))
        times: dict[str, list[float]] = {}
        for number in range(rounds):
            pairs = [("one query", ours), ("entry by entry", baseline)]
            for label, chosen in pairs if number % 2 else reversed(pairs):
                for limit in (None, WINDOW):
                    key = f"{label}{'' if limit is None else f' (limit {limit})'}"
                    seconds = await timed(lambda s=chosen, n=limit: s.load(name, limit=n))
                    times.setdefault(key, []).append(seconds)
        await ours.delete(name)
    return {key: statistics.median(values) for key, values in times.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=None, help="a database URL (default: a new SQLite file)")
    parser.add_argument("--lengths", default="50,500,2000")
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = options.url or str(Path(folder) / "bench.db")
        print(f"database: {'PostgreSQL' if options.url else 'SQLite file'}")
        for length in (int(n) for n in options.lengths.split(",")):
            found = await measure(url, length, options.rounds)
            for suffix in ("", f" (limit {WINDOW})"):
                ours, base = found[f"one query{suffix}"], found[f"entry by entry{suffix}"]
                print(
                    f"{length:>5} messages{suffix:<11}: one query {ours * 1000:8.2f} ms, "
                    f"entry by entry {base * 1000:8.2f} ms, {base / ours:5.1f}x"
                )


if __name__ == "__main__":
    asyncio.run(main())
