"""A process that runs memory operations while the OpenTelemetry SDK records their spans.

The SDK's tracer provider is global and can be set once per process, so it is set here, in a
process of its own, never in the test process (whose other tests must see what a user without
a tracer sees). Reads one JSON request a line, ``{"scenario": NAME, "dir": PATH, "env": {...}}``;
runs the scenario with ``env`` set, in a new database under ``dir``; answers one line:
``{"ok": true, "spans": [...], "result": ...}`` (the spans in the order they ended) or
``{"ok": false, "error": TRACEBACK}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memstore import (
    LeaseHeldError,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryStore,
    Priority,
    ValidationError,
    VersionConflictError,
    WordEstimator,
)

#: A word no span may hold unless content capture is on: every stored text below has it.
CANARY = "zanzibarcanary"
#: The worked example: its limits, its items and its summarizer's answer.
WORKED_LIMITS = MemoryLimits(hard=55, target=52, keep_recent=2)
WORKED = [
    ("user", MemoryKind.USER_MESSAGE, Priority.NORMAL,
     "Investigate checkout latency and remember that payment-service is involved."),
    ("tool", MemoryKind.TOOL_OBSERVATION, Priority.LOW,
     "Health-check endpoint returned 200 on checkout-service."),
    ("tool", MemoryKind.TOOL_OBSERVATION, Priority.HIGH,
     "payment-service p95 latency is 1720ms and is degraded."),
    ("assistant", MemoryKind.ASSISTANT_MESSAGE, Priority.NORMAL,
     "I will trace the downstream dependency path before naming a root cause."),
    ("user", MemoryKind.USER_MESSAGE, Priority.NORMAL,
     "Also verify whether fraud-service is contributing to the payment delay."),
]  # fmt: skip
WORKED_SUMMARY = (
    "Current objective: diagnose checkout latency. "
    "Important observation: payment-service is degraded."
)
#: A chat whose facts consolidation keeps (each of the user's with the canary).
CONVERSATION = [
    ("user", "Hi there! How are you today?"),
    ("assistant", "I'm good, thanks. What did you do this weekend?"),
    ("user", f"My sister Maria moved to {CANARY} last month and she works as a nurse there."),
    ("assistant", "That sounds exciting. Do you visit her often?"),
    ("user", f"I am flying to {CANARY} on March 14 to see her, and I love the food there."),
    ("assistant", "My favorite dish is grilled sardines, and I always order them in Porto."),
    ("user", f"I adopted a beagle named {CANARY} in January and he loves the beach."),
    ("assistant", "That is a great name. I have two cats called Miso and Tofu."),
]
SMALL = MemoryLimits(hard=80, target=50, keep_recent=2)
#: Room for a recalled passage beside its framing (53 words of notice and fence).
RECALLING = MemoryLimits(hard=150, target=100, keep_recent=2)

Scenario = Callable[[Path], Awaitable[Any]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(run: Scenario) -> Scenario:
    SCENARIOS[run.__name__] = run
    return run


async def worked_summary(previous: str | None, items: Sequence[MemoryItem]) -> str:
    return WORKED_SUMMARY


async def failing_summary(previous: str | None, items: Sequence[MemoryItem]) -> str:
    raise RuntimeError("the model is down")


async def fill(memory: Any, n: int) -> None:
    """``n`` user messages, each with the canary and a word of its own."""
    for i in range(n):
        await memory.add("user", f"note {i} about {CANARY} and the invoice{i} totals")


@scenario
async def worked_example(folder: Path) -> Any:
    """The worked example: five appends, the fifth sets off one compaction (65 -> 52)."""
    async with MemoryStore.open(folder / "m.db") as store:
        memory = store.session(
            "incident-42", limits=WORKED_LIMITS, estimator=WordEstimator(),
            summarizer=worked_summary,
        )  # fmt: skip
        for role, kind, priority, content in WORKED:
            await memory.add(role, content, kind=kind, priority=priority)
        return [report.to_dict() for report in await memory.reports()]


@scenario
async def batch(folder: Path) -> Any:
    """A batch of Responses items in one append; then an append with a role memstore refuses."""
    async with MemoryStore.open(folder / "m.db") as store:
        memory = store.session("s", estimator=WordEstimator())
        turn = [
            {"role": "user", "content": f"Where is the {CANARY} order?"},
            {"role": "assistant", "content": "On its way."},
        ]
        stored = await memory.add_items(turn)
        try:
            await memory.add("robot", f"beep {CANARY}")
        except ValidationError as refused:
            return {"seqs": [item.seq for item in stored], "refused": str(refused)}
        raise AssertionError("the role was accepted")


@scenario
async def failing_summarizer(folder: Path) -> Any:
    """A compaction whose summarizer raises: it commits, the error is in its report."""
    async with MemoryStore.open(folder / "m.db") as store:
        memory = store.session(
            "s", limits=SMALL, estimator=WordEstimator(), summarizer=failing_summary
        )
        await fill(memory, 8)
        return [report.to_dict() for report in await memory.reports()]


@scenario
async def recall(folder: Path) -> Any:
    """A model input that recalls what left working memory; a search; a store-wide search."""
    async with MemoryStore.open(folder / "m.db") as store:
        memory = store.session(
            "s", limits=RECALLING, estimator=WordEstimator(), summarizer=failing_summary,
            recall_budget=100,
        )  # fmt: skip
        await fill(memory, 14)
        await memory.build_model_input(recall=f"invoice1 {CANARY}")
        hits = await memory.search(f"invoice2 {CANARY}")
        everywhere = await store.search(CANARY, limit=3)
        return {"hits": len(hits), "everywhere": len(everywhere)}


@scenario
async def consolidation(folder: Path) -> Any:
    """A scoped session consolidated into long-term memory."""
    async with MemoryStore.open(folder / "m.db") as store:
        memory = store.session(
            "s", limits=MemoryLimits(hard=10_000, target=5_000, keep_recent=2),
            estimator=WordEstimator(), scope="user:alice", consolidate=False,
        )  # fmt: skip
        for role, text in CONVERSATION:
            await memory.add(role, text)
        report = await memory.consolidate()
        assert report is not None
        return report.to_dict()


@scenario
async def long_term(folder: Path) -> Any:
    """Long-term writes of each kind, a stale compare-and-set, a delete and a prune."""
    async with MemoryStore.open(folder / "m.db") as store:
        first = await store.ltm.set("editor", f"{CANARY} vim", scope="user:alice")
        await store.ltm.set(
            "editor", f"{CANARY} helix", scope="user:alice", expected_version=first.version
        )
        await store.ltm.set("shell", f"{CANARY} fish", scope="user:alice", expected_version=0)
        try:
            await store.ltm.set("editor", "emacs", scope="user:alice", expected_version=1)
        except VersionConflictError as conflict:
            refused = str(conflict)
        else:
            raise AssertionError("a stale version was accepted")
        deleted = await store.ltm.delete("shell", scope="user:alice")
        absent = await store.ltm.delete("nothing-here", scope="user:alice")
        pruned = await store.ltm.prune()
        return {"refused": refused, "deleted": deleted, "absent": absent, "pruned": pruned}


@scenario
async def lease_held(folder: Path) -> Any:
    """``compact(wait=False)`` while another handle's compaction holds the lease."""
    holding, release = asyncio.Event(), asyncio.Event()

    async def slow(previous: str | None, items: Sequence[MemoryItem]) -> str:
        holding.set()
        await release.wait()
        return "summary"

    async with MemoryStore.open(folder / "m.db") as store:
        limits = MemoryLimits(hard=10_000, target=60, keep_recent=2)  # room for a summary
        first = store.session("s", limits=limits, estimator=WordEstimator(), summarizer=slow)
        await fill(first, 8)
        running = asyncio.create_task(first.compact())
        await asyncio.wait_for(holding.wait(), 60)
        second = store.session("s", limits=limits, estimator=WordEstimator())
        try:
            await second.compact(wait=False)
            raise AssertionError("the lease was not held")
        except LeaseHeldError as held:
            error = str(held)
        gave_up = await second.compact(wait_timeout=0.2)
        # An append past a hard limit sets off a compaction, which finds the lease held.
        tight = MemoryLimits(hard=50, target=30, keep_recent=2)
        await store.session("s", limits=tight, estimator=WordEstimator()).add("user", "more")
        release.set()
        report = await running
        assert report is not None
        return {"error": error, "gave_up": gave_up}


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """What a test reads of a span: JSON-ready."""
    parent = span.parent.span_id if span.parent is not None else None
    return {
        "name": span.name,
        "id": span.context.span_id,
        "parent": parent,
        "kind": span.kind.name,
        "status": span.status.status_code.name,
        "description": span.status.description,
        "attributes": {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in (span.attributes or {}).items()
        },
        "events": [event.name for event in span.events],
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
    }


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    for line in sys.stdin:
        request = json.loads(line)
        saved = dict(os.environ)
        os.environ.update(request["env"])
        exporter.clear()
        try:
            result = asyncio.run(SCENARIOS[request["scenario"]](Path(request["dir"])))
            spans = [span_record(span) for span in exporter.get_finished_spans()]
            answer = {"ok": True, "spans": spans, "result": result}
        except BaseException:
            answer = {"ok": False, "error": traceback.format_exc()}
        finally:
            os.environ.clear()
            os.environ.update(saved)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
