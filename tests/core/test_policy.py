"""The pure policy: each phase's rule, in microseconds, with no database."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import make_item

from memstore import MemoryKind, MemoryLimits, MemoryRole, Priority, WordEstimator
from memstore.core.policy import (
    Snapshot,
    bounded_view,
    needs_compaction,
    plan_compaction,
    start_plan,
    total_tokens,
)
from memstore.core.summary_room import trim_to_tokens
from memstore.core.values import MemoryItem

count = WordEstimator().count


def item(
    seq: int,
    words: int,
    kind: MemoryKind = MemoryKind.USER_MESSAGE,
    priority: Priority = Priority.NORMAL,
) -> MemoryItem:
    return make_item(" ".join(f"w{seq}" for _ in range(words)), kind, priority, seq)


def snap(items: list[MemoryItem], summary: str | None = None) -> Snapshot:
    return Snapshot(
        "s",
        version=len(items),
        compaction_count=0,
        items=tuple(items),
        summary=summary,
        summary_tokens=count(summary) if summary else 0,
    )


def test_total_counts_item_and_summary_overheads() -> None:
    items = [item(1, 10), item(2, 5)]
    assert total_tokens(items, None, 0) == 10 + 4 + 5 + 4
    assert total_tokens(items, "a b c", 3) == 23 + 3 + 12
    assert total_tokens([], None, 0) == 0


def test_compaction_starts_only_at_the_hard_limit() -> None:
    limits = MemoryLimits(hard=30, target=20, keep_recent=1)
    assert needs_compaction(snap([item(1, 25)]), limits) is None  # 29 < 30
    assert needs_compaction(snap([item(1, 26)]), limits) == "hard_limit"  # 30 >= 30


def test_summarize_every_counts_user_turns() -> None:
    limits = MemoryLimits(hard=1000, target=500, keep_recent=1, summarize_every=3)
    s = Snapshot("s", 3, 0, (item(1, 1),), user_turns=3)
    assert needs_compaction(s, limits) == "summarize_every"
    assert needs_compaction(Snapshot("s", 2, 0, (item(1, 1),), user_turns=2), limits) is None


def test_old_low_tool_observations_go_first_and_phase_one_stops_at_target() -> None:
    noise = [item(i, 10, MemoryKind.TOOL_OBSERVATION, Priority.LOW) for i in (1, 2, 3)]
    keep = [item(4, 10), item(5, 10)]
    limits = MemoryLimits(hard=60, target=50, keep_recent=2)
    # total 70; dropping two noise items (14 each) reaches 42 <= 50: the third survives.
    plan = plan_compaction(snap([*noise, *keep]), limits, count, None)
    assert plan.dropped == (noise[0].id, noise[1].id)
    assert noise[2].id in {i.id for i in plan.kept}
    assert plan.summarized == () and plan.evicted == ()
    assert plan.after_tokens == 42


def test_protected_noise_is_not_dropped_in_phase_one() -> None:
    items = [item(1, 30), item(2, 10, MemoryKind.TOOL_OBSERVATION, Priority.LOW)]
    draft = start_plan(snap(items), MemoryLimits(hard=40, target=30, keep_recent=1))
    assert draft.dropped == ()
    assert [i.id for i in draft.candidates] == [items[0].id]


def test_recent_items_survive_a_normal_summary_compaction() -> None:
    items = [item(i, 10) for i in range(1, 7)]
    limits = MemoryLimits(hard=80, target=60, keep_recent=2)
    plan = plan_compaction(snap(items), limits, count, lambda prev, cands, **room: "short summary")
    assert [i.id for i in plan.kept] == [items[4].id, items[5].id]
    assert set(plan.summarized) == {i.id for i in items[:4]}
    assert plan.summary == "short summary"
    assert plan.after_tokens == 28 + 2 + 12 <= limits.target


def test_a_later_summary_receives_the_existing_summary() -> None:
    seen: list[str | None] = []

    def summarize(previous: str | None, cands: object, **room: object) -> str:
        seen.append(previous)
        return f"{previous or ''} new".strip()

    items = [item(i, 10) for i in range(1, 5)]
    plan = plan_compaction(snap(items, "earlier facts"), MemoryLimits(60, 40, 1), count, summarize)
    assert seen == ["earlier facts"]
    assert plan.summary == "earlier facts new"


def test_a_fold_resumes_the_summary_written_even_when_phase_three_set_it_aside() -> None:
    seen: list[str | None] = []

    def summarize(previous: str | None, cands: object, **room: object) -> str:
        seen.append(previous)
        return "folded"

    items = [item(i, 10) for i in range(1, 5)]
    set_aside = replace(snap(items), summary_written="earlier facts, in full")
    plan_compaction(set_aside, MemoryLimits(60, 40, 1), count, summarize)
    trimmed = replace(snap(items, "earlier"), summary_written="earlier facts, in full")
    plan_compaction(trimmed, MemoryLimits(60, 40, 1), count, summarize)
    assert seen == ["earlier facts, in full"] * 2


def test_failing_summarizer_leads_to_eviction_with_the_error_recorded() -> None:
    def broken(previous: str | None, cands: object, **room: object) -> str:
        raise RuntimeError("model unavailable")

    items = [item(i, 10) for i in range(1, 6)]
    limits = MemoryLimits(hard=70, target=50, keep_recent=2)
    plan = plan_compaction(snap(items), limits, count, broken)
    assert plan.summary_error == "RuntimeError: model unavailable"
    assert plan.summarized == ()
    assert plan.evicted == tuple(i.id for i in items[:2])
    assert plan.after_tokens <= limits.target


def test_blank_summary_counts_as_failure() -> None:
    items = [item(i, 10) for i in range(1, 6)]
    plan = plan_compaction(snap(items), MemoryLimits(70, 50, 2), count, lambda p, c, **room: "   ")
    assert plan.summary_error == "summarizer returned no usable text"
    assert plan.summary is None


def test_no_room_for_a_summary_asks_for_none_and_records_no_error() -> None:
    calls = []

    def summarizer(previous: str | None, cands: object, **room: object) -> str:
        calls.append(cands)
        return "never used"

    items = [item(i, 10) for i in range(1, 6)]  # the two kept items and a summary's framing
    limits = MemoryLimits(hard=70, target=40, keep_recent=2)  # fill the target: room 0
    plan = plan_compaction(snap(items, summary="older facts"), limits, count, summarizer)
    assert calls == [] and plan.summary_error is None
    assert plan.evicted == tuple(i.id for i in items[:3]) and plan.summary is None
    assert plan.after_tokens <= limits.target


def test_one_oversized_recent_message_is_still_bounded() -> None:
    huge = item(2, 500)
    plan = plan_compaction(
        snap([item(1, 5), huge]), MemoryLimits(100, 50, 4), count, lambda p, c, **room: "s"
    )
    assert plan.after_tokens <= 50
    assert huge.id in plan.evicted


def test_oversized_summary_is_trimmed_before_recent_items_are_evicted() -> None:
    long_summary = " ".join(f"fact{i}" for i in range(60))
    recent = [item(1, 10), item(2, 10)]
    limits = MemoryLimits(hard=80, target=50, keep_recent=2)
    plan = plan_compaction(snap(recent, long_summary), limits, count, None)
    assert plan.evicted == ()
    assert plan.summary_action == "trimmed"
    assert plan.summary is not None and long_summary.startswith(plan.summary)
    assert plan.after_tokens == 50  # 28 for the items, 12 overhead, 10 words of summary


def test_summary_is_removed_when_no_room_is_left_before_evicting_protected() -> None:
    recent = [item(1, 20), item(2, 20)]
    limits = MemoryLimits(hard=60, target=50, keep_recent=2)
    plan = plan_compaction(snap(recent, "a b c d e f"), limits, count, None)
    assert plan.summary is None and plan.summary_action == "removed"
    assert plan.evicted == ()
    assert plan.after_tokens == 48


def test_protected_items_are_evicted_oldest_first_as_a_last_resort() -> None:
    recent = [item(1, 30), item(2, 30)]
    plan = plan_compaction(snap(recent), MemoryLimits(60, 40, 2), count, None)
    assert plan.evicted == (recent[0].id,)
    assert plan.after_tokens == 34


def test_forced_plan_summarizes_even_below_target() -> None:
    items = [item(i, 2) for i in range(1, 5)]
    limits = MemoryLimits(hard=1000, target=500, keep_recent=1)
    assert start_plan(snap(items), limits).candidates == ()
    forced = start_plan(snap(items), limits, force=True)
    assert [i.seq for i in forced.candidates] == [1, 2, 3]


def test_bounded_view_never_exceeds_the_hard_limit() -> None:
    items = [item(i, 20, MemoryKind.TOOL_OBSERVATION, Priority.LOW) for i in range(1, 4)]
    items += [item(i, 20) for i in range(4, 8)]
    limits = MemoryLimits(hard=100, target=80, keep_recent=2)
    s = snap(items)
    assert s.total_tokens > limits.hard
    kept, summary = bounded_view(s, limits, count)
    assert total_tokens(kept, summary, 0) <= limits.hard
    assert items[-1] in kept and items[-2] in kept


def test_bounded_view_is_identity_below_the_hard_limit() -> None:
    items = [item(1, 5), item(2, 5)]
    assert bounded_view(snap(items, "x"), MemoryLimits(100, 50, 1), count) == (tuple(items), "x")


def test_trim_to_tokens_keeps_a_word_prefix() -> None:
    assert trim_to_tokens("one two three four", 2, count) == "one two"
    assert trim_to_tokens("one two", 5, count) == "one two"
    assert trim_to_tokens("one two", 0, count) == ""


@pytest.mark.parametrize("kind", list(MemoryKind))
def test_plan_keeps_item_metadata(kind: MemoryKind) -> None:
    it = item(1, 3, kind, Priority.HIGH)
    plan = plan_compaction(snap([it]), MemoryLimits(100, 50, 1), count, None)
    assert plan.kept == (it,)
    assert it.role in (MemoryRole.USER, MemoryRole.ASSISTANT, MemoryRole.TOOL, MemoryRole.DEVELOPER)


def test_trimming_a_summary_keeps_whole_lines_and_no_bare_heading() -> None:
    summary = "Current objective: fix checkout\nFacts:\n- payments p95 1720ms\n- fraud v2.31"
    assert trim_to_tokens(summary, 7, count) == "Current objective: fix checkout"
    assert (
        trim_to_tokens(summary, 9, count)
        == "Current objective: fix checkout\nFacts:\n- payments p95 1720ms"
    )
    assert trim_to_tokens(summary, 2, count) == ""  # never a stub such as "Current"


def test_the_room_and_the_sessions_count_reach_the_summarizer() -> None:
    items = [item(i, 10) for i in range(1, 7)]  # 14 each
    limits = MemoryLimits(hard=80, target=60, keep_recent=2)
    seen: dict[str, object] = {}

    def roomy(previous: str | None, cands: object, *, max_tokens: int, count_tokens: object) -> str:
        seen.update(max_tokens=max_tokens, count_tokens=count_tokens)
        return "short summary"

    plan_compaction(snap(items), limits, count, roomy)
    assert seen == {"max_tokens": 60 - 2 * 14 - 12, "count_tokens": count}


def test_a_summarizer_that_kept_nothing_is_not_an_error() -> None:
    from memstore.extraction.protocols import SummaryText

    items = [item(i, 10) for i in range(1, 6)]
    limits = MemoryLimits(hard=70, target=50, keep_recent=2)
    plan = plan_compaction(
        snap(items, "old"), limits, count, lambda p, c, **room: SummaryText.nothing()
    )
    assert plan.summary_error is None
    assert plan.summarized == tuple(i.id for i in items[:3])
    assert plan.summary is None and plan.summary_action == "removed"
    assert plan.after_tokens <= limits.target
