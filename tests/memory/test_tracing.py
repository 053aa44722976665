"""Memory operations as OpenTelemetry spans: their names, their figures, no stored text unless
the process opts in, errors on the span; and nothing at all without OpenTelemetry.

The spans are recorded by the real SDK (its in-memory exporter) in a worker process of its own
(``traced_worker.py``): a tracer provider is global and set once per process, and this
process's other tests must see what a user who does not trace sees.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traced_worker import CANARY, WORKED_SUMMARY

WORKER = Path(__file__).with_name("traced_worker.py")
CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
#: A scenario takes a second or two; a busy shared machine, many times that.
ANSWER_WITHIN_S = 120

Span = dict[str, Any]


class Traced:
    """The worker: runs a scenario, returns its spans and its result."""

    def __init__(self, process: subprocess.Popen[str], folder: Path) -> None:
        self.process, self.folder, self.runs = process, folder, 0

    def __call__(self, scenario: str, env: dict[str, str] | None = None) -> tuple[list[Span], Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.runs += 1
        folder = self.folder / f"{scenario}-{self.runs}"
        folder.mkdir()
        request = {"scenario": scenario, "dir": str(folder), "env": env or {}}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_WITHIN_S)
        assert ready, f"{scenario}: no answer within {ANSWER_WITHIN_S}s"
        answer = json.loads(self.process.stdout.readline() or '{"ok": false, "error": "died"}')
        assert answer["ok"], answer["error"]
        return answer["spans"], answer["result"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "MEMSTORE_"))}
    env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
    with subprocess.Popen(
        [sys.executable, str(WORKER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=WORKER.parent,
    ) as process:
        yield Traced(process, tmp_path_factory.mktemp("traced"))
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


def named(spans: list[Span], name: str) -> list[Span]:
    return [span for span in spans if span["name"] == name]


def only(spans: list[Span], name: str) -> Span:
    found = named(spans, name)
    assert len(found) == 1, [span["name"] for span in spans]
    return found[0]


def compaction_figures(span: Span) -> dict[str, Any]:
    prefix = "memstore.compaction."
    return {k[len(prefix) :]: v for k, v in span["attributes"].items() if k.startswith(prefix)}


def strings_in(spans: list[Span]) -> list[str]:
    """Every text a span holds: attribute values, names, descriptions, events."""
    out: list[str] = []
    for span in spans:
        out += [span["name"], span["description"] or "", *span["events"]]
        for value in span["attributes"].values():
            out += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return out


def test_the_worked_example_appends_and_compacts_in_spans(traced: Traced) -> None:
    spans, reports = traced("worked_example")
    appends = named(spans, "create_memory")
    assert len(appends) == 5
    for span in appends:
        assert span["kind"] == "INTERNAL" and span["status"] == "UNSET"
        assert span["scope"] == "memstore"
        assert span["attributes"]["gen_ai.operation.name"] == "create_memory"
        assert span["attributes"]["gen_ai.conversation.id"] == "incident-42"
        assert span["attributes"]["gen_ai.memory.record.count"] == 1
    assert [s["attributes"]["memstore.item.tokens"] for s in appends] == [9, 6, 8, 12, 10]

    compact = only(spans, "memstore.compact")
    assert compact["parent"] == appends[-1]["id"]  # set off by the fifth append
    assert "gen_ai.operation.name" not in compact["attributes"]  # the conventions lack it
    assert compact["attributes"]["gen_ai.conversation.id"] == "incident-42"
    [report] = reports
    figures = compaction_figures(compact)
    assert figures["trigger"] == "hard_limit" and figures["outcome"] == "committed"
    assert (figures["before_tokens"], figures["after_tokens"]) == (65, 52)
    assert (figures["items_dropped"], figures["items_summarized"]) == (1, 2)
    for field in ("compaction_count", "items_evicted", "summarizer", "summary_action",
                  "summary_tokens", "attempts", "committed_version"):  # fmt: skip
        assert figures[field] == report[field], field
    assert figures["summarize_seconds"] == pytest.approx(report["summarize_seconds"])
    assert "summary_error" not in figures
    # The summary is stored text: the figures say how long it is, never what it says.
    assert not any(WORKED_SUMMARY in text for text in strings_in(spans))


def test_a_batch_is_one_append_and_bad_input_an_error(traced: Traced) -> None:
    spans, result = traced("batch")
    batch, refused = named(spans, "create_memory")
    assert batch["attributes"]["gen_ai.memory.record.count"] == 2
    assert batch["attributes"]["memstore.item.seq"] == result["seqs"][-1] == 2
    assert "gen_ai.memory.record.id" not in batch["attributes"]  # one id per record: none
    assert refused["status"] == "ERROR" and refused["description"] == result["refused"]
    assert refused["attributes"]["error.type"] == "ValidationError"
    assert "gen_ai.memory.record.count" not in refused["attributes"]  # nothing was written


def test_a_failing_summarizer_marks_its_compaction_and_not_the_append(traced: Traced) -> None:
    spans, reports = traced("failing_summarizer")
    compact = named(spans, "memstore.compact")[0]
    error = reports[0]["summary_error"]
    assert error == "RuntimeError: the model is down"
    assert compaction_figures(compact)["summary_error"] == error
    assert compact["status"] == "ERROR" and error in compact["description"]
    assert compaction_figures(compact)["outcome"] == "committed"
    assert all(span["status"] == "UNSET" for span in named(spans, "create_memory"))


def test_a_recall_is_a_search_within_the_model_input(traced: Traced) -> None:
    spans, result = traced("recall")
    built = only(spans, "memstore.build_model_input")
    searches = named(spans, "search_memory")
    recall = next(span for span in searches if span["parent"] == built["id"])
    assert recall["attributes"]["gen_ai.conversation.id"] == "s"
    assert recall["attributes"]["memstore.recall.candidates"] >= 1
    shown = recall["attributes"]["gen_ai.memory.record.count"]
    assert shown >= 1 and recall["attributes"]["memstore.recall.tokens"] > 0
    inputs = built["attributes"]
    assert inputs["memstore.input.recalled"] == shown
    assert inputs["memstore.input.recall_tokens"] == recall["attributes"]["memstore.recall.tokens"]
    # The items and the recall (the summarizer failed: no summary), within the hard limit.
    assert inputs["memstore.input.messages"] == inputs["memstore.input.items"] + 1
    assert inputs["memstore.input.summary"] is False and inputs["memstore.limits.hard"] == 150
    assert inputs["memstore.input.session_tokens"] <= 150

    session_search, store_search = (span for span in searches if span["parent"] is None)
    assert session_search["attributes"]["gen_ai.memory.record.count"] == result["hits"] >= 1
    assert session_search["attributes"]["memstore.search.sessions"] == ["s"]
    assert session_search["attributes"]["memstore.search.include_active"] is False
    assert store_search["attributes"]["gen_ai.memory.record.count"] == result["everywhere"] == 3
    assert "gen_ai.conversation.id" not in store_search["attributes"]  # every session


def test_a_consolidation_carries_its_reports_counts(traced: Traced) -> None:
    spans, report = traced("consolidation")
    span = only(spans, "upsert_memory")
    attributes = span["attributes"]
    assert attributes["gen_ai.operation.name"] == "upsert_memory"
    assert attributes["gen_ai.conversation.id"] == "s"
    assert attributes["gen_ai.memory.store.id"] == "user:alice"
    assert report["written"] >= 1  # a preference and an identity fact, at least
    for field in ("number", "proposed", "written", "superseded", "skipped", "source_tokens",
                  "budget", "entry_tokens", "extractor", "dry_run"):  # fmt: skip
        assert attributes[f"memstore.consolidation.{field}"] == report[field], field
    assert attributes["memstore.consolidation.items"] == len(report["items"])
    assert attributes["gen_ai.memory.record.count"] == report["written"] + report["superseded"]


def test_long_term_writes_and_deletes_name_their_operation(traced: Traced) -> None:
    spans, result = traced("long_term")
    operations = [(s["name"], s["attributes"].get("gen_ai.memory.record.id")) for s in spans]
    assert operations == [
        ("upsert_memory", "editor"),  # set: creates or replaces
        ("update_memory", "editor"),  # with the version it read
        ("create_memory", "shell"),  # expected_version=0: only if absent
        ("update_memory", "editor"),  # a stale version: refused
        ("delete_memory", "shell"),
        ("delete_memory", "nothing-here"),
        ("delete_memory", None),  # prune: every scope's expired entries
    ]
    for span in spans[:-1]:
        assert span["attributes"]["gen_ai.memory.store.id"] == "user:alice"
    versions = [s["attributes"].get("memstore.ltm.version") for s in spans[:3]]
    assert versions == [1, 2, 1]
    stale = spans[3]
    assert stale["status"] == "ERROR"
    assert stale["attributes"]["error.type"] == "VersionConflictError"
    assert stale["description"] == result.pop("refused")  # memstore's message: no content
    assert stale["events"] == []  # the exception's event: only with the opt-in
    assert "gen_ai.memory.record.count" not in stale["attributes"]
    assert result == {"deleted": True, "absent": False, "pruned": 0}
    counts = [s["attributes"]["gen_ai.memory.record.count"] for s in spans[4:]]
    assert counts == [1, 0, 0]


def test_a_lease_held_elsewhere_is_an_error_on_a_compaction_asked_for(traced: Traced) -> None:
    spans, result = traced("lease_held")
    refused, gave_up, after_append, committed = named(spans, "memstore.compact")
    assert refused["status"] == "ERROR"
    assert refused["attributes"]["error.type"] == "LeaseHeldError"
    assert refused["description"] == result["error"]
    assert compaction_figures(refused)["outcome"] == "lease_held"
    assert compaction_figures(refused)["trigger"] == "manual"
    # compact() that waited for the lease in vain: it returned None, and says why.
    assert result["gave_up"] is None and gave_up["status"] == "ERROR"
    assert gave_up["description"] == "gave up after waiting 0.2s for the lease"
    assert compaction_figures(gave_up)["outcome"] == "lease_held"
    holder = refused["attributes"]["memstore.lease.holder"]
    assert gave_up["attributes"]["memstore.lease.holder"] == holder
    # An append's compaction that finds another worker compacting is no failure.
    assert compaction_figures(after_append)["trigger"] == "hard_limit"
    assert compaction_figures(after_append)["outcome"] == "lease_held"
    assert after_append["status"] == "UNSET"
    assert committed["status"] == "UNSET"
    assert compaction_figures(committed)["outcome"] == "committed"


SCENARIOS = ["batch", "failing_summarizer", "recall", "consolidation", "long_term", "lease_held"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_span_holds_stored_text_by_default(traced: Traced, scenario: str) -> None:
    spans, _ = traced(scenario)
    assert spans
    leaked = [text for text in strings_in(spans) if CANARY in text or "invoice1" in text]
    assert leaked == []
    for span in spans:
        assert "gen_ai.memory.records" not in span["attributes"]
        assert "gen_ai.memory.query.text" not in span["attributes"]


def test_with_the_opt_in_spans_hold_queries_and_records(traced: Traced) -> None:
    spans, _ = traced("recall", env=CAPTURE)
    appended = json.loads(named(spans, "create_memory")[0]["attributes"]["gen_ai.memory.records"])
    assert appended[0]["content"] == f"note 0 about {CANARY} and the invoice0 totals"
    assert appended[0]["metadata"] == {"seq": 1, "role": "user", "kind": "USER_MESSAGE"}
    searches = named(spans, "search_memory")
    assert {span["attributes"]["gen_ai.memory.query.text"] for span in searches} == {
        f"invoice1 {CANARY}",  # the recall's words, as searched
        f"invoice2 {CANARY}",
        CANARY,
    }
    found = json.loads(searches[1]["attributes"]["gen_ai.memory.records"])
    assert any("invoice2" in record["content"] for record in found)
    assert all({"id", "content", "score"} <= set(record) for record in found)

    spans, _ = traced("long_term", env=CAPTURE)
    written = json.loads(spans[0]["attributes"]["gen_ai.memory.records"])
    assert written == [{"id": "editor", "content": f"{CANARY} vim"}]
    assert spans[3]["status"] == "ERROR" and spans[3]["events"] == ["exception"]

    spans, _ = traced("consolidation", env=CAPTURE)
    records = json.loads(only(spans, "upsert_memory")["attributes"]["gen_ai.memory.records"])
    assert any(CANARY in record["content"] for record in records)


@pytest.mark.parametrize("value", ["SPAN_ONLY", "span_and_event", "True"])
def test_the_conventions_spellings_of_the_opt_in(traced: Traced, value: str) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    spans, _ = traced("long_term", env=env)
    assert "gen_ai.memory.records" in spans[0]["attributes"]


@pytest.mark.parametrize("value", ["false", "EVENT_ONLY", "NO_CONTENT", ""])
def test_other_values_keep_content_out(traced: Traced, value: str) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    spans, _ = traced("long_term", env=env)
    assert not any("gen_ai.memory.records" in span["attributes"] for span in spans)


#: Makes ``import opentelemetry`` fail, as in an environment without it, then uses memstore.
WITHOUT_OPENTELEMETRY = """
import asyncio, sys

