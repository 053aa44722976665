"""The offline extractor: the facts long-term memory keeps, read without a model.

It reads items as the offline summary does (:func:`memstore.extraction.facts.extract`), with
one difference: every statement of the user's that is not a question, a greeting or an
acknowledgement is a fact of its own (in a short conversation each becomes an entry;
:mod:`memstore.extraction.slots`). Open questions are not facts and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.core.values import MemoryItem
from memstore.extraction.fact_list import QUESTION, Fact
from memstore.extraction.facts import extract
from memstore.extraction.protocols import CountTokens


class OfflineExtractor:
    """The offline extractor: deterministic, no model (module docstring)."""

    name = "extractive"

    async def __call__(
        self,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
    ) -> list[Fact]:
        """The facts the items state (the same items always give the same facts); the
        budget is consolidation's to apply, so every fact is proposed."""
        return [
            fact for fact in extract(items, every_statement=True).facts if fact.kind != QUESTION
        ]
