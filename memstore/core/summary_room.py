"""A summary's room: what a compaction leaves it, how phase 3 trims it to less, and what the
next fold starts from.

All are budget arithmetic over text, no heuristics of what a summary says: the policy
(:mod:`memstore.core.policy`) asks the summarizer for at most :func:`summary_room` tokens,
and when even that room shrinks (phase 3) :func:`trim_to_tokens` keeps the summary's head.

Phase 3 trims or removes the summary for room in the model input: a long pasted document
among the newest turns can fill the whole target. That frees the input, it is no judgement
of what the summary holds, so the next fold resumes the last summary a summarizer wrote
(:func:`summary_fate`); only a summarizer that found nothing worth keeping, or a cleared
session, ends it. Without this, one long paste would wipe everything a session had folded.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memstore.core.values import SUMMARY_OVERHEAD_TOKENS, MemoryItem

CountTokens = Callable[[str], int]

_PIECES = re.compile(r"\S+\s*")
_LINES = re.compile(r"[^\n]*\n*")


def summary_room(
    budget: int, remaining: Sequence[MemoryItem], leaving: Sequence[MemoryItem]
) -> int:
    """Tokens a new summary may take: the compaction's ``budget`` less the ``remaining``
    items that stay (those not ``leaving``: protected and pending ones) and the summary's
    framing; never below 0."""
    gone = {item.id for item in leaving}
    staying = sum(item.cost for item in remaining if item.id not in gone)
    return max(budget - staying - SUMMARY_OVERHEAD_TOKENS, 0)


def trim_to_tokens(text: str, budget: int, count_tokens: CountTokens) -> str:
    """The longest prefix of ``text`` counting at most ``budget`` tokens: whole lines when
    ``text`` has several (half a line can invert a fact; a stub such as ``Current`` says
    nothing), else words. The head is kept because both shipped summarizers put the
    objective and the constraints first; a heading left with no line under it goes too.
    """
    if "\n" in text.strip():
        lines = [line for line in _LINES.findall(text) if line]
        kept = _longest_prefix(lines, budget, count_tokens)
        while kept.endswith(":") and "\n" in kept:  # a heading whose lines did not fit
            kept = kept.rsplit("\n", 1)[0].rstrip()
        return "" if kept.endswith(":") else kept
    return _longest_prefix(_PIECES.findall(text), budget, count_tokens)


def _longest_prefix(pieces: list[str], budget: int, count_tokens: CountTokens) -> str:
    low, high = 0, len(pieces)
    while low < high:  # binary search: O(log n) token counts instead of n
        mid = (low + high + 1) // 2
        if count_tokens("".join(pieces[:mid]).strip()) <= budget:
            low = mid
        else:
            high = mid - 1
    return "".join(pieces[:low]).strip()


#: What a compaction did to the summary the next fold starts from (:func:`summary_fate`).
WROTE, ENDED, KEPT = "wrote", "ended", "kept"


def summary_fate(trigger: str, action: str, summarized: int, error: str | None) -> str:
    """What a compaction (its trigger, ``summary_action``, items summarized and summary
    error) did to the summary a later fold starts from:

    * :data:`WROTE`: a summarizer wrote it (``replaced``; or ``trimmed`` in the same
      compaction, whose untrimmed answer was never stored);
    * :data:`ENDED`: it is gone for good: the summarizer read the items and found nothing
      worth keeping, or the session was cleared;
    * :data:`KEPT`: unchanged, or trimmed or removed for room only: a fold resumes the last
      summary written.
    """
    if action == "replaced" or (action == "trimmed" and summarized):
        return WROTE
    if trigger == "clear" or (action == "removed" and summarized and error is None):
        return ENDED  # a clear ends even a summary already set aside
    return KEPT


def newest_within(items: Sequence[MemoryItem], max_tokens: int) -> tuple[MemoryItem, ...]:
    """The newest of ``items`` (oldest first) whose costs sum to at most ``max_tokens``, in
    order: the items evicted unread that a fold reads (it reads at most a session's worth)."""
    kept: list[MemoryItem] = []
    for item in reversed(items):
        if item.cost > max_tokens:
            break
        max_tokens -= item.cost
        kept.append(item)
    return tuple(reversed(kept))
