"""What a summarizer and an extractor are: two small protocols, the budget a declared argument.

* A :class:`Summarizer` folds the previous summary and the items leaving working memory into
  one new summary, within ``max_tokens`` as the session counts them (``count_tokens``).
* An :class:`Extractor` reads items into facts for long-term memory; ``max_tokens`` is what
  the entries it proposes may hold beside the stated preferences, constraints, identity facts
  and decisions, which are always written (:mod:`memstore.extraction.slots`).

Both are async callables; the shipped ones are :class:`~memstore.ExtractiveSummarizer`,
:class:`~memstore.OpenAISummarizer`, :class:`~memstore.OfflineExtractor` and the OpenAI
extractor. An application's own plain callable (``async def summarize(previous, items)``,
or an extractor taking only ``items``) is adapted once, where a session is opened
(:func:`as_summarizer`, :func:`as_extractor`): the policy and consolidation always call the
protocol.

A summarizer that knows what its call cost returns a :class:`SummaryText` (a ``str`` carrying
``.usage``), copied into the compaction report; one that found nothing worth keeping returns
:meth:`SummaryText.nothing`, which is not an error.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from memstore.core.values import MemoryItem

CountTokens = Callable[[str], int]
#: The budget arguments every summarizer and extractor is called with.
BUDGET_ARGUMENTS = ("max_tokens", "count_tokens")


@runtime_checkable
class Summarizer(Protocol):
    """Folds the previous summary and the items leaving working memory into one summary."""

    async def __call__(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int,
        count_tokens: CountTokens,
    ) -> str:
        """Return the new summary.

        Args:
            previous_summary: The summary so far (``None``: none yet), to fold in.
            items: The items leaving working memory, oldest first.
            max_tokens: The room the compaction's target leaves the summary.
            count_tokens: How the session counts that room.

        Returns:
            The new summary; a longer one is fitted to the room by whole lines.
        """
        ...


class FactLike(Protocol):
    """What consolidation reads of a fact (:class:`memstore.extraction.facts.Fact` has it;
    ``kind`` and ``stated`` are optional: a fact without them is an ordinary statement)."""

    @property
    def subject(self) -> str: ...
    @property
    def attribute(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def seqs(self) -> Sequence[int]: ...
    @property
    def said_on(self) -> Any: ...
    @property
    def weight(self) -> float: ...


@runtime_checkable
class Extractor(Protocol):
    """Reads items into facts for long-term memory; ``name`` is recorded as each entry's
    extractor."""

    name: str

    async def __call__(
        self, items: Sequence[MemoryItem], *, max_tokens: int, count_tokens: CountTokens
    ) -> Sequence[FactLike]:
        """Return the facts the items state, oldest first.

        Args:
            items: The items no earlier run consumed, oldest first.
            max_tokens: What the proposed entries may hold beside the stated preferences,
                constraints, identity facts and decisions (which are always written).
            count_tokens: How the session counts tokens.
        """
        ...


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
    inner = getattr(summarizer, "wrapped", None)
    if inner is not None:
        return summarizer_name(inner)
    return getattr(summarizer, "__name__", type(summarizer).__name__)


def _declares_budget(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes the budget arguments by name (or any keyword)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: called the plain way
        return False
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return True
    named = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return set(BUDGET_ARGUMENTS) <= named


class _PlainSummarizer:
    """An application's ``(previous, items)`` summarizer, called without the budget (its
    answer is fitted to the room afterwards, like any summary)."""

    def __init__(self, wrapped: Callable[[str | None, Sequence[MemoryItem]], Awaitable[str]]):
        self.wrapped = wrapped

    async def __call__(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int,
        count_tokens: CountTokens,
    ) -> str:
        return await self.wrapped(previous_summary, items)


class _NamedExtractor:
    """An application's extractor given the protocol's ``name``; called with the budget
    when it declares it, else with the items alone."""

    def __init__(self, wrapped: Callable[..., Awaitable[Sequence[FactLike]]]):
        self.wrapped = wrapped
        self.name = str(getattr(wrapped, "name", "") or summarizer_name(wrapped))
        self.budgeted = _declares_budget(wrapped)

    async def __call__(
        self, items: Sequence[MemoryItem], *, max_tokens: int, count_tokens: CountTokens
    ) -> Sequence[FactLike]:
        if self.budgeted:
            return await self.wrapped(items, max_tokens=max_tokens, count_tokens=count_tokens)
        return await self.wrapped(items)


def as_summarizer(summarizer: Callable[..., Awaitable[str]]) -> Summarizer:
    """``summarizer`` as the protocol: itself when it takes the budget arguments, else
    adapted to ignore them (decided once, here, where a session is opened)."""
    if _declares_budget(summarizer):
        return summarizer  # type: ignore[return-value]
    return _PlainSummarizer(summarizer)


def as_extractor(extractor: Callable[..., Awaitable[Sequence[FactLike]]]) -> Extractor:
    """``extractor`` as the protocol: itself when it takes the budget arguments and has a
    ``name``, else adapted (named after its function, the budget passed on only when it
    declares it)."""
    if _declares_budget(extractor) and isinstance(getattr(extractor, "name", None), str):
        return extractor  # type: ignore[return-value]
    return _NamedExtractor(extractor)
