"""SessionOptions: what a session handle is opened with, and each option's default, once.

``store.session``, ``store.attach``, ``store.fork``, ``Agent.open`` and the adapters take a
:class:`SessionOptions`, or its fields as keywords (``store.session("s", limits=...)``), or
both (the keywords replace the options' fields). A new option is one field here: the
openers pass the value through without naming it.

Where a handle's options come from, first match wins:

1. what the caller gave (``options=`` or a keyword);
2. for :meth:`~memstore.MemoryStore.attach`, what the session recorded (its limits,
   estimator and scope: :meth:`SessionOptions.of_record`);
3. the defaults of :meth:`SessionOptions.resolved`: ``MemoryLimits.from_env()``, tiktoken's
   o200k_base, the extractive summarizer, the offline extractor (loaded when first used).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from memstore.core.values import MemoryLimits
from memstore.errors import ValidationError

if TYPE_CHECKING:
    from memstore.core.records import SessionInfo
    from memstore.core.tokens import TokenEstimator
    from memstore.extraction.protocols import Extractor, Summarizer


@dataclass(frozen=True)
class SessionOptions:
    """What a session handle is opened with (``None``: the default, said per field).

    Attributes:
        limits: Token limits; :meth:`MemoryLimits.from_env` by default.
        estimator: Token counter; :class:`~memstore.TiktokenEstimator` (o200k_base) by
            default.
        summarizer: Phase 2's summarizer; :class:`~memstore.ExtractiveSummarizer` by default.
        extractor: Finds facts for consolidation; :class:`~memstore.OfflineExtractor` by
            default.
        ltm_scopes: Long-term scopes whose live entries ``build_model_input`` lists in one
            "Relevant memories" message, after the summary; earlier scopes first.
        ltm_budget: Tokens that message may use, counted against the hard limit (default
            ``hard - target``, the head-room a compaction leaves).
        recall_budget: Recall by default: every ``build_model_input`` adds what left working
            memory and best matches the newest user message, in at most this many tokens,
            counted against the hard limit.
        handle: The handle's id, recorded on every item it adds (a fresh one by default):
            give the same id to handles that stand for one writer (one agent run reopened on
            another event loop).
        scope: The long-term scope the session belongs to (``user:alice``), recorded by its
            first append: its entries come first among the memories, its recall spans the
            scope's sessions, and ``consolidate()`` writes there.
        consolidate: For a scoped session, also consolidate what each compaction removes.
    """

    limits: MemoryLimits | None = None
    estimator: TokenEstimator | None = None
    summarizer: Summarizer | None = None
    extractor: Extractor | None = None
    ltm_scopes: Iterable[str] = ()
    ltm_budget: int | None = None
    recall_budget: int | None = None
    handle: str | None = None
    scope: str | None = None
    consolidate: bool = True

    def __post_init__(self) -> None:
        # An iterator would be empty the second time it is read: keep a tuple. A string is
        # left as it is, for validation to refuse with its field's name.
        if not isinstance(self.ltm_scopes, (str, tuple)) and isinstance(self.ltm_scopes, Iterable):
            object.__setattr__(self, "ltm_scopes", tuple(self.ltm_scopes))

    @classmethod
    def merged(cls, options: SessionOptions | None, fields: Mapping[str, Any]) -> SessionOptions:
        """``options`` (the defaults when ``None``) with ``fields`` replacing its fields.

        Raises:
            ValidationError: ``options`` is not a :class:`SessionOptions` (``options``).
            TypeError: a keyword that is no option, as for any call.
        """
        if options is None:
            return cls(**fields)
        if not isinstance(options, SessionOptions):
            raise ValidationError("options", f"must be SessionOptions, got {options!r}")
        return dataclasses.replace(options, **fields) if fields else options

    def with_handle(self) -> SessionOptions:
        """These options with a handle id of their own (a fresh one when none is set): every
        handle opened with them stands for one writer (one agent run reopened on another
        event loop)."""
        from memstore.memory.worker import new_handle_id

        return (
            self if self.handle is not None else dataclasses.replace(self, handle=new_handle_id())
        )

    def of_record(self, info: SessionInfo) -> SessionOptions:
        """These options on an existing session: its recorded limits and estimator (a session
        is counted one way for good; the given ones were for a new session), and its recorded
        scope.

        Raises:
            ValidationError: a scope was given and the session records another, or none
                (``scope``): a session's scope is recorded by its first append, for good.
        """
        from memstore.core.tokens import RecordedEstimator

        if self.scope is not None and info.scope != self.scope:
            recorded = "no scope" if info.scope is None else f"scope {info.scope!r}"
            raise ValidationError("scope", f"session {info.id!r} was started in {recorded}")
        return dataclasses.replace(
            self,
            limits=info.limits,
            estimator=RecordedEstimator(info.estimator),
            scope=info.scope,
        )

    def resolved(self) -> SessionOptions:
        """These options with the defaults filled in (limits, estimator, summarizer)."""
        from memstore.core.tokens import TiktokenEstimator
        from memstore.extraction.summarizer import ExtractiveSummarizer

        return dataclasses.replace(
            self,
            limits=self.limits or MemoryLimits.from_env(),
            estimator=self.estimator or TiktokenEstimator(),
            summarizer=self.summarizer or ExtractiveSummarizer(),
        )


class SessionFields(TypedDict, total=False):
    """:class:`SessionOptions`' fields as keywords (for type checkers: ``**fields``)."""

    limits: MemoryLimits | None
    estimator: TokenEstimator | None
    summarizer: Summarizer | None
    extractor: Extractor | None
    ltm_scopes: Iterable[str]
    ltm_budget: int | None
    recall_budget: int | None
    handle: str | None
    scope: str | None
    consolidate: bool
