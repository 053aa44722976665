"""Memory across a user's sessions, on conversations no one here wrote.

``python benchmarks/fidelity.py --sittings`` (this module holds that measurement; the data is
:mod:`conversations`', the measures :mod:`fidelity`'s): each conversation is split into its
sittings, one session each, all of one scope, consolidated at the end of each; then every
question is asked in a fresh session. Four inputs are compared: the newest turns of the last
sitting within the hard limit; the whole history; a fresh session of the scope
(``store.session(..., scope=...)``, ``build_model_input(recall=QUESTION)``: the scope's other
sessions and its long-term entries); and a fresh unscoped session that sees only the scope's
long-term entries (``ltm_scopes=[scope]``). An answer counts when the input holds the answer
turn, or one of its sentences carrying at least half of its telling words, word for word (a
fact keeps a sentence in the speaker's words; nothing paraphrased counts).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from conversations import Conversation, normalized, words_of  # beside this file
from fidelity_measures import answer_words, input_texts, truncated, word_recall  # beside this file

from memstore import ExtractiveSummarizer, MemoryLimits, MemoryStore, TiktokenEstimator
from memstore.core.search_terms import STOPWORDS, search_terms
from memstore.core.values import ITEM_OVERHEAD_TOKENS
from memstore.db.reads import utcnow
from memstore.db.scope_search import scope_passages
from memstore.render.recall import RECALL_CANDIDATES

# -- across sittings: consolidation and recall across a user's sessions ------------------------

#: Where the answer could at best come from: the scope's search (as recall runs it), the
#: scope's long-term entries.
CEILINGS = ("search's 40 best passages", "every entry")
SITTING_CONDITIONS = ("last sitting", "whole history", "fresh scoped session", "long-term only")


def _word_line(text: str) -> str:
    return " " + " ".join(words_of(text)) + " "


def holds_answer(text: str, evidence: str) -> bool:
    """Whether a model input's text holds an evidence turn's answer: the turn word for word,
    or one of its sentences word for word (case and punctuation aside) that carries at least
    half of the turn's telling words (two at least). A fact line keeps a sentence of the turn
    in the speaker's words; this counts it, and counts nothing paraphrased."""
    if normalized(evidence) in text:
        return True
    telling = {w for w in words_of(evidence) if w not in STOPWORDS}
    need = max(2, (len(telling) + 1) // 2)
    line = _word_line(text)
    for sentence in evidence.replace("?", ".").replace("!", ".").split("."):
        carried = {w for w in words_of(sentence) if w not in STOPWORDS}
        if len(carried) >= need and _word_line(sentence) in line:
            return True
    return False


async def measure_sittings(
    conv: Conversation, store: MemoryStore, limits: MemoryLimits
) -> dict[str, Any]:
    """One scoped session per sitting, consolidated at its end; then each question asked in a
    fresh session of the scope (``build_model_input(recall=QUESTION)``), and in a fresh
    unscoped session that sees only the scope's long-term entries (``ltm_scopes=[scope]``),
    against the newest turns of the last sitting and the whole history."""
    estimator = TiktokenEstimator()
    scope = f"user:{conv.name}"
    bounds = [*conv.sittings, len(conv.turns)]
    for number, (start, end) in enumerate(itertools.pairwise(bounds), 1):
        memory = store.session(
            f"{conv.name}-sitting-{number}",
            scope=scope,
            limits=limits,
            estimator=estimator,
            summarizer=ExtractiveSummarizer(),
        )
        for role, text in conv.turns[start:end]:
            await memory.add(role, text)
        await memory.consolidate()
    counts = [estimator.count(" ".join(text.split())) for _role, text in conv.turns]
    last = conv.turns[bounds[-2] :]
    last_turns = truncated(last, counts[bounds[-2] :], limits.hard)
    whole = normalized("\n".join(text for _role, text in conv.turns))
    entries = await store.ltm.list(scope=scope)
    entry_tokens = sum(estimator.count(f"{e.key} {e.value}") for e in entries)
    every_entry = normalized("\n".join(str(e.value) for e in entries))
    answered = dict.fromkeys(SITTING_CONDITIONS, 0)
    strict = dict.fromkeys(SITTING_CONDITIONS, 0)
    words = dict.fromkeys(SITTING_CONDITIONS, 0.0)
    ceilings = dict.fromkeys(CEILINGS, 0)
    for index, (question, evidence, answer) in enumerate(conv.questions):
        fresh = store.session(
            f"{conv.name}-ask-{index}", scope=scope, limits=limits, estimator=estimator
        )
        scoped = input_texts(await fresh.build_model_input(recall=question))
        outsider = store.session(
            f"{conv.name}-entries-{index}", ltm_scopes=[scope], limits=limits, estimator=estimator
        )
        remembered = input_texts(await outsider.build_model_input(recall=question))
        needed = [conv.turns[i][1] for i in evidence]
        inputs = (last_turns, whole, scoped, remembered)
        for condition, text in zip(SITTING_CONDITIONS, inputs, strict=True):
            answered[condition] += all(holds_answer(text, part) for part in needed)
            strict[condition] += all(normalized(part) in text for part in needed)
            words[condition] += word_recall(answer_words(answer), text)
        # What no budget can beat: the answer among the passages the scope's search finds
        # (every one of them shown), and among every entry of the scope (all shown).
        found, _, _ = await scope_passages(
            store.database, search_terms(question), f"{conv.name}-ask-{index}", scope,
            RECALL_CANDIDATES, utcnow(), own=False,
        )  # fmt: skip
        passages = normalized("\n".join(hit.text for passage in found for hit in passage))
        ceilings["search's 40 best passages"] += all(normalized(p) in passages for p in needed)
        ceilings["every entry"] += all(holds_answer(every_entry, part) for part in needed)
    return {
        "conversation": conv.name,
        "sittings": len(conv.sittings),
        "turns": len(conv.turns),
        "history_tokens": sum(counts) + ITEM_OVERHEAD_TOKENS * len(counts),
        "entries": len(entries),
        "entry_tokens": entry_tokens,
        "questions": len(conv.questions),
        "answered": answered,
        "answered_verbatim": strict,
        "answer_words": words,
        "ceilings": ceilings,
    }


async def run_sittings(
    conversations: list[Conversation], limits: MemoryLimits
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "sittings.db") as store:
            return [await measure_sittings(conv, store, limits) for conv in conversations]


def report_sittings(
    dataset: str, rows: list[dict[str, Any]], limits: MemoryLimits
) -> dict[str, Any]:
    questions = sum(row["questions"] for row in rows)

    def shares(field_: str) -> dict[str, float]:
        return {
            c: sum(row[field_][c] for row in rows) / questions if questions else 0.0
            for c in SITTING_CONDITIONS
        }

    share = shares("answered")
    last = share["last sitting"]
    history = sum(row["history_tokens"] for row in rows)
    entry_tokens = sum(row["entry_tokens"] for row in rows)
    return {
        "dataset": dataset,
        "limits": {"hard": limits.hard, "target": limits.target, "keep_recent": limits.keep_recent},
        "conversations": rows,
        "questions": questions,
        "share": share,
        "share_verbatim": shares("answered_verbatim"),
        "answer_words": shares("answer_words"),
        "ceilings": {
            c: sum(row["ceilings"][c] for row in rows) / questions if questions else 0.0
            for c in CEILINGS
        },
        "goal_a": {
            "of_whole_history": share["fresh scoped session"] / share["whole history"]
            if share["whole history"] else None,
            "over_last_sitting": share["fresh scoped session"] / last if last else None,
        },
        "goal_b": {
            "over_last_sitting": share["long-term only"] / last if last else None,
            "entry_share_of_history": entry_tokens / history if history else None,
        },
    }  # fmt: skip


def print_sittings(result: dict[str, Any]) -> None:
    limits = result["limits"]
    print(
        f"{result['dataset']}, across sittings: {len(result['conversations'])} conversations, "
        f"{result['questions']} questions; every input within {limits['hard']} tokens but the "
        "whole history"
    )
    print(f"{'conversation':<14}{'sittings':>9}{'tokens':>8}{'entries':>8}{'entry tok':>10}"
          + "".join(f"{c:>22}" for c in SITTING_CONDITIONS))  # fmt: skip
    for row in result["conversations"]:
        cells = "".join(f"{row['answered'][c]:>22}" for c in SITTING_CONDITIONS)
        print(f"{row['conversation']:<14}{row['sittings']:>9}{row['history_tokens']:>8}"
              f"{row['entries']:>8}{row['entry_tokens']:>10}{cells}")  # fmt: skip
    shares = "".join(f"{result['share'][c]:>22.1%}" for c in SITTING_CONDITIONS)
    print(f"{'answered':<49}{shares}")
    verbatim = "".join(f"{result['share_verbatim'][c]:>22.1%}" for c in SITTING_CONDITIONS)
    print(f"{'  (whole answer turn)':<49}{verbatim}")
    held = "".join(f"{result['answer_words'][c]:>22.1%}" for c in SITTING_CONDITIONS)
    print(f"{'answer words held':<49}{held}")
    a, b = result["goal_a"], result["goal_b"]

    def times(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}x"

    print(
        f"(a) fresh scoped session: {times(a['of_whole_history'])} of the whole history's, "
        f"{times(a['over_last_sitting'])} the last sitting's"
    )
    share = b["entry_share_of_history"]
    print(
        f"(b) long-term entries only: {times(b['over_last_sitting'])} the last sitting's; "
        f"entries hold {'n/a' if share is None else f'{share:.1%}'} of the conversations' tokens"
    )
    held_by = ", ".join(f"{c} {v:.1%}" for c, v in result["ceilings"].items())
    print(f"ceilings (the answer is in, whatever the budget): {held_by}")
