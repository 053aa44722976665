"""What an imported ledger must satisfy as a whole, checked before anything is written.

An export file is untrusted input: an edited one could say an item of 5,000 words costs one
token, and ``build_model_input`` would then return 5,000 words for a hard limit of 100.
:mod:`memstore.db.transfer` checks each record against its column (types, ranges, storable
text); this module checks what the records say together, in this order:

1. **the limits are limits** (``hard_limit >= 1``, ``target_limit < hard_limit``, ...), as
   :class:`~memstore.core.values.MemoryLimits` demands of a live session;
2. **every token count is recounted** with the session's recorded estimator, a carried item
   exactly as ``add_items`` counts it (:func:`memstore.core.carried_items.count_tokens`), and
   must equal what the record says; so must the summaries';
3. **each removal is whole**: an item with a fate names the compaction that removed it and
   the version it did, and one without has neither;
4. **the cached counters add up**: the session's item, active-item, token, version and
   summary counters, and each compaction's dropped/summarized/evicted tallies, equal what
   the rows say;
5. **every invariant ``memstore check`` verifies** (:mod:`memstore.core.invariants`) holds;
6. **fork and origin metadata are a fork's** (:func:`check_lineage`): a session is not its
   own parent and starts at a version >= 1; only a fork's copies of its parent's items (those
   added by its ``parent_version``) carry an ``origin_id``, each a different one and none an
   item of the file itself; item ids and idempotency keys are not repeated. What those fields
   must match in the database (the parent exists and reached that version, the copies are the
   parent's, no item id is taken) is checked in the import's transaction
   (:mod:`memstore.db.import_lineage`).

The first failure raises a :class:`~memstore.errors.ValidationError` whose field names the
record (``record 7``: 1-based, in the file's order) and its field (``record 7.estimated_tokens``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memstore.core.carried_items import count_tokens, parse_item
from memstore.core.invariants import Ledger, check_ledger
from memstore.core.values import ITEM_OVERHEAD_TOKENS, MemoryLimits
from memstore.errors import ConfigurationError, ValidationError

#: A session record's columns that :class:`MemoryLimits` checks, by the limit's name.
_LIMIT_COLUMNS = {"hard": "hard_limit", "target": "target_limit", "keep_recent": "keep_recent"}
#: Session columns filled by the database when a record leaves them out (older exports).
_SESSION_DEFAULTS: dict[str, Any] = {
    "pruned_items": 0,
    "pruned_compactions": 0,
    "base_version": 0,
    "base_summary": None,
    "base_summary_tokens": None,
    "summary": None,
    "summary_tokens": None,
}
_ITEM_DEFAULTS: dict[str, Any] = {
    "fate": None,
    "removed_by": None,
    "removed_version": None,
    "payload": None,
}


@dataclass(frozen=True)
class Record:
    """One checked record: where it was (``record 7``), its type and its column values."""

    where: str
    kind: str
    values: dict[str, Any]

    def field(self, name: str) -> str:
        """``record 7.name``: how an error names one of its fields."""
        return f"{self.where}.{name}"


def check_import(records: Sequence[Record], count: Callable[[str], int], max_bytes: int) -> None:
    """Raise unless the records make a ledger ``memstore check`` would pass (module docstring).

    Args:
        records: The session record first, then its compactions, items and summaries.
        count: The session's recorded estimator.
        max_bytes: The store's item size limit (a carried item is re-parsed with it).

    Raises:
        ValidationError: naming the record and the field that is wrong.
    """
    session = records[0]
    values = _SESSION_DEFAULTS | session.values
    _check_limits(session, values)
    items = [r for r in records if r.kind == "item"]
    comps = [r for r in records if r.kind == "compaction"]
    summaries = [r for r in records if r.kind == "summary"]
    for item in items:
        _check_item(item, count, max_bytes)
    _check_counts(session, values, count, summaries)
    _check_session_counters(session, values, items)
    _check_tallies(comps, items)
    check_lineage(session, items)
    ledger = Ledger(
        session=values,
        items=[_ITEM_DEFAULTS | r.values for r in items],
        compactions=[r.values for r in comps],
        summaries=[r.values for r in summaries],
    )
    for violation in check_ledger(ledger):
        raise ValidationError("records", f"the ledger would fail memstore check: {violation}")


def _check_limits(session: Record, values: dict[str, Any]) -> None:
    try:
        MemoryLimits(
            hard=values["hard_limit"],
            target=values["target_limit"],
            keep_recent=values["keep_recent"],
        )
    except ConfigurationError as error:
        message = str(error).split(": ", 1)[-1]
        raise ValidationError(session.field(_LIMIT_COLUMNS[error.field]), message) from None


def _recount(item: Record, count: Callable[[str], int], max_bytes: int) -> int:
    payload = item.values.get("payload")
    if payload is None:
        return count(item.values["content"])
    field = item.field("payload")
    try:
        value = json.loads(payload)
    except RecursionError:
        raise ValidationError(field, "is nested too deeply") from None
    except ValueError:
        raise ValidationError(field, "is not JSON") from None
    try:
        return count_tokens(parse_item(value, field, max_bytes=max_bytes), count)
    except RecursionError:
        raise ValidationError(field, "is nested too deeply") from None


def _check_item(item: Record, count: Callable[[str], int], max_bytes: int) -> None:
    values = _ITEM_DEFAULTS | item.values
    recorded, counted = values["estimated_tokens"], _recount(item, count, max_bytes)
    if recorded != counted:
        raise ValidationError(
            item.field("estimated_tokens"),
            f"says {recorded}, but the session's estimator counts {counted}",
        )
    removed = values["fate"] is not None
    for name in ("removed_by", "removed_version"):
        if removed and values[name] is None:
            raise ValidationError(item.field(name), f"is missing for fate {values['fate']!r}")
        if not removed and values[name] is not None:
            raise ValidationError(item.field("fate"), f"is missing, yet {name} is set")


def _check_counts(
    session: Record, values: dict[str, Any], count: Callable[[str], int], summaries: list[Record]
) -> None:
    for summary in summaries:
        counted = count(summary.values["content"])
        if summary.values["estimated_tokens"] != counted:
            raise ValidationError(
                summary.field("estimated_tokens"),
                f"says {summary.values['estimated_tokens']}, but the estimator counts {counted}",
            )
    for text, tokens in (("summary", "summary_tokens"), ("base_summary", "base_summary_tokens")):
        if values[text] is not None and values[tokens] != count(values[text]):
            raise ValidationError(
                session.field(tokens),
                f"says {values[tokens]}, but the estimator counts {count(values[text])}",
            )


def _check_session_counters(session: Record, values: dict[str, Any], items: list[Record]) -> None:
    active = [r.values for r in items if r.values.get("fate") is None]
    expected = {
        "last_seq": len(items) + values["pruned_items"],
        "active_items": len(active),
        "active_tokens": sum(v["estimated_tokens"] + ITEM_OVERHEAD_TOKENS for v in active),
        "version": values["last_seq"] + values["compaction_count"],
    }
    for name, should in expected.items():
        if values[name] != should:
            raise ValidationError(
                session.field(name), f"says {values[name]}, the records make it {should}"
            )


def _check_tallies(comps: list[Record], items: list[Record]) -> None:
    tally: Counter[tuple[Any, Any]] = Counter(
        (r.values.get("removed_by"), r.values.get("fate")) for r in items
    )
    for comp in comps:
        number = comp.values["number"]
        for fate in ("dropped", "summarized", "evicted"):
            column = f"items_{fate}"
            if comp.values[column] != tally[(number, fate)]:
                raise ValidationError(
                    comp.field(column),
                    f"says {comp.values[column]}, {tally[(number, fate)]} item records carry it",
                )


def check_lineage(session: Record, items: Sequence[Record]) -> None:
    """What the records say about forks and origins, checked among themselves (rule 6).

    Raises:
        ValidationError: naming the record and the field that is wrong.
    """
    parent, at = session.values.get("parent_id"), session.values.get("parent_version")
    if parent is not None and parent == session.values["id"]:
        raise ValidationError(session.field("parent_id"), "names the session itself")
    if at is not None and at < 1:
        raise ValidationError(session.field("parent_version"), f"must be >= 1, got {at}")
    ids: set[str] = set()
    keys: set[str] = set()
    for item in items:
        item_id, key = item.values["id"], item.values.get("idempotency_key")
        if item_id in ids:
            raise ValidationError(item.field("id"), f"repeats item id {item_id!r}")
        if key is not None and key in keys:
            raise ValidationError(item.field("idempotency_key"), f"repeats key {key!r}")
        ids.add(item_id)
        if key is not None:
            keys.add(key)
    origins: set[str] = set()
    for item in items:
        origin = item.values.get("origin_id")
        copied = at is not None and item.values["added_version"] <= at
        if origin is None:
            if copied:
                raise ValidationError(
                    item.field("origin_id"),
                    f"is missing: the item was added by version {at}, so it is a copy of the "
                    f"parent's",
                )
            continue
        if not copied:
            whose = "the session is no fork" if at is None else f"it was added after version {at}"
            raise ValidationError(
                item.field("origin_id"),
                f"only a fork's copies of its parent's items have one; {whose}",
            )
        if origin in ids:
            raise ValidationError(item.field("origin_id"), "names an item of the session itself")
        if origin in origins:
            raise ValidationError(item.field("origin_id"), f"repeats origin {origin!r}")
        origins.add(origin)
