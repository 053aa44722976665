"""A worker for the two-process save race on one pydantic-ai conversation.

    python pydantic_ai_worker.py DB CONVERSATION ROUNDS NAME SYNC_DIR

Each round the worker loads the conversation, touches ``SYNC_DIR/ready-NAME-ROUND``, waits
for ``SYNC_DIR/go-ROUND`` (so both workers hold the same revision when they start), runs one
offline agent turn on it and saves it. It prints one JSON line per round:
``{"round": R, "revision": REVISION_LOADED, "outcome": "saved" | "conflict"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.conversation_store import ConversationConflict
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memstore import Settings
from memstore.pydantic_ai import MemstoreConversationStore


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f"noted ({len(messages)} messages)")])


AGENT = Agent(FunctionModel(reply))


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.002)


async def run(db: str, conversation_id: str, rounds: int, name: str, sync: Path) -> None:
    # A long busy timeout: the race is the point here, a lock timeout is not.
    store = MemstoreConversationStore.from_url(db, settings=Settings(busy_timeout_s=60))
    async with store:
        for round_ in range(rounds):
            conversation = await store.load(conversation_id)
            assert conversation is not None
            (sync / f"ready-{name}-{round_}").touch()
            await asyncio.to_thread(wait_for, sync / f"go-{round_}")
            result = await AGENT.run(f"round {round_} from {name}", conversation=conversation)
            try:
                await store.save(result)
                outcome = "saved"
            except ConversationConflict:
                outcome = "conflict"
            line = {"round": round_, "revision": conversation.revision, "outcome": outcome}
            print(json.dumps(line), flush=True)


def main() -> None:
    db, conversation_id, rounds, name, sync = sys.argv[1:6]
    asyncio.run(run(db, conversation_id, int(rounds), name, Path(sync)))


if __name__ == "__main__":
    main()
