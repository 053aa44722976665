"""memstore in an application's trace: appends, a compaction, a consolidation, a recall.

Offline: a scripted incident investigation, no model. The application traces with the
OpenTelemetry SDK (the test extra brings it: ``pip install '.[test]'`` in memstore's
checkout), exporting to memory; each agent turn is a span of its own, and memstore's spans
nest in it. At the end the script prints the trace as a tree: each span's name, duration and
status, then its attributes.

    python examples/traced_session.py --db traced.db
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true python examples/traced_session.py

The second form opts in to stored text in spans (queries and records), as the GenAI semantic
conventions define it; without it no span holds what the session stores.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memstore import ExtractiveSummarizer, MemoryLimits, MemoryStore, WordEstimator

#: The investigation, one turn a tuple: what the user asks, what the tools return, the reply.
TURNS = [
    (
        "Investigate checkout latency; payment-service is involved.",
        [("GET checkout-service /healthz returned 200 in 12ms; build 4.18.2, 6 of 6 pods.", "LOW")],
        "checkout-service itself is up; I will trace its dependencies next.",
    ),
    (
        "I prefer short answers, and always page the on-call in #payments.",
        [
            (
                "payment-service p95 latency is 1720ms over the last 15 minutes and its error "
                "rate is 2.1%; the slowest span is the card-network call, retried twice per "
                "request since deploy 4.18.2; p50 is 240ms, p99 is 3900ms, 2 of 8 pods were "
                "restarted by their liveness probe, the connection pool to the card network "
                "is saturated at 64 of 64, and the retry budget is spent within a minute.",
                "HIGH",
            ),
            ("fraud-service p95 latency is 80ms and its error rate is 0.0%.", "LOW"),
        ],
        "payment-service is the slow one: its card-network call retries since 4.18.2.",
    ),
    (
        "What did the health check of checkout-service return?",
        [],
        "200 in 12ms: checkout-service is up.",
    ),
]
#: Small enough that the second turn compacts the first away (a real model's are larger).
LIMITS = MemoryLimits(hard=160, target=100, keep_recent=2)


def record_spans() -> InMemorySpanExporter:
    """What an application does once at start: a tracer provider and an exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


async def investigate(db: Path) -> None:
    tracer = trace.get_tracer("incident-bot")
    async with MemoryStore.open(db) as store:
        memory = store.session(
            "incident-42", limits=LIMITS, estimator=WordEstimator(),
            summarizer=ExtractiveSummarizer(), scope="user:alice", recall_budget=100,
        )  # fmt: skip
        for number, (question, observations, reply) in enumerate(TURNS, 1):
            with tracer.start_as_current_span(f"turn {number}"):
                await memory.add("user", question)
                for observation, priority in observations:
                    await memory.add("tool", observation, priority=priority)
                await memory.build_model_input()  # what the model would be sent
                await memory.add("assistant", reply)
        with tracer.start_as_current_span("settings"):
            await store.ltm.set("answer_style", "short", scope="user:alice")
            await store.ltm.delete("answer_style", scope="user:alice")


def print_tree(spans: Sequence[ReadableSpan]) -> None:
    """The spans as a tree, children in the order they started."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        status = span.status.status_code.name
        print(f"{'  ' * depth}{span.name}  {took:.1f} ms  {status}")
        for key, value in (span.attributes or {}).items():
            print(f"{'  ' * depth}  | {key} = {value}")
        for child in children.get(span.context.span_id, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="traced.db", help="the database (created if absent)")
    args = parser.parse_args()
    exporter = record_spans()
    asyncio.run(investigate(Path(args.db)))
    print_tree(exporter.get_finished_spans())


if __name__ == "__main__":
    main()
