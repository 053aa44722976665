"""Memory fidelity on conversations no one here wrote: truncation, compaction, recall.

Each conversation is appended, turn by turn, to a memstore session with the store's defaults
(limits 1500 / 900 / keep 4, exact o200k_base counts, the extractive summarizer); each of its
sessions opens with a developer note that dates it (``--undated``: none). Then every question
is asked at the end, and four model inputs are compared:

* **truncation**: the newest turns that fit the hard limit (each counted as memstore counts
  an item: its tokens + 4), what an agent without memory management sends;
* **truncation, same tokens**: the newest turns that fit what the compacted input weighs;
* **compaction**: memstore's ``build_model_input()``: the summary plus working memory;
* **compaction + recall**: ``build_model_input(recall=QUESTION)``, with the default
  ``recall_budget`` (``hard - target``) inside the same hard limit.

Two measures, side by side. **Word for word**: every evidence turn is in the input (white
space and case aside), in an item, the summary or the recalled block; a summary that kept the
telling sentence of a turn does not count. **Answer words**: the share of the answer's
content words that the input holds anywhere.

Then tool-using agent sessions (:mod:`agent_sessions`, generated) are compacted several times
at hard 1200 / target 800 and at the defaults, and the extractive summarizer is timed on a
1,000-item fold (``--agent-sessions 0`` skips both).

Data (fetched at run time, never committed):

* default: the **Chit-Chat Challenge** conversations of BYU's Perception, Control and Cognition
  lab (MIT licence), as published on PyPI in the wheel of ``chitchat-dataset`` 0.9.0 (its
  ``dataset.json``, checked by SHA-256). 7,168 real conversations between people, many pairs
  of whom talked again and again over weeks; each pair with at least
  ``--min-sessions`` conversations becomes one long multi-session conversation, one session
  per conversation, in the order they took place. Questions are the participants' own: a turn
  ending in a question whose next turn (the other person's) answers it; the question is
  asked again at the end, and the answer turn is the evidence. Facts are said by either role
  (the first speaker is ``user``, the other ``assistant``), in passing, in people's words.
* ``--locomo PATH``: LoCoMo's ``locomo10.json`` (snap-research/locomo, CC BY-NC 4.0; not on
  any package registry this benchmark can reach): 10 very long conversations with
  question/answer pairs and their evidence turns (category 5, the unanswerable ones, is
  left out).

    python benchmarks/fidelity.py [--conversations 10] [--questions 30] [--skip N] [--json]
    python benchmarks/fidelity.py --sittings   # across a user's sessions (fidelity_sittings)
    python benchmarks/fidelity.py --sittings --hard 6000 --entry-share 0.6   # what if
    python benchmarks/fidelity.py --locomo data/locomo10.json

``--sittings`` measures memory across a user's sessions instead (:mod:`fidelity_sittings`).
``--hard N`` and ``--entry-share R`` ask what larger inputs, or entries allowed more of the
tokens they distil than the store's bounds (a quarter of a long session), would hold: what
the store's bounds cost.

Offline after the first fetch (``--cache DIR``, default ``~/.cache/memstore-benchmarks``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import agent_sessions  # beside this file
from conversations import (  # beside this file
    DEFAULT_CACHE,
    Conversation,
    chitchat_conversations,
    fetch_chitchat,
    locomo_conversations,
    normalized,
)
from fidelity_measures import answer_words, input_texts, truncated, word_recall  # beside this file

from memstore import (
    ExtractiveSummarizer,
    MemoryLimits,
    MemoryStore,
    MemstoreError,
    TiktokenEstimator,
)
from memstore.core.values import ITEM_OVERHEAD_TOKENS
from memstore.extraction import slots

CONDITIONS = ("truncation", "truncation, same tokens", "compaction", "compaction + recall")


# -- the measurement --------------------------------------------------------------------------


async def measure(conv: Conversation, store: MemoryStore, limits: MemoryLimits) -> dict[str, Any]:
    """Per condition, answers kept word for word and the share of answer words held."""
    estimator = TiktokenEstimator()
    memory = store.session(
        conv.name,
        limits=limits,
        estimator=estimator,
        summarizer=ExtractiveSummarizer(),
    )  # no recall_budget: recall only when asked, with the default budget (hard - target)
    for role, text in conv.turns:
        await memory.add(role, text)
    counts = [estimator.count(" ".join(text.split())) for _role, text in conv.turns]
    same_tokens = await memory.estimated_tokens()  # what the compacted input weighs
    inputs = {
        "truncation": truncated(conv.turns, counts, limits.hard),
        "truncation, same tokens": truncated(conv.turns, counts, same_tokens),
        "compaction": input_texts(await memory.build_model_input()),
    }
    verbatim = dict.fromkeys(CONDITIONS, 0)
    words = dict.fromkeys(CONDITIONS, 0.0)
    scored = 0
    for question, evidence, answer in conv.questions:
        inputs["compaction + recall"] = input_texts(await memory.build_model_input(recall=question))
        needed = [normalized(conv.turns[i][1]) for i in evidence]
        wanted = answer_words(answer)
        scored += bool(wanted)
        for condition in CONDITIONS:
            verbatim[condition] += all(part in inputs[condition] for part in needed)
            words[condition] += word_recall(wanted, inputs[condition])
    return {
        "conversation": conv.name,
        "sessions": conv.sessions,
        "turns": len(conv.turns),
        "history_tokens": sum(counts) + ITEM_OVERHEAD_TOKENS * len(counts),
        "input_tokens": same_tokens,
        "questions": len(conv.questions),
        "scored": scored,
        "compactions": len(await memory.reports()),
        "summary_errors": sum(1 for r in await memory.reports() if r.summary_error),
        "answered": verbatim,
        "answer_words": words,
    }


async def run(conversations: list[Conversation], limits: MemoryLimits) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "fidelity.db") as store:
            return [await measure(conv, store, limits) for conv in conversations]


def report(dataset: str, rows: list[dict[str, Any]], limits: MemoryLimits) -> dict[str, Any]:
    questions = sum(row["questions"] for row in rows)
    scored = sum(row["scored"] for row in rows)
    totals = {c: sum(row["answered"][c] for row in rows) for c in CONDITIONS}
    shares = {c: totals[c] / questions if questions else 0.0 for c in CONDITIONS}
    words = {c: sum(row["answer_words"][c] for row in rows) / max(scored, 1) for c in CONDITIONS}

    def ratio(table: dict[str, float], over: str) -> float | None:
        return table["compaction"] / table[over] if table[over] else None

    return {
        "dataset": dataset,
        "limits": {"hard": limits.hard, "target": limits.target, "keep_recent": limits.keep_recent},
        "conversations": rows,
        "questions": questions,
        "answered": totals,
        "share": shares,
        "answer_words": words,
        "compaction_over_truncation": {
            "answer_words": ratio(words, "truncation, same tokens"),
            "verbatim": ratio(shares, "truncation, same tokens"),
        },
        "recall_over_truncation": (
            shares["compaction + recall"] / shares["truncation"] if shares["truncation"] else None
        ),
        "summary_errors": sum(row["summary_errors"] for row in rows),
    }


def print_report(result: dict[str, Any]) -> None:
    limits = result["limits"]
    print(
        f"{result['dataset']}: {len(result['conversations'])} conversations, "
        f"{result['questions']} questions (limits {limits['hard']} / {limits['target']} / keep "
        f"{limits['keep_recent']}); each cell: answers word for word / answer words held"
    )
    print(f"{'conversation':<14}{'turns':>6}{'tokens':>8}{'input':>7}"
          + "".join(f"{c:>26}" for c in CONDITIONS))  # fmt: skip
    for row in result["conversations"]:
        n = max(row["scored"], 1)
        cells = "".join(
            f"{row['answered'][c]:>13}{row['answer_words'][c] / n:>12.1%} " for c in CONDITIONS
        )
        print(f"{row['conversation']:<14}{row['turns']:>6}{row['history_tokens']:>8}"
              f"{row['input_tokens']:>7}{cells}")  # fmt: skip
    cells = "".join(
        f"{result['share'][c]:>13.1%}{result['answer_words'][c]:>12.1%} " for c in CONDITIONS
    )
    print(f"{'all':<35}{cells}")
    ratios = result["compaction_over_truncation"]
    print(
        "compaction alone / truncation to the same tokens: answer words "
        + _times(ratios["answer_words"])
        + ", answers word for word "
        + _times(ratios["verbatim"])
    )
    print("compaction + recall / truncation: " + _times(result["recall_over_truncation"]))
    print(f"summary errors: {result['summary_errors']}")


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json instead")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE / "memstore-benchmarks")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--min-sessions", type=int, default=10)
    parser.add_argument("--max-turns", type=int, default=600)
    parser.add_argument("--questions", type=int, default=30, help="per conversation, at most")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the N longest pairs (held-out data)"
    )
    parser.add_argument(
        "--undated", action="store_true", help="no session date markers (as before them)"
    )
    parser.add_argument(
        "--agent-sessions", type=int, default=6, help="generated tool-using sessions (0: none)"
    )
    parser.add_argument("--agent-tasks", type=int, default=40, help="tasks per agent session")
    parser.add_argument(
        "--sittings",
        action="store_true",
        help="one scoped session per sitting, consolidated at its end; questions asked in a "
        "fresh session (recall across a user's sessions, long-term entries alone)",
    )
    parser.add_argument(
        "--hard",
        type=int,
        help="what if: every input within N tokens (target 3/5 of it, keep 4) instead of the "
        "store's defaults",
    )
    parser.add_argument(
        "--entry-share",
        type=float,
        help="what if (with --sittings): consolidation's entries may hold this share of the "
        "tokens they distil instead of a quarter",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    limits = MemoryLimits()  # the store's defaults
    if args.hard is not None:
        try:
            limits = MemoryLimits(args.hard, args.hard * 3 // 5, limits.keep_recent)
        except MemstoreError as error:
            parser.error(f"--hard: {error}")
    if args.entry_share is not None:
        if not args.sittings or not 0 < args.entry_share <= 1:
            parser.error("--entry-share takes a share from 0 to 1, with --sittings")
        # A what-if on the product's own bound: budget_for reads the ratio when it runs.
        slots.ENTRY_SHARE = args.entry_share
    if args.locomo is not None:
        dataset = "LoCoMo"
        conversations = locomo_conversations(args.locomo, questions=args.questions)
    else:
        dataset = "Chit-Chat Challenge (chitchat-dataset 0.9.0)"
        conversations = chitchat_conversations(
            fetch_chitchat(args.cache),
            count=args.conversations,
            min_sessions=args.min_sessions,
            max_turns=args.max_turns,
            questions=args.questions,
            skip=args.skip,
            dated=not args.undated,
        )
    if args.sittings:
        import fidelity_sittings  # beside this file; it reads this module's measures

        rows = asyncio.run(fidelity_sittings.run_sittings(conversations, limits))
        result = fidelity_sittings.report_sittings(dataset, rows, limits)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            fidelity_sittings.print_sittings(result)
        return
    result = report(dataset, asyncio.run(run(conversations, limits)), limits)
    agents: list[dict[str, Any]] = []
    timing: dict[str, float] = {}
    if args.agent_sessions:
        agents = asyncio.run(agent_sessions.main_async(args.agent_sessions, args.agent_tasks))
        timing = agent_sessions.summarizer_time()
    if args.json:
        result["agent_sessions"] = {"rows": agents, "totals": agent_sessions.report(agents)}
        result["summarizer_time"] = timing
        print(json.dumps(result, indent=2))
        return
    print_report(result)
    if agents:
        agent_sessions.print_report(agents, timing)


if __name__ == "__main__":
    main()
