"""What is recorded about a session: its header, its compactions' reports, its whole history.

Plain values, no I/O: the database layer builds and returns them; replay, the CLI and the MCP
server show them.
Items and limits are :mod:`memstore.core.values`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memstore.core.values import MemoryItem, MemoryLimits


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What one committed compaction did.

    Attributes:
        session_id: The compacted session.
        compaction_count: The session's running count; this compaction's number (1, 2, ...).
        before_tokens: Total when the compaction's snapshot was taken.
        after_tokens: Total right after it committed (appends made meanwhile included).
        items_dropped: LOW tool observations removed as noise (phase 1).
        items_summarized: Items folded into the summary (phase 2).
        items_evicted: Items removed to enforce the budget (phase 3).
        summary_error: Why the summarizer failed, or ``None``.
        removed: Each removed item's id mapped to ``"dropped"``, ``"summarized"`` or ``"evicted"``.
        summarizer: Name of the summarizer used (``None`` if phase 2 was not needed).
        trigger: ``"hard_limit"``, ``"summarize_every"`` or ``"manual"``.
        summary_action: ``"kept"``, ``"replaced"``, ``"trimmed"`` or ``"removed"``.
        summary_tokens: Estimated tokens of the summary after the compaction (``None``: none).
        worker_host: Host name of the worker that ran it.
        worker_pid: Process id of that worker.
        started_at: When the snapshot was taken (UTC).
        finished_at: When the commit finished (UTC).
        summarize_seconds: Time spent in the summarizer.
        snapshot_version: Session version the plan was made from.
        committed_version: Session version this compaction committed as.
        attempts: Plans made before this one committed (1 unless it lost a race).
        usage: Token usage a model summarizer reported, if any.
        took_over_from: The worker whose abandoned lease this compaction took over (it died
            or stalled holding it), or ``None``.
    """

    session_id: str
    compaction_count: int
    before_tokens: int
    after_tokens: int
    items_dropped: int
    items_summarized: int
    items_evicted: int
    summary_error: str | None
    removed: Mapping[str, str]
    summarizer: str | None = None
    trigger: str = "hard_limit"
    summary_action: str = "kept"
    summary_tokens: int | None = None
    worker_host: str = ""
    worker_pid: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    summarize_seconds: float = 0.0
    snapshot_version: int = 0
    committed_version: int = 0
    attempts: int = 1
    usage: Mapping[str, Any] | None = field(default=None)
    took_over_from: str | None = None

    @property
    def duration_seconds(self) -> float:
        """Wall time from snapshot to commit."""
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return (self.finished_at - self.started_at).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        out["duration_seconds"] = self.duration_seconds
        return out


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's header: counters, totals and the limits it was last written with.

    Attributes:
        id: The session id.
        version: The event clock (increments with every append and compaction).
        estimator: Name of the estimator that counted it.
        items_total, active_items: Items ever appended; items in working memory now.
        total_tokens: Total estimated tokens (items + 4 each, summary + 12).
        summary_tokens: Tokens of the summary (``None``: no summary).
        compaction_count, limits: Compactions committed; the limits of the last append.
        created_at, updated_at: When the first item arrived; when the last change committed.
        parent_id: The session this one was forked from (``None``: not a fork).
        parent_version: The parent's version the fork started at.
        scope: The long-term scope the session belongs to (``None``: none).
    """

    id: str
    version: int
    estimator: str
    items_total: int
    active_items: int
    total_tokens: int
    summary_tokens: int | None
    compaction_count: int
    limits: MemoryLimits
    created_at: datetime
    updated_at: datetime
    parent_id: str | None = None
    parent_version: int | None = None
    scope: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "version": self.version,
            "estimator": self.estimator,
            "items_total": self.items_total,
            "active_items": self.active_items,
            "total_tokens": self.total_tokens,
            "summary_tokens": self.summary_tokens,
            "compaction_count": self.compaction_count,
            "hard_limit": self.limits.hard,
            "target_limit": self.limits.target,
            "keep_recent": self.limits.keep_recent,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "parent_id": self.parent_id,
            "parent_version": self.parent_version,
            "scope": self.scope,
        }


@dataclass(frozen=True)
class SessionHistory:
    """Everything recorded about one session, for replay, export and audits.

    Attributes:
        info: The session's header as stored now.
        summary: The current summary as stored now.
        items: Every recorded item (active and removed), by seq.
        reports: Every recorded compaction, oldest first.
        summaries: The summary each compaction produced, by compaction number.
        base_version: Where the recorded history starts (0 unless ``prune`` removed some).
        base_summary: The summary in force at ``base_version``.
        base_summary_tokens: Its estimated tokens.
    """

    info: SessionInfo
    summary: str | None
    items: tuple[MemoryItem, ...]
    reports: tuple[CompactionReport, ...]
    summaries: Mapping[int, str]
    base_version: int = 0
    base_summary: str | None = None
    base_summary_tokens: int | None = None
