"""The extractive summarizer: the offline default, deterministic, no model, no network.

It folds the previous summary and the items leaving working memory into one new summary
(:class:`~memstore.extraction.protocols.Summarizer`): the summary is read back into its facts
(:func:`memstore.extraction.digest.parse_summary`), the items' facts are added
(:func:`memstore.extraction.facts.extract`), and the whole is fitted to the room the
compaction gives it by whole lines, those that say least per token first
(:mod:`memstore.extraction.summary_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.core.tokens import TokenEstimator, WordEstimator
from memstore.core.values import MemoryItem
from memstore.extraction.digest import Digest, parse_summary
from memstore.extraction.facts import extract
from memstore.extraction.protocols import CountTokens, SummaryText
from memstore.extraction.summary_fit import fit_summary

#: A summary of its own that is not asked for a budget: room for ~25 facts while a
#: 900-token target keeps more than half of itself for the recent items.
DEFAULT_MAX_TOKENS = 400


class ExtractiveSummarizer:
    """The offline default summarizer: deterministic, no model, no network.

    It keeps what happened (:mod:`memstore.extraction.facts`): every call with the values it
    returned, the newest request, the user's constraints, decisions and stated preferences,
    answered questions as facts, statements about people, places, dates, numbers and plans
    in their own words (dated when the session spans days), and the questions nothing
    answered. It drops greetings, acknowledgements, repetition and LOW tool output, and fits
    its budget by dropping whole lines, those that add least per token first.

    Args:
        max_tokens: A cap on the summary. A compaction gives the summarizer the room its
            target leaves (in the session's tokens), and the summary fills at most that
            room, and at most this cap when one is set; called without a room, the
            summary fits this cap, else :data:`DEFAULT_MAX_TOKENS`.
        estimator: Counts the cap when the compaction does not pass the session's own
            count; :class:`~memstore.WordEstimator` by default.
    """

    name = "extractive"

    def __init__(
        self, max_tokens: int | None = None, estimator: TokenEstimator | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.estimator: TokenEstimator = estimator or WordEstimator()

    async def __call__(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
    ) -> str:
        """Return the new summary (the same inputs always give the same text)."""
        return self.summarize(
            previous_summary, items, max_tokens=max_tokens, count_tokens=count_tokens
        )

    def summarize(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
    ) -> str:
        """The synchronous core, used by replay's what-if simulation.

        Args:
            previous_summary: The summary so far, folded in.
            items: The items leaving working memory, oldest first.
            max_tokens: The room the compaction leaves the summary (capped by the
                summarizer's own ``max_tokens`` when it has one).
            count_tokens: How that room is counted (default: the summarizer's estimator).
        """
        digest = _fold(previous_summary, items)
        if not (digest.facts.facts or digest.questions or digest.objective or digest.other):
            return SummaryText.nothing()  # nothing worth keeping: an answer, not a failure
        budget = self.max_tokens if max_tokens is None else max_tokens
        if self.max_tokens is not None:
            budget = min(budget if budget is not None else self.max_tokens, self.max_tokens)
        room = DEFAULT_MAX_TOKENS if budget is None else budget
        count = count_tokens or self.estimator.count
        # Not one whole line fits: the worthiest line's head does (fit_summary), or the room
        # is too small to say anything (no summary then, and no failure: phase 3 bounds it).
        return fit_summary(digest, room, count) or SummaryText.nothing()


def _fold(previous_summary: str | None, items: Sequence[MemoryItem]) -> Digest:
    """The previous summary read back, with what ``items`` establish added to it."""
    digest = parse_summary(previous_summary)
    found = extract(
        items,
        said_on=digest.said_on or _newest_day(digest),
        marked=digest.marked,
        objective=digest.objective,
        speakers=digest.speakers,
    )
    for fact in found.facts:
        digest.facts.add(fact)
    known = {q.text.lower() for q in digest.questions}
    digest.questions += [q for q in found.open_questions if q.text.lower() not in known]
    digest.objective = found.objective
    digest.said_on = found.said_on
    digest.marked = found.marked
    digest.spans_days = digest.spans_days or found.spans_days
    return digest


def _newest_day(digest: Digest) -> str | None:
    """The newest day a summary's facts carry, when it wrote no day in force."""
    days = [fact.said_on for fact in digest.facts.facts if fact.said_on]
    return days[-1] if days else None
