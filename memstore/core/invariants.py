"""The ledger's invariants, as pure code: what ``memstore check`` verifies.

For every session:

* **the ledger balances**: every appended item (seq 1..N, no gaps; after ``prune``, the
  pruned ones are counted on the session row) is either active or was removed by exactly
  one committed compaction, and the session's cached counters (items,
  active items, active tokens) equal what the item rows say;
* **the event clock adds up**: the session version equals appends + compactions, and the
  versions recorded by items and compactions are distinct and within it;
* **fates point at committed compactions** (1..N, no gaps or repeats), and each
  compaction's dropped/summarized/evicted counts equal the items that carry its number;
* **the summary is consistent**: the current summary is the last one produced (unless a
  later compaction removed it) and its token count matches;
* **a fork's parent exists**: a purge deletes a session's forks with it or refuses, so a fork
  naming a parent the database does not hold lost it to a purge that raced its creation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memstore.core.values import ITEM_OVERHEAD_TOKENS, Fate


@dataclass(frozen=True)
class Ledger:
    """Everything the invariants look at for one session."""

    session: dict[str, Any]
    items: list[dict[str, Any]]
    compactions: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    #: Whether the database holds the session's parent (``None``: not looked up, e.g. the
    #: ledger of an import, whose parent is checked against the database elsewhere).
    parent_found: bool | None = None


@dataclass(frozen=True)
class Violation:
    """One broken invariant."""

    session_id: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.session_id}: {self.rule}: {self.detail}"


#: How the checks report a violation: ``fail(rule, detail)``.
Fail = Callable[[str, str], None]


def check_ledger(ledger: Ledger) -> list[Violation]:
    """Every invariant the ledger breaks (empty: it is sound)."""
    sid = ledger.session["id"]
    found: list[Violation] = []

    def fail(rule: str, detail: str) -> None:
        found.append(Violation(sid, rule, detail))

    _check_items(ledger, fail)
    _check_compactions(ledger, fail)
    _check_clock(ledger, fail)
    _check_summary(ledger, fail)
    if ledger.parent_found is False:
        fail("fork", f"its parent {ledger.session['parent_id']!r} is not in the database")
    return found


def _check_items(ledger: Ledger, fail: Fail) -> None:
    session, items = ledger.session, ledger.items
    seqs = [item["seq"] for item in items]
    pruned = session["pruned_items"]
    if len(set(seqs)) != len(seqs) or any(not 1 <= seq <= session["last_seq"] for seq in seqs):
        fail("seq", f"item seqs are not distinct values in 1..{session['last_seq']}")
    elif not pruned and seqs != list(range(1, len(items) + 1)):
        fail("seq", f"item seqs are not 1..{len(items)} without gaps")
    if session["last_seq"] != len(items) + pruned:
        fail(
            "ledger",
            f"session counts {session['last_seq']} items, {len(items)} rows exist "
            f"and {pruned} were pruned",
        )
    active = [item for item in items if item["fate"] is None]
    if session["active_items"] != len(active):
        fail("ledger", f"session says {session['active_items']} active, rows say {len(active)}")
    tokens = sum(item["estimated_tokens"] + ITEM_OVERHEAD_TOKENS for item in active)
    if session["active_tokens"] != tokens:
        fail("tokens", f"cached active tokens {session['active_tokens']}, items sum to {tokens}")
    for item in items:
        removed = item["fate"] is not None
        if removed != (item["removed_by"] is not None) or removed != (
            item["removed_version"] is not None
        ):
            fail("fate", f"item seq {item['seq']} has a partial removal record")
        if item["fate"] not in (None, *(fate.value for fate in Fate)):
            fail("fate", f"item seq {item['seq']} has unknown fate {item['fate']!r}")


def _check_compactions(ledger: Ledger, fail: Fail) -> None:
    session, comps = ledger.session, ledger.compactions
    numbers = [c["number"] for c in comps]
    first = session["pruned_compactions"] + 1
    if numbers != list(range(first, session["compaction_count"] + 1)):
        fail(
            "compactions",
            f"compaction numbers {numbers[:5]}... are not {first}..{session['compaction_count']}",
        )
    by_number = {c["number"]: c for c in comps}
    tally: Counter[tuple[int, str]] = Counter()
    for item in ledger.items:
        if item["removed_by"] is None:
            continue
        comp = by_number.get(item["removed_by"])
        if comp is None:
            fail("fate", f"item seq {item['seq']} removed by uncommitted #{item['removed_by']}")
            continue
        tally[(item["removed_by"], item["fate"])] += 1
        if item["removed_version"] != comp["committed_version"]:
            fail("fate", f"item seq {item['seq']} removal version differs from its compaction")
        if item["added_version"] > comp["snapshot_version"]:
            fail("fate", f"item seq {item['seq']} removed by a compaction that never saw it")
    for comp in comps:
        for fate, column in (
            ("dropped", "items_dropped"),
            ("summarized", "items_summarized"),
            ("evicted", "items_evicted"),
        ):
            if tally[(comp["number"], fate)] != comp[column]:
                fail(
                    "report",
                    f"compaction #{comp['number']} reports {comp[column]} {fate}, "
                    f"{tally[(comp['number'], fate)]} items carry it",
                )


def _check_clock(ledger: Ledger, fail: Fail) -> None:
    session = ledger.session
    expected = session["last_seq"] + session["compaction_count"]
    if session["version"] != expected:
        fail("clock", f"version {session['version']} != appends + compactions ({expected})")
    versions = [item["added_version"] for item in ledger.items]
    versions += [c["committed_version"] for c in ledger.compactions]
    if len(set(versions)) != len(versions):
        fail("clock", "two commits recorded the same session version")
    if versions and (min(versions) < 1 or max(versions) > session["version"]):
        fail("clock", "a recorded version lies outside 1..session version")


def _check_summary(ledger: Ledger, fail: Fail) -> None:
    session = ledger.session
    if (session["summary"] is None) != (session["summary_tokens"] is None):
        fail("summary", "summary text and summary tokens disagree on whether one exists")
    if not ledger.compactions:
        if session["summary"] != session["base_summary"]:
            fail("summary", "the summary is neither the pruned base summary nor produced")
        return
    last = ledger.compactions[-1]
    if last["summary_action"] == "removed":
        if session["summary"] is not None:
            fail("summary", "the last compaction removed the summary, yet one is stored")
        return
    produced = [s for s in ledger.summaries if s["compaction_number"] <= last["number"]]
    if session["summary"] is not None:
        if not produced:
            if session["summary"] != session["base_summary"]:
                fail("summary", "the stored summary is not the last one produced")
        elif produced[-1]["content"] != session["summary"]:
            fail("summary", "the stored summary is not the last one produced")
        elif produced[-1]["estimated_tokens"] != session["summary_tokens"]:
            fail("summary", "summary tokens differ from the recorded summary")
