"""Search hits from the rows of the ranking queries (:mod:`memstore.db.search`): an item's,
a summary's and a long-term entry's, each with its score, snippet and provenance."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from memstore.core.ltm_entries import LongTermEntry
from memstore.core.search_terms import SearchHit
from memstore.db.reads import ITEM_COLUMNS, row_to_item


def item_hit(row: Any, score: float | None = None, snippet: str | None = None) -> SearchHit:
    """An item's hit from a row of :data:`~memstore.db.reads.ITEM_COLUMNS` then its score and
    snippet (``score`` and ``snippet`` given: a row without them)."""
    item = row_to_item(row[: len(ITEM_COLUMNS)])
    return SearchHit(
        source="item",
        text=item.content,
        score=float(row.score) if score is None else score,
        snippet=row.snippet if snippet is None else snippet,
        session_id=item.session_id,
        seq=item.seq,
        fate=None if item.fate is None else item.fate.value,
        compaction=item.removed_by,
        version=item.version,
        item=item,
    )


def summary_hit(row: Any) -> SearchHit:
    """A summary's hit from a row of the summaries query."""
    return SearchHit(
        source="summary",
        text=row.content,
        score=float(row.score),
        snippet=row.snippet,
        session_id=row.session_id,
        fate=row.fate,
        compaction=row.compaction_number,
        version=row.created_version,
    )


def entry_hit(row: Any) -> SearchHit:
    """A long-term entry's hit: its key and its value as JSON."""
    entry = LongTermEntry(
        **{field.name: row._mapping[field.name] for field in fields(LongTermEntry)}
    )
    value = json.dumps(entry.value, ensure_ascii=False)
    return SearchHit(
        source="ltm",
        text=f"{entry.key}: {value}",
        score=float(row.score),
        snippet=row.snippet,
        entry=entry,
    )
