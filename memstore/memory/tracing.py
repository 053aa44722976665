"""OpenTelemetry spans of memory operations, named after the GenAI semantic conventions.

memstore never imports OpenTelemetry and never configures it. An application that traces has
imported the API and set a tracer provider (the SDK's, logfire's...); memstore then records
each memory operation as a span of the application's trace. What a span costs follows:

* the API not installed, or installed and never imported: each helper below looks one key up
  in ``sys.modules`` and returns :data:`OFF`, whose methods do nothing;
* the API imported with no SDK behind it (the MCP SDK and pydantic-ai import it): the API's
  no-op tracer hands out a span that does not record, and the helper returns :data:`OFF`
  without making it current or computing a single attribute;
* a provider that records: a real span, current while the operation runs, so what the
  operation causes nests under it (a compaction under the append that set it off, a
  consolidation and a summarizer's model call under the compaction).

**Names.** An operation the conventions name takes that name, as span name and
``gen_ai.operation.name`` (an append ``create_memory``, a search or a recall ``search_memory``,
a long-term write or a consolidation ``upsert_memory``...); compaction and the model input,
which they lack, are ``memstore.compact`` and ``memstore.build_model_input``. The session id is
``gen_ai.conversation.id``, the long-term scope ``gen_ai.memory.store.id``, memstore's figures
``memstore.*``; docs/observability.md maps them all. Spans are ``INTERNAL``: memstore runs in
the caller's process.

**Content.** No stored text enters a span unless the process opts in the conventions' way:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` set to ``true``, ``SPAN_ONLY`` or
``SPAN_AND_EVENT``. Then ``gen_ai.memory.query.text`` holds a search's query and
``gen_ai.memory.records`` the records written or found (JSON), and failures carry their
exception event. Ids, scopes, keys, counts, token figures and memstore's own error messages
(written to name fields, never content) are always recorded.

**Failures.** An exception leaving an operation sets the span's status to ERROR and
``error.type`` to its class. A compaction whose summarizer failed committed, but its status
is ERROR too: what the summary should have kept was evicted.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from memstore.core.records import CompactionReport
from memstore.errors import MemstoreError
from memstore.version import __version__

if TYPE_CHECKING:
    from memstore.core.consolidation_report import ConsolidationReport
    from memstore.core.ltm_entries import LongTermEntry
    from memstore.core.search_terms import SearchHit, SearchScope
    from memstore.core.values import MemoryItem

#: The module an application that traces has imported: memstore only looks for it.
API_MODULE = "opentelemetry.trace"
#: The instrumentation scope memstore's spans carry (with memstore's version).
SCOPE_NAME = "memstore"
#: The conventions' opt-in for content in spans, shared with every GenAI instrumentation.
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Its values that put content on spans: the boolean of earlier instrumentations and the two
#: span modes of the later ones (``EVENT_ONLY``: memstore emits no events, so nothing).
CAPTURE_ON = frozenset({"true", "span_only", "span_and_event"})

# The conventions' operations (gen_ai.operation.name), and memstore's own span names.
CREATE_MEMORY = "create_memory"
UPDATE_MEMORY = "update_memory"
UPSERT_MEMORY = "upsert_memory"
DELETE_MEMORY = "delete_memory"
SEARCH_MEMORY = "search_memory"
COMPACT = "memstore.compact"
BUILD_MODEL_INPUT = "memstore.build_model_input"

# The conventions' attributes.
OPERATION = "gen_ai.operation.name"
CONVERSATION = "gen_ai.conversation.id"
STORE = "gen_ai.memory.store.id"
RECORD_ID = "gen_ai.memory.record.id"
RECORD_COUNT = "gen_ai.memory.record.count"
QUERY_TEXT = "gen_ai.memory.query.text"
RECORDS = "gen_ai.memory.records"
ERROR_TYPE = "error.type"

#: The compaction report's fields a ``memstore.compact`` span carries, each as
#: ``memstore.compaction.<field>``: its figures, never its text.
COMPACTION_FIGURES = (
    "compaction_count", "before_tokens", "after_tokens", "items_dropped", "items_summarized",
    "items_evicted", "summary_error", "summarizer", "summary_action", "summary_tokens",
    "summarize_seconds", "attempts", "committed_version", "took_over_from",
)  # fmt: skip

#: memstore's tracer, once the application imported the API (a proxy until it sets a provider).
_tracer: Any = None


def _started(name: str) -> Any:
    """A recording span of memstore's tracer (kind ``INTERNAL``, the API's default), or
    ``None`` while nothing records."""
    global _tracer
    if _tracer is None:
        from opentelemetry import trace

        _tracer = trace.get_tracer(SCOPE_NAME, __version__)
    span = _tracer.start_span(name)
    if span.is_recording():
        return span
    span.end()
    return None


def capture_content() -> bool:
    """Whether the process opted in to stored text in spans (:data:`CAPTURE_CONTENT`)."""
    return os.environ.get(CAPTURE_CONTENT, "").strip().lower() in CAPTURE_ON


class Recalled(Protocol):
    """A recall block, as a span reports it (:mod:`memstore.render.recall`'s, or a scope's)."""

    @property
    def hits(self) -> Sequence[SearchHit]: ...

    @property
    def tokens(self) -> int: ...


class MemorySpan:
    """One memory operation's span: a context manager that makes it current while it runs.

    :data:`OFF` (nothing records) has the same methods, each doing nothing; the others set
    attributes only on a span that records, and return what they were given.
    """

    def __init__(self, span: Any = None) -> None:
        self._span = span
        self._token: Any = None

    @property
    def recording(self) -> bool:
        """Whether this span records (``False`` for :data:`OFF`)."""
        return self._span is not None

    def __enter__(self) -> MemorySpan:
        if self._span is not None:
            from opentelemetry import context, trace

            self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._span is None:
            return
        from opentelemetry import context

        try:
            if error is not None:
                self._failed(error)
        finally:
            context.detach(self._token)
            self._span.end()

    def set(self, key: str, value: Any) -> None:
        """Set one attribute (``None``: left unset)."""
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def update(self, attributes: Mapping[str, Any]) -> None:
        """Set several attributes (``None`` values left unset)."""
        if self._span is None:
            return
        for key, value in attributes.items():
            self.set(key, value)

    def content(self, key: str, value: Callable[[], Any]) -> None:
        """Set ``key`` to ``value()`` (JSON unless text), only when content capture is on."""
        if self._span is not None and capture_content():
            found = value()
            self.set(key, found if isinstance(found, str) else _json(found))

    def fail(self, description: str) -> None:
        """Mark the operation failed though it returned (status ERROR)."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_status(Status(StatusCode.ERROR, description))

    def _failed(self, error: BaseException) -> None:
        self.set(ERROR_TYPE, type(error).__qualname__)
        ours = isinstance(error, MemstoreError)  # their messages name fields, never content
        self.fail(str(error) if ours else type(error).__qualname__)
        if capture_content():
            self._span.record_exception(error)

    # -- what each operation reports ----------------------------------------------------------

    def appended(self, stored: MemoryItem | Sequence[MemoryItem]) -> None:
        """An append's items (one, or a batch)."""
        if self._span is None:
            return
        items = list(stored) if isinstance(stored, Sequence) else [stored]
        self.set(RECORD_COUNT, len(items))
        if len(items) == 1:
            self.update({RECORD_ID: items[0].id, "memstore.item.kind": items[0].kind.value})
        if items:
            self.set("memstore.item.seq", items[-1].seq)
        self.set("memstore.item.tokens", sum(item.estimated_tokens for item in items))
        self.content(RECORDS, lambda: [_item_record(item) for item in items])

    def found(self, hits: list[SearchHit]) -> list[SearchHit]:
        """A search's hits."""
        if self._span is not None:
            self.set(RECORD_COUNT, len(hits))
            self.content(RECORDS, lambda: [_hit_record(hit) for hit in hits])
        return hits

    def recalled(self, candidates: int, block: Recalled | None) -> None:
        """A model input's recall: how many passages matched, and the block of those that fit
        (``None``: none did)."""
        if self._span is None:
            return
        shown = () if block is None else block.hits
        self.update(
            {
                RECORD_COUNT: len(shown),
                "memstore.recall.candidates": candidates,
                "memstore.recall.tokens": 0 if block is None else block.tokens,
            }
        )
        self.content(RECORDS, lambda: [_hit_record(hit) for hit in shown])

    def compacted(self, outcome: object) -> None:
        """A compaction call's outcome: its (last) report, the lease's holder, or nothing."""
        if self._span is None:
            return
        if isinstance(outcome, CompactionReport):
            self.set("memstore.compaction.outcome", "committed")
            for field in COMPACTION_FIGURES:
                self.set(f"memstore.compaction.{field}", getattr(outcome, field))
            if outcome.summary_error is not None:
                self.fail(f"summarizer failed: {outcome.summary_error}")
        elif outcome is None:
            self.set("memstore.compaction.outcome", "nothing")
        else:  # a LeaseHolder: another worker is compacting the session
            self.update(
                {
                    "memstore.compaction.outcome": "lease_held",
                    "memstore.lease.holder": getattr(outcome, "owner", None),
                    "memstore.lease.expires_in": getattr(outcome, "expires_in", None),
                }
            )

    def consolidated(self, report: ConsolidationReport | None) -> None:
        """A consolidation run's report (``None``: another worker held the lease)."""
        if self._span is None:
            return
        if report is None:
            self.set("memstore.consolidation.outcome", "lease_held")
            return
        writes = [d for d in report.decisions if d.writes]
        self.update(
            {
                STORE: report.scope,
                RECORD_COUNT: len(writes),
                "memstore.consolidation.outcome": "committed" if report.number else "nothing",
                "memstore.consolidation.number": report.number,
                "memstore.consolidation.dry_run": report.dry_run,
                "memstore.consolidation.extractor": report.extractor,
                "memstore.consolidation.compaction": report.compaction,
                "memstore.consolidation.items": len(report.items),
                "memstore.consolidation.source_tokens": report.source_tokens,
                "memstore.consolidation.budget": report.budget,
                "memstore.consolidation.entry_tokens": report.entry_tokens,
                "memstore.consolidation.proposed": report.proposed,
                "memstore.consolidation.written": len(report.written),
                "memstore.consolidation.superseded": len(report.superseded),
                "memstore.consolidation.skipped": len(report.skipped),
            }
        )
        self.content(RECORDS, lambda: [{"id": d.key, "content": d.text} for d in writes])

    def entry(self, scope: str, key: str) -> None:
        """The long-term entry an operation addresses (validated)."""
        self.update({STORE: scope, RECORD_ID: key})

    def written(self, entry: LongTermEntry) -> LongTermEntry:
        """A long-term entry as stored."""
        if self._span is not None:
            self.update({RECORD_COUNT: 1, "memstore.ltm.version": entry.version})
            self.content(RECORDS, lambda: [{"id": entry.key, "content": entry.value}])
        return entry


