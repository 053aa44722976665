"""The extractive summarizer's rules, one by one."""

from __future__ import annotations

from conftest import make_item

from memstore import ExtractiveSummarizer, MemoryKind, Priority, WordEstimator
from memstore.core.summarizers import parse_summary
from memstore.core.values import MemoryItem


def item(
    text: str,
    kind: MemoryKind = MemoryKind.USER_MESSAGE,
    priority: Priority = Priority.NORMAL,
    seq: int = 1,
) -> MemoryItem:
    return make_item(text, kind, priority, seq)


def summarize(*items: MemoryItem, previous: str | None = None, budget: int = 400) -> str:
    return ExtractiveSummarizer(max_tokens=budget).summarize(previous, list(items))


def test_chatter_narration_and_logs_are_left_out() -> None:
    text = summarize(
        item("Hi there! Thanks, that helps. Check the checkout dashboards next."),
        item("Shall I continue with payments?", MemoryKind.ASSISTANT_MESSAGE),
        item("I will look at the traces next.", MemoryKind.ASSISTANT_MESSAGE),
        item("GET /health 200 3ms", MemoryKind.TOOL_OBSERVATION),
        item("kubectl: 6 Running", MemoryKind.TOOL_OBSERVATION, Priority.LOW),
        item("Who owns the orders-db backups now?"),
        item("Was the cache flushed?", MemoryKind.ASSISTANT_MESSAGE, Priority.HIGH),
    )
    assert text == (
        "Current objective: Check the checkout dashboards next.\n"
        "Open questions:\n"
        "- Who owns the orders-db backups now?\n"
        "- Was the cache flushed?"
    )


def test_kinds_go_to_their_sections_and_repetition_folds() -> None:
    constraint = "Never restart payments during business hours."
    text = summarize(
        item(f"Ok. {constraint} Investigate checkout latency."),
        item("Rolled back fraud to v2.30.4.", MemoryKind.DECISION),
        item("payments p95 is 1720ms.", MemoryKind.TOOL_OBSERVATION, Priority.HIGH),
        item(f"Thanks. {constraint}"),
    )
    assert text.splitlines() == [
        f"Current objective: {constraint}",
        "Constraints:",
        f"- {constraint}",
        "Decisions:",
        "- Rolled back fraud to v2.30.4.",
        "Important observations:",
        "- payments p95 is 1720ms.",
    ]


def test_a_summary_round_trips_and_multiline_content_stays_one_line() -> None:
    decision = item("Keep the rules table.\nOnly the binary\nwas rolled back.", MemoryKind.DECISION)
    first = summarize(decision)
    assert first == "Decisions:\n- Keep the rules table. Only the binary was rolled back."
    assert summarize(previous=first) == first
    assert parse_summary(first).render() == first


def test_a_models_sections_are_kept_and_sacrificed_first() -> None:
    previous = (
        "Current objective: fix checkout\n"
        "Constraints:\n- never deploy on Fridays\n"
        "Actions attempted:\n- restarted the cache\n- rolled back fraud\n"
        "Open questions:\n- who owns billing?"
    )
    kept = summarize(previous=previous)
    assert "Actions attempted:\n- restarted the cache\n- rolled back fraud" in kept
    assert kept.index("Open questions:") < kept.index("Actions attempted:")
    words = WordEstimator().count
    tight = summarize(previous=previous, budget=words(kept) - 2)
    assert "restarted the cache" not in tight and "rolled back fraud" in tight
    assert "never deploy on Fridays" in tight and "who owns billing?" in tight


def test_over_budget_whole_lines_go_least_essential_first() -> None:
    items = [
        item("You must keep p95 under 400ms.", seq=1),
        item("Chose pool size 40.", MemoryKind.DECISION, seq=2),
        item("disk is 91% full", MemoryKind.TOOL_OBSERVATION, Priority.HIGH, seq=3),
        item("Is the cache warm?", seq=4),
    ]
    full = summarize(*items)
    count = WordEstimator().count
    for budget, gone in [
        (count(full) - 1, ["Is the cache warm?"]),
        (count(full) - 8, ["Is the cache warm?", "disk is 91% full"]),
    ]:
        text = summarize(*items, budget=budget)
        assert count(text) <= budget
        for line in gone:
            assert line not in text
        assert "You must keep p95 under 400ms." in text and "Chose pool size 40." in text
        for line in text.splitlines():  # no line is cut in half
            assert line.endswith((".", ":", "?", "full")) or line.startswith("Current")


def test_an_objective_alone_over_budget_is_dropped() -> None:
    assert summarize(item("word " * 30), budget=5) == ""
