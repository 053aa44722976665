"""What a consolidation run decided, fact by fact, and the report it leaves.

Plain values: :mod:`memstore.extraction.slots` makes the decisions,
:mod:`memstore.db.consolidation_runs` stores the report with the run, ``memstore consolidate``
prints it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

WRITE = "write"
SUPERSEDE = "supersede"
SKIP = "skip"
OVER_BUDGET = "over the budget"


@dataclass(frozen=True)
class Decision:
    """What a run does (or, in a dry run, would do) with one proposed fact.

    Attributes:
        key: The slot's entry key.
        text: The fact's text (the value written).
        action: ``write`` (a new entry), ``supersede`` (a new version) or ``skip``.
        reason: Why it was skipped (``None`` otherwise).
        seqs: The items the fact was read from.
        said_on: When it was said (ISO 8601), if known.
        weight: The extractor's weight (heaviest first within the budget).
        expected_version: The version the write expects to find (0: none), for its
            compare-and-set.
        tokens: What the entry costs (key and text).
        replaced: The value it supersedes, if any.
    """

    key: str
    text: str
    action: str
    reason: str | None
    seqs: tuple[int, ...]
    said_on: str | None
    weight: float
    expected_version: int = 0
    tokens: int = 0
    replaced: Any = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {
            "key": self.key,
            "text": self.text,
            "action": self.action,
            "reason": self.reason,
            "seqs": list(self.seqs),
            "said_on": self.said_on,
            "tokens": self.tokens,
        }
        if self.replaced is not None:
            out["replaced"] = self.replaced
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """The decision :meth:`to_dict` gave (as a run's stored report holds it)."""
        return cls(
            key=data["key"],
            text=data["text"],
            action=data["action"],
            reason=data["reason"],
            seqs=tuple(data["seqs"]),
            said_on=data["said_on"],
            weight=0.0,
            tokens=data["tokens"],
            replaced=data.get("replaced"),
        )

    @property
    def writes(self) -> bool:
        """Whether it writes an entry version."""
        return self.action != SKIP

    @property
    def settled(self) -> bool:
        """Whether a later run must not propose it again: written, or left out for the
        budget (a copy of the same items would otherwise bring it back)."""
        return self.writes or self.reason == OVER_BUDGET


@dataclass(frozen=True)
class ConsolidationReport:
    """What one consolidation run proposed, wrote, superseded and skipped, and why.

    Attributes:
        session_id: The session consolidated.
        scope: The long-term scope its entries went to.
        number: The run's number in the session (``None``: a dry run, or nothing to do).
        dry_run: Nothing was written.
        extractor: Who extracted the facts (``extractive``, a model's name...).
        compaction: The compaction that triggered the run (``None``: asked for).
        items: The seqs of the items the run consumed.
        source_tokens: Their tokens.
        budget: Tokens the run's entries could hold: a fifth of what the session's runs
            consumed, less what earlier runs wrote.
        decisions: One per proposed fact.
        started_at: When the run started.
        finished_at: When it committed (or, for a dry run, finished).
        worker: ``host:pid`` of the worker that ran it.
    """

    session_id: str
    scope: str
    number: int | None
    dry_run: bool
    extractor: str
    compaction: int | None
    items: tuple[int, ...]
    source_tokens: int
    budget: int
    decisions: tuple[Decision, ...]
    started_at: datetime
    finished_at: datetime
    worker: str
    notes: tuple[str, ...] = field(default=())

    @property
    def proposed(self) -> int:
        """Facts the extractor proposed."""
        return len(self.decisions)

    @property
    def written(self) -> list[Decision]:
        """New entries."""
        return [d for d in self.decisions if d.action == WRITE]

    @property
    def superseded(self) -> list[Decision]:
        """New versions of existing entries."""
        return [d for d in self.decisions if d.action == SUPERSEDE]

    @property
    def skipped(self) -> list[Decision]:
        """Facts not written, each with its reason."""
        return [d for d in self.decisions if d.action == SKIP]

    @property
    def entry_tokens(self) -> int:
        """Tokens of what the run wrote."""
        return sum(d.tokens for d in self.decisions if d.writes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "session_id": self.session_id,
            "scope": self.scope,
            "number": self.number,
            "dry_run": self.dry_run,
            "extractor": self.extractor,
            "compaction": self.compaction,
            "items": list(self.items),
            "source_tokens": self.source_tokens,
            "budget": self.budget,
            "entry_tokens": self.entry_tokens,
            "proposed": self.proposed,
            "written": len(self.written),
            "superseded": len(self.superseded),
            "skipped": len(self.skipped),
            "decisions": [d.to_dict() for d in self.decisions],
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "worker": self.worker,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConsolidationReport:
        """The report :meth:`to_dict` gave (as :meth:`SessionMemory.consolidation_reports`
        reads it back)."""
        return cls(
            session_id=data["session_id"],
            scope=data["scope"],
            number=data["number"],
            dry_run=data["dry_run"],
            extractor=data["extractor"],
            compaction=data["compaction"],
            items=tuple(data["items"]),
            source_tokens=data["source_tokens"],
            budget=data["budget"],
            decisions=tuple(Decision.from_dict(d) for d in data["decisions"]),
            started_at=datetime.fromisoformat(data["started_at"]),
            finished_at=datetime.fromisoformat(data["finished_at"]),
            worker=data["worker"],
            notes=tuple(data.get("notes") or ()),
        )