#: The span of every operation while nothing records.
OFF = MemorySpan()


def start(
    name: str,
    *,
    operation: str | None = None,
    conversation: str | None = None,
    store: str | None = None,
) -> MemorySpan:
    """A span of the operation ``name`` (:data:`OFF` while nothing records), for ``with``.

    Args:
        name: The span's name: a convention's operation, or ``memstore.*``.
        operation: ``gen_ai.operation.name`` (``None``: an operation the conventions lack).
        conversation: The session id (``gen_ai.conversation.id``).
        store: The long-term scope (``gen_ai.memory.store.id``).
    """
    if _tracer is None and API_MODULE not in sys.modules:
        return OFF  # nobody imported the API: no provider can be set
    started = _started(name)
    if started is None:
        return OFF
    span = MemorySpan(started)
    # Set once the span records (no sampler needs them: the conventions mark none of a memory
    # span's attributes as relevant to sampling).
    span.update({OPERATION: operation, CONVERSATION: conversation, STORE: store})
    return span


def searching(query: str, scope: SearchScope) -> MemorySpan:
    """A ``search_memory`` span for a search of ``scope``."""
    sessions = scope.sessions
    one = sessions[0] if sessions is not None and len(sessions) == 1 else None
    span = start(SEARCH_MEMORY, operation=SEARCH_MEMORY, conversation=one)
    if span.recording:
        span.update(
            {
                "memstore.search.sessions": None if sessions is None else list(sessions),
                "memstore.search.scopes": None if scope.scopes is None else list(scope.scopes),
                "memstore.search.include_active": scope.include_active,
            }
        )
        span.content(QUERY_TEXT, lambda: query)
    return span