class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"no module named {name!r} (blocked)")
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
try:
    import opentelemetry.trace
    raise SystemExit("opentelemetry was importable")
except ImportError:
    pass

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.memory import tracing

async def main():
    async with MemoryStore.open(sys.argv[1]) as store:
        memory = store.session("s", limits=MemoryLimits(hard=40, target=20, keep_recent=2),
                               estimator=WordEstimator(), scope="user:alice", recall_budget=10)
        for i in range(8):
            await memory.add("user", f"I prefer option {i} for the invoice{i} totals.")
        await memory.build_model_input(recall="invoice1")
        hits = await memory.search("invoice2")
        await memory.consolidate()
        await store.ltm.set("editor", "vim", scope="user:alice")
        await store.ltm.delete("editor", scope="user:alice")
        reports = await memory.reports()
        print(len(reports), len(hits))

asyncio.run(main())
assert tracing.start("probe") is tracing.OFF
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def run_program(program: str, db: Path) -> str:
    """What ``program`` prints, run in a fresh interpreter with ``db`` as its argument."""
    done = subprocess.run(
        [sys.executable, "-c", program, str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_opentelemetry_memstore_works_and_traces_nothing(tmp_path: Path) -> None:
    counts, loaded = run_program(WITHOUT_OPENTELEMETRY, tmp_path / "m.db").splitlines()
    compactions, hits = map(int, counts.split())
    assert compactions >= 1 and hits >= 1
    assert loaded == "[]"


#: The API imported before any provider is set (as the MCP SDK and pydantic-ai do): nothing
#: records; once the application sets the SDK's provider, memstore's spans appear.
API_FIRST = """
import asyncio, sys
import opentelemetry.trace as trace
from memstore import MemoryStore, WordEstimator
from memstore.memory import tracing

async def append(store, text):
    await store.session("s", estimator=WordEstimator()).add("user", text)

async def main():
    async with MemoryStore.open(sys.argv[1]) as store:
        await append(store, "before any provider")
        assert tracing.start("probe") is tracing.OFF
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        await append(store, "after the provider")
        print([span.name for span in exporter.get_finished_spans()])

asyncio.run(main())
"""


def test_spans_start_when_the_application_sets_its_provider(tmp_path: Path) -> None:
    assert run_program(API_FIRST, tmp_path / "m.db").strip() == "['create_memory']"
