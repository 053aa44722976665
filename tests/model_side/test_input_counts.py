"""The agent records, per model request, memstore's count of the input beside the model's
``usage.input_tokens``, and ``show`` reports how they compare (the offline stand-in server
answers through the real openai client; SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from click.testing import CliRunner, Result

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.agent import Agent
from memstore.cli import main
from memstore.core.input_counts import request_tokens
from memstore.extraction.summarizer import ExtractiveSummarizer
from memstore.offline_model import Reply, StandInModel, text_reply, tool_call_reply

MODEL = "gpt-count-test"


def show(url: str, *options: str) -> Result:
    return CliRunner().invoke(main, ["--db", url, "show", "s", *options])


def echo(request: dict[str, Any]) -> Reply:
    return text_reply(request, "noted, and here is a short answer")


def without_usage(request: dict[str, Any]) -> Reply:
    reply = text_reply(request, "an answer whose usage is not reported")
    del reply.body["usage"]
    return reply


async def test_each_request_records_both_counts(backend_url: str) -> None:
    standin = StandInModel(echo)
    async with MemoryStore.open(backend_url) as store:
        memory = store.session(
            "s",
            limits=MemoryLimits(hard=400, target=200, keep_recent=2),
            estimator=WordEstimator(),
            summarizer=ExtractiveSummarizer(),
            ltm_scopes=["user:ann"],
        )
        agent = Agent(standin.client(), memory, model=MODEL)
        standin.queue(lambda r: tool_call_reply(r, ("remember", {"key": "k", "value": "v"})))
        results = [await agent.run_turn(f"Message number {n} with a few words") for n in range(3)]
        standin.queue(without_usage)
        await agent.run_turn("This request's usage goes unreported.")
        fit = await store.input_counts("s")
        assert fit is not None
        bodies = standin.bodies
        assert fit.calls == len(bodies) - 1 == 4  # a tool round makes two requests
        reported = sum(r.usage["input_tokens"] for r in results if r.usage)
        assert fit.reported_tokens == reported
        words = WordEstimator()
        assert fit.estimated_tokens == sum(request_tokens(b, words.count) for b in bodies[:-1])
        assert fit.last.model == MODEL and fit.last.estimated_tokens > 0
        assert 0 < fit.lowest_ratio <= fit.ratio <= fit.highest_ratio

        # The command runs its own event loop: in a thread, as it would in its own process.
        shown = await asyncio.to_thread(show, backend_url)
        assert shown.exit_code == 0, shown.output
        assert "input counts: memstore counted" in shown.stdout and "4 request(s)" in shown.stdout
        as_json = json.loads((await asyncio.to_thread(show, backend_url, "--json")).stdout)
        assert as_json["input_counts"]["calls"] == 4

        # A fork starts without its parent's observations; purge takes them with the session.
        await store.fork("s", "f")
        assert await store.input_counts("f") is None
        await store.purge("s", with_forks=True)
        assert await store.input_counts("s") is None


async def test_the_count_includes_instructions_and_tools() -> None:
    words = WordEstimator()
    body = {
        "model": MODEL,
        "instructions": "Answer briefly please",
        "input": [{"role": "user", "content": "one two three"}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
    }
    tools_words = len(json.dumps(body["tools"], ensure_ascii=False).split())
    assert request_tokens(body, words.count) == 3 + 4 + 3 + tools_words
