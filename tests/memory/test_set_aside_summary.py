"""A summary phase 3 set aside for room is resumed by the next fold, and the items it evicted
unread are read by it: one long paste among the newest turns, or a failed summarizer, must
not wipe what a session had folded or would have. Only a summarizer that kept nothing, or a
clear, ends it. Real stores, both backends."""

from __future__ import annotations

from collections.abc import Sequence

from memstore import MemoryItem, MemoryLimits, MemoryStore, SummaryText, WordEstimator

#: The two newest items stay; a paste of 45 words and a reply fill the target, leaving a
#: summary no room (60 - 49 - 5 - 12 < 1).
LIMITS = MemoryLimits(hard=100, target=60, keep_recent=2)
PASTE = " ".join(f"line{n}" for n in range(45))


class Recorder:
    """A summarizer that folds by appending what it read, recording what it was given."""

    name = "recorder"

    def __init__(self) -> None:
        self.previous: list[str | None] = []
        self.read: list[list[str]] = []  # the first word of each item each fold read
        self.nothing = False
        self.failing = False

    async def __call__(
        self,
        previous: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int,
        count_tokens: object,
    ) -> str:
        self.previous.append(previous)
        self.read.append([item.content.split()[0] for item in items])
        if self.failing:
            raise RuntimeError("model unavailable")
        if self.nothing:
            return SummaryText.nothing()
        words = [item.content.split()[0] for item in items]
        return " ".join(" ".join(filter(None, [previous, *words])).split()[:max_tokens])


async def fold_then_paste(memory: object, recorder: Recorder) -> None:
    """Fold some turns, then let a paste push the summary out of the input."""
    for n in range(12):
        await memory.add("user", f"fact{n} is worth ten words in this short test message")  # type: ignore[attr-defined]
    assert recorder.previous, "the turns were folded"
    await memory.add("user", PASTE)  # type: ignore[attr-defined]
    await memory.add("assistant", "noted")  # type: ignore[attr-defined]
    reports = await memory.reports()  # type: ignore[attr-defined]
    assert reports[-1].summary_action == "removed" and await memory.summary() is None  # type: ignore[attr-defined]


async def test_the_next_fold_resumes_a_summary_set_aside_for_room(backend_url: str) -> None:
    recorder = Recorder()
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=recorder)
        await fold_then_paste(memory, recorder)
        written = (await memory.reports())[-2]
        assert written.summary_action == "replaced"
        before = len(recorder.previous)
        for n in range(4):  # the paste leaves the newest two: a fold runs again
            await memory.add("user", f"later{n} is another short message of the test")
        assert len(recorder.previous) > before
        resumed = recorder.previous[before]
        assert resumed is not None and "fact0" in resumed  # the folded turns came back
        assert "fact0" in (await memory.summary() or "")


async def test_a_summarizer_that_kept_nothing_ends_the_summary(backend_url: str) -> None:
    recorder = Recorder()
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=recorder)
        for n in range(12):
            await memory.add("user", f"fact{n} is worth ten words in this short test message")
        for n in range(3):
            await memory.add("user", f"more{n} of the short messages")
        recorder.nothing = True
        await memory.compact()
        assert (await memory.reports())[-1].summary_action == "removed"
        recorder.nothing = False
        before = len(recorder.previous)
        for n in range(3):
            await memory.add("user", f"again{n} one of the short messages")
        await memory.compact()
        assert recorder.previous[before] is None  # its judgement stands


async def test_a_clear_ends_the_summary(backend_url: str) -> None:
    recorder = Recorder()
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=recorder)
        await fold_then_paste(memory, recorder)
        await memory.clear()
        before = len(recorder.previous)
        for n in range(12):
            await memory.add("user", f"after{n} the clear comes this short message of ten")
        assert len(recorder.previous) > before
        assert recorder.previous[before] is None


async def test_items_evicted_for_room_are_read_by_the_next_fold(backend_url: str) -> None:
    recorder = Recorder()
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=recorder)
        for n in range(8):
            await memory.add("user", f"fact{n} is worth ten words in this short test message")
        folds = len(recorder.read)
        await memory.add("user", "unread1 arrives just before the paste and is evicted")
        await memory.add("user", PASTE)
        await memory.add("assistant", "noted")
        assert len(recorder.read) == folds  # no room: no fold, the unprotected evicted
        history = await store.history("s")
        evicted = {i.content.split()[0] for i in history.items if i.fate == "evicted"}
        assert "unread1" in evicted
        for n in range(4):
            await memory.add("user", f"later{n} is another short message of the test")
        assert "unread1" in recorder.read[folds]  # read first by the next fold
        assert recorder.read[folds].index("unread1") < recorder.read[folds].index("line0")


async def test_items_a_failed_summarizer_evicted_are_read_by_the_next_fold(
    backend_url: str,
) -> None:
    recorder = Recorder()
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=recorder)
        recorder.failing = True
        for n in range(8):
            await memory.add("user", f"lost{n} is worth ten words in this short test message")
        reports = await memory.reports()
        assert reports and all(r.summary_error for r in reports)
        recorder.failing = False
        for n in range(4):
            await memory.add("user", f"later{n} is another short message of the test")
        read = recorder.read[-1]
        assert "lost0" in read and "lost1" in read  # nothing the failure evicted was lost
        assert "lost0" in (await memory.summary() or "")
