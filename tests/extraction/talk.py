"""A few more item builders for the extraction tests, beside :class:`sessions.Items`: an item of
any kind and priority, and a model's reasoning. Sentences are written per test, in the tests."""

from __future__ import annotations

from typing import Any

from sessions import Items

from memstore import MemoryKind, Priority
from memstore.core.values import MemoryItem
from memstore.extraction.facts import Extraction, extract


class Talk(Items):
    """:class:`sessions.Items` with items of any kind (``add``) and reasoning items."""

    def add(
        self,
        role: str,
        text: str,
        *,
        kind: MemoryKind | None = None,
        priority: Priority = Priority.NORMAL,
        day: int = 0,
        payload: dict[str, Any] | None = None,
    ) -> Talk:
        self._add(role, text, kind=kind, priority=priority, day=day, payload=payload)
        return self

    def reasoning(self, summary: str, *, day: int = 0) -> Talk:
        """A model's reasoning item, as the store keeps one (DECISION, assistant)."""
        payload = {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}]}
        return self.add("assistant", summary, kind=MemoryKind.DECISION, day=day, payload=payload)


def read(items: Items | list[MemoryItem], **options: Any) -> Extraction:
    """:func:`memstore.extraction.facts.extract` of a builder's items."""
    return extract(items.items if isinstance(items, Items) else items, **options)


def texts(items: Items | list[MemoryItem], **options: Any) -> list[str]:
    """The texts of the facts ``items`` establish."""
    return [fact.text for fact in read(items, **options).facts]