def recalling(session_id: str, terms: Sequence[str], scope: str | None = None) -> MemorySpan:
    """A ``search_memory`` span for the recall of a model input (its query's words)."""
    span = start(SEARCH_MEMORY, operation=SEARCH_MEMORY, conversation=session_id, store=scope)
    span.content(QUERY_TEXT, lambda: " ".join(terms))
    return span


def entry_write(expected_version: object) -> str:
    """The operation a long-term ``set`` is: it may create or replace the entry
    (``upsert_memory``), only create it (``expected_version=0``: ``create_memory``) or only
    replace a known version (``update_memory``)."""
    if expected_version is None:
        return UPSERT_MEMORY
    return CREATE_MEMORY if expected_version == 0 else UPDATE_MEMORY


class _Handle(Protocol):
    session_id: str


H = TypeVar("H", bound=_Handle)
P = ParamSpec("P")
R = TypeVar("R")


def traced_append(
    method: Callable[Concatenate[H, P], Awaitable[R]],
) -> Callable[Concatenate[H, P], Awaitable[R]]:
    """Wrap a handle's append in a ``create_memory`` span: validation, the write and any
    compaction it sets off (a child span) included."""

    @functools.wraps(method)
    async def append(handle: H, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with start(CREATE_MEMORY, operation=CREATE_MEMORY, conversation=handle.session_id) as span:
            stored = await method(handle, *args, **kwargs)
            span.appended(stored)  # type: ignore[arg-type]
            return stored

    return append


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _item_record(item: MemoryItem) -> dict[str, Any]:
    metadata = {"seq": item.seq, "role": item.role.value, "kind": item.kind.value}
    return {"id": item.id, "content": item.content, "metadata": metadata}


def _hit_record(hit: SearchHit) -> dict[str, Any]:
    if hit.item is not None:
        record_id = hit.item.id
    elif hit.entry is not None:
        record_id = f"{hit.entry.scope}/{hit.entry.key}"
    else:
        record_id = f"{hit.session_id}/summary/{hit.compaction}"
    metadata = dict(source=hit.source, session_id=hit.session_id, seq=hit.seq, fate=hit.fate)
    return {"id": record_id, "content": hit.text, "score": hit.score, "metadata": metadata}
