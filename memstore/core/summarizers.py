"""Summarizers: fold the previous summary and the items leaving memory into one new summary.

A summarizer is any async callable ``(previous_summary, items) -> str``. Two ship:

* :class:`ExtractiveSummarizer` (here), the offline default: deterministic, no model.
* :class:`~memstore.model_side.openai_summarizer.OpenAISummarizer`, which asks a model
  through the Responses API.

A summarizer that also takes keyword arguments ``max_tokens`` and ``count_tokens`` is told
the room the compaction's target leaves it and how the session counts tokens
(:func:`memstore.core.policy.summarizer_options`); others are called as before.

Either may fail; the store records the failure in the compaction report and still bounds
memory (phase 3), so a summarizer error never escapes ``add()``. A summarizer that knows
what its call cost returns a :class:`SummaryText` (a ``str`` carrying ``.usage``); the store
copies that usage into the report. One that found nothing worth keeping returns
:meth:`SummaryText.nothing`, which is not an error.

The extractive summary is a fixed layout of facts (:mod:`memstore.core.digest`), read back
by the next compaction so that no fact drifts; over its room, whole lines go, those that say
least per token first (:mod:`memstore.core.summary_fit`, which fits a model's summary too).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from memstore.core.digest import parse_summary
from memstore.core.facts import extract
from memstore.core.summary_fit import CountTokens, fit_summary
from memstore.core.tokens import TokenEstimator, WordEstimator
from memstore.core.values import SUMMARY_OVERHEAD_TOKENS, MemoryItem

Summarizer = Callable[[str | None, Sequence[MemoryItem]], Awaitable[str]]

#: A summary of its own that is not asked for a budget: room for ~25 facts while a
#: 900-token target keeps more than half of itself for the recent items.
DEFAULT_MAX_TOKENS = 400


class SummaryText(str):
    """A summary (a ``str``) that carries the token usage of the call that produced it.

    Attributes:
        usage: ``{"input_tokens": .., "output_tokens": .., "total_tokens": ..}`` or ``None``.
        kept_nothing: The summarizer read the items and found nothing worth keeping (an
            empty text that is an answer, not a failure).
    """

    usage: dict[str, Any] | None
    kept_nothing: bool

    def __new__(cls, text: str, usage: Mapping[str, Any] | None = None) -> SummaryText:
        obj = super().__new__(cls, text)
        obj.usage = None if usage is None else dict(usage)
        obj.kept_nothing = False
        return obj

    @classmethod
    def nothing(cls) -> SummaryText:
        """The answer of a summarizer that found nothing worth keeping."""
        obj = cls("")
        obj.kept_nothing = True
        return obj


def summarizer_name(summarizer: object) -> str:
    """The name recorded in reports: a ``name`` attribute, else the class or function name."""
    name = getattr(summarizer, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(summarizer, "__name__", type(summarizer).__name__)


def summary_room(
    budget: int, remaining: Sequence[MemoryItem], leaving: Sequence[MemoryItem]
) -> int:
    """Tokens a new summary may take: the compaction's ``budget`` less the ``remaining``
    items that stay (those not ``leaving``: protected and pending ones) and the summary's
    framing; never below 0."""
    gone = {item.id for item in leaving}
    staying = sum(item.cost for item in remaining if item.id not in gone)
    return max(budget - staying - SUMMARY_OVERHEAD_TOKENS, 0)


def summarizer_options(
    summarizer: Callable[..., Any], room: int, count_tokens: CountTokens
) -> dict[str, Any]:
    """The keyword arguments ``summarizer`` accepts among ``max_tokens`` (``room``: what
    the compaction's target leaves the summary) and ``count_tokens`` (the session's
    estimator); ``{}`` for a summarizer that takes only the summary and the items."""
    try:
        parameters = inspect.signature(summarizer).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: call it the plain way
        return {}
    names = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        names |= {"max_tokens", "count_tokens"}
    options: dict[str, Any] = {}
    if "max_tokens" in names:
        options["max_tokens"] = room
    if "count_tokens" in names:
        options["count_tokens"] = count_tokens
    return options


class ExtractiveSummarizer:
    """The offline default summarizer: deterministic, no model, no network.

    It keeps what happened (:mod:`memstore.core.facts`): the newest request, the user's
    constraints, decisions, answered questions and tool results as attributed facts,
    statements about people, places, dates, numbers, plans and preferences in their own
    words with the day they were said, and the questions nothing answered. It drops
    greetings, acknowledgements, repetition and LOW tool output, and fits its budget by
    dropping whole lines, least informative and oldest first.

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
        digest = parse_summary(previous_summary)
        said_on = digest.said_on or next(
            (f.said_on for f in reversed(digest.facts.facts) if f.said_on), None
        )
        found = extract(items, said_on=said_on, objective=digest.objective)
        for fact in found.facts:
            digest.facts.add(fact)
        known = {q.text.lower() for q in digest.questions}
        digest.questions += [q for q in found.open_questions if q.text.lower() not in known]
        digest.objective = found.objective
        digest.said_on = found.said_on
        if not digest.render().strip():
            return SummaryText.nothing()  # nothing worth keeping: an answer, not a failure
        budget = self.max_tokens if max_tokens is None else max_tokens
        if self.max_tokens is not None:
            budget = min(budget if budget is not None else self.max_tokens, self.max_tokens)
        text = fit_summary(
            digest,
            DEFAULT_MAX_TOKENS if budget is None else budget,
            count_tokens or self.estimator.count,
        )
        # "" when not one line fits the room: the compaction records that it had no summary.
        return text
