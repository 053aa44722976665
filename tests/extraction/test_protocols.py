"""The Summarizer and Extractor protocols (:mod:`memstore.extraction.protocols`): a plain
callable is adapted once, where a session is opened; a declared one is called with the budget;
names for reports. Pure tests first, then a real store calling both kinds."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from memstore import (
    ExtractiveSummarizer,
    Extractor,
    MemoryItem,
    MemoryLimits,
    MemoryStore,
    OfflineExtractor,
    Summarizer,
    SummaryText,
    WordEstimator,
)
from memstore.extraction.fact_list import Fact, make_fact
from memstore.extraction.protocols import (
    BUDGET_ARGUMENTS,
    as_extractor,
    as_summarizer,
    summarizer_name,
)

COUNT = WordEstimator().count


async def plain_summary(previous: str | None, items: Sequence[MemoryItem]) -> str:
    return f"{len(items)} items"


async def plain_facts(items: Sequence[MemoryItem]) -> list[Fact]:
    return [make_fact(f"User: said {item.content}", seqs=(item.seq,)) for item in items]


class Recorder:
    """A summarizer that declares the budget and records what it was called with."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int,
        count_tokens: Any,
    ) -> str:
        self.calls.append({"max_tokens": max_tokens, "count_tokens": count_tokens, "n": len(items)})
        return "Facts:\n- kept"


# -- pure -------------------------------------------------------------------------------------


async def test_a_plain_summarizer_is_adapted_and_called_without_the_budget() -> None:
    adapted = as_summarizer(plain_summary)
    assert adapted is not plain_summary and isinstance(adapted, Summarizer)
    assert await adapted(None, [], max_tokens=5, count_tokens=COUNT) == "0 items"
    assert summarizer_name(adapted) == "plain_summary"


async def test_a_declared_summarizer_is_itself() -> None:
    recorder = Recorder()
    assert as_summarizer(recorder) is recorder
    extractive = ExtractiveSummarizer()
    assert as_summarizer(extractive) is extractive

    async def any_keyword(previous: str | None, items: Sequence[MemoryItem], **options: Any) -> str:
        return str(sorted(options))

    assert as_summarizer(any_keyword) is any_keyword
    said = await as_summarizer(any_keyword)(None, [], max_tokens=9, count_tokens=COUNT)
    assert said == str(sorted(BUDGET_ARGUMENTS))


async def test_a_plain_extractor_is_adapted_and_named() -> None:
    adapted = as_extractor(plain_facts)
    assert isinstance(adapted, Extractor) and adapted.name == "plain_facts"
    assert await adapted([], max_tokens=5, count_tokens=COUNT) == []

    async def named(items: Sequence[MemoryItem]) -> list[Fact]:
        return []

    named.name = "my-extractor"  # type: ignore[attr-defined]
    assert as_extractor(named).name == "my-extractor"


async def test_a_declared_extractor_is_called_with_the_budget() -> None:
    offline = OfflineExtractor()
    assert as_extractor(offline) is offline
    seen: dict[str, Any] = {}

    async def budgeted(
        items: Sequence[MemoryItem], *, max_tokens: int, count_tokens: Any
    ) -> list[Fact]:
        seen.update(max_tokens=max_tokens, count_tokens=count_tokens)
        return []

    await as_extractor(budgeted)([], max_tokens=120, count_tokens=COUNT)
    assert seen == {"max_tokens": 120, "count_tokens": COUNT}


def test_names_for_reports() -> None:
    assert summarizer_name(ExtractiveSummarizer()) == "extractive"
    assert summarizer_name(Recorder()) == "recorder"
    assert summarizer_name(plain_summary) == "plain_summary"

    class Unnamed:
        async def __call__(self, previous: str | None, items: Sequence[MemoryItem]) -> str:
            return ""

    assert summarizer_name(Unnamed()) == "Unnamed"
    assert summarizer_name(as_summarizer(Unnamed())) == "Unnamed"


def test_a_summary_text_carries_its_usage_and_nothing_is_an_answer() -> None:
    usage = {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52}
    text = SummaryText("Facts:\n- kept", usage)
    usage["input_tokens"] = 0  # the caller's dict: copied
    assert text == "Facts:\n- kept" and text.usage == {
        "input_tokens": 40,
        "output_tokens": 12,
        "total_tokens": 52,
    }
    assert not text.kept_nothing and SummaryText("x").usage is None
    nothing = SummaryText.nothing()
    assert nothing == "" and nothing.kept_nothing and nothing.usage is None


# -- through a store ----------------------------------------------------------------------------


class Inspected:
    """A plain summarizer that counts how often its signature is read."""

    def __init__(self) -> None:
        self.reads = 0
        self.calls = 0

    @property
    def __signature__(self) -> inspect.Signature:
        self.reads += 1
        return inspect.signature(plain_summary)

    async def __call__(self, previous: str | None, items: Sequence[MemoryItem]) -> str:
        self.calls += 1
        return f"Facts:\n- {len(items)} items folded"


LIMITS = MemoryLimits(hard=200, target=120, keep_recent=2)


async def fill(store: MemoryStore, name: str, **options: Any) -> Any:
    memory = store.session(name, limits=LIMITS, estimator=WordEstimator(), **options)
    for n in range(40):
        await memory.add("user", f"Crate {n} for depot D-{n:02d} weighs {200 + n} kg today.")
    return memory


async def test_a_session_adapts_a_plain_summarizer_once(store: MemoryStore) -> None:
    inspected = Inspected()
    memory = await fill(store, "plain", summarizer=inspected)
    reports = await memory.reports()
    assert len(reports) >= 2 and inspected.calls == len(reports)
    assert all(report.summary_error is None for report in reports)
    assert inspected.reads == 1  # decided where the session was opened, not per compaction
    assert (await memory.summary() or "").endswith("items folded")


async def test_a_session_calls_a_declared_summarizer_with_its_room_and_count(
    store: MemoryStore,
) -> None:
    recorder = Recorder()
    memory = await fill(store, "declared", summarizer=recorder)
    assert recorder.calls and all(call["n"] > 0 for call in recorder.calls)
    for call in recorder.calls:
        assert 0 < call["max_tokens"] <= LIMITS.target
        assert call["count_tokens"]("four words right here") == 4  # the session's counting
    assert await memory.summary() == "Facts:\n- kept"


async def test_a_scoped_session_calls_a_plain_extractor(store: MemoryStore) -> None:
    memory = store.session(
        "plain-facts",
        scope="user:rosa",
        estimator=WordEstimator(),
        extractor=plain_facts,
        consolidate=False,
    )
    await memory.add("user", "I keep 12 ferns on the balcony.")
    report = await memory.consolidate()
    assert report is not None and report.extractor == "plain_facts"
    assert [d.text for d in report.written] == ["User: said I keep 12 ferns on the balcony."]
