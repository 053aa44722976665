"""Recall by meaning with the offline embedder: what it finds, and what it costs.

    python benchmarks/semantic.py [--conversations 10] [--questions 30] [--locomo PATH]
    python benchmarks/semantic.py --cost [--items 100000] [--calls 50]

**Quality** (default). Each conversation (:mod:`conversations`: the Chit-Chat Challenge's
pairs of people, fetched from PyPI once; ``--locomo PATH``: LoCoMo's ``locomo10.json`` too)
is appended turn by turn to a session with the store's defaults (limits 1500 / 900 / keep 4,
o200k_base counts, the extractive summarizer), in a store opened with
:class:`memstore.WordLlamaEmbedder`; then every row is embedded and every question asked at
the end, three ways: ``lexical`` (full text), ``semantic`` (vectors alone) and ``hybrid``
(both fused by reciprocal rank, the default with an embedder). Two measures:

* **recall@10**: an evidence turn is among ``memory.search(question, include_active=True,
  limit=10, mode=...)``'s hits;
* **answer words**: the share of the answer's content words that
  ``build_model_input(recall=question)`` holds (:func:`fidelity_measures.word_recall`). The model
  input has no mode argument: lexical is the same file opened without an embedder, semantic
  a what-if that has recall rank by vectors alone.

Each is also given for the **no-shared-word** questions: those none of whose content words
(common English words aside) appears in an evidence turn, where words alone find almost
nothing.

**Cost** (``--cost``): a session of ``--items`` forgotten chat turns (imported), then

* how fast the background catches up: ``store.embed_pending()`` over all of them, items/s;
* ``store.search(question)`` p50, hybrid beside lexical, and ``memory.search`` hybrid, with
  every vector embedded (the cache warm: the first search loads it, and its time is shown);
* durable appends per second with and without an embedder, rounds interleaved (an append
  never embeds).

Medians over this run on a shared machine; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import conversations
from conversations import Conversation, chitchat_conversations, fetch_chitchat, words_of
from fidelity_measures import answer_words, input_texts, word_recall
from suite import SETTINGS, history_records, interleaved, messages

from memstore import MemoryLimits, MemoryStore, WordEstimator, WordLlamaEmbedder
from memstore.core import fusion
from memstore.core.search_terms import STOPWORDS
from memstore.memory import embedding

MODES = ("lexical", "semantic", "hybrid")
NO_COMPACTION = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)


def telling(text: str) -> set[str]:
    return {word for word in words_of(text) if word not in STOPWORDS}


def no_shared_word(conv: Conversation, question: str, evidence: tuple[int, ...]) -> bool:
    asked = telling(question)
    return bool(asked) and not any(asked & telling(conv.turns[i][1]) for i in evidence)


class Tally:
    """Sums per mode, for all questions and the no-shared-word ones."""

    def __init__(self) -> None:
        self.counts = {"all": 0, "no shared word": 0}
        self.found = {part: dict.fromkeys(MODES, 0) for part in self.counts}
        self.words = {part: dict.fromkeys(MODES, 0.0) for part in self.counts}

    def add(self, parts: list[str], mode: str, found: bool, words: float) -> None:
        for part in parts:
            self.found[part][mode] += found
            self.words[part][mode] += words

    def report(self) -> dict[str, Any]:
        return {
            part: {
                "questions": count,
                "recall@10": {m: self.found[part][m] / max(count, 1) for m in MODES},
                "answer_words": {m: self.words[part][m] / max(count, 1) for m in MODES},
            }
            for part, count in self.counts.items()
        }


async def input_words(memory: Any, question: str, answer: set[str], *, semantic: bool) -> float:
    if not semantic:
        return word_recall(answer, input_texts(await memory.build_model_input(recall=question)))
    original = embedding.ranking

    async def by_vectors_alone(service, query, terms, scope, mode=None):  # type: ignore[no-untyped-def]
        return await original(service, query, terms, scope, "semantic")

    embedding.ranking = by_vectors_alone  # the what-if: recall ranks by vectors alone
    try:
        texts = input_texts(await memory.build_model_input(recall=question))
    finally:
        embedding.ranking = original
    return word_recall(answer, texts)


async def measure(
    conv: Conversation, folder: Path, embedder: WordLlamaEmbedder, tally: Tally
) -> None:
    path = folder / f"{conv.name}.db"
    async with MemoryStore.open(path, embedder=embedder) as store:
        memory = store.session(conv.name)
        for role, text in conv.turns:
            await memory.add(role, text)
        await store.embed_pending()
        async with MemoryStore.open(path) as plain:
            words_only = await plain.attach(conv.name)
            for question, evidence, answer in conv.questions:
                parts = ["all"] + (
                    ["no shared word"] if no_shared_word(conv, question, evidence) else []
                )
                for part in parts:
                    tally.counts[part] += 1
                wanted = answer_words(answer)
                evidence_seqs = {index + 1 for index in evidence}
                for mode in MODES:
                    hits = await memory.search(question, include_active=True, limit=10, mode=mode)  # type: ignore[arg-type]
                    found = any(hit.seq in evidence_seqs for hit in hits)
                    handle = words_only if mode == "lexical" else memory
                    words = await input_words(handle, question, wanted, semantic=mode == "semantic")
                    tally.add(parts, mode, found, words)


async def quality(convs: list[Conversation]) -> dict[str, Any]:
    embedder = WordLlamaEmbedder()
    tally = Tally()
    with tempfile.TemporaryDirectory() as scratch:
        for conv in convs:
            await measure(conv, Path(scratch), embedder, tally)
    return tally.report()


# -- cost --------------------------------------------------------------------------------------


def chat_texts(limit: int) -> tuple[list[str], list[str]]:
    import search  # beside this file

    return search.chat_texts(limit)


async def timed_ms(calls: int, run: Any) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


async def cost(items: int, calls: int) -> dict[str, Any]:
    texts, questions = chat_texts(items)
    asked = questions * (calls // len(questions) + 2)
    out: dict[str, Any] = {"items": items}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "cost.db"
        async with MemoryStore.open(path, settings=SETTINGS) as plain:
            await plain.import_session(history_records(items, 50, texts))
        async with MemoryStore.open(path, settings=SETTINGS, embedder=WordLlamaEmbedder()) as store:
            start = time.perf_counter()
            counts = await store.embed_pending()
            seconds = time.perf_counter() - start
            out["embedded"] = counts.embedded
            out["catch_up_items_per_s"] = counts.embedded / seconds
            start = time.perf_counter()
            await store.search(asked[0])
            out["first_search_ms"] = (time.perf_counter() - start) * 1000
            memory = await store.attach("h")
            lexical, hybrid, session = iter(asked), iter(asked), iter(asked)
            out["store_search_lexical_p50_ms"] = await timed_ms(
                calls, lambda: store.search(next(lexical), mode="lexical")
            )
            out["store_search_hybrid_p50_ms"] = await timed_ms(
                calls, lambda: store.search(next(hybrid))
            )
            out["memory_search_hybrid_p50_ms"] = await timed_ms(
                calls, lambda: memory.search(next(session))
            )
    return out


def appends_per_second(count: int = 300, rounds: int = 5) -> dict[str, float]:
    texts = messages(count)

    def appender(embedder: WordLlamaEmbedder | None) -> Any:
        async def run(path: Path) -> float:
            async with MemoryStore.open(path, settings=SETTINGS, embedder=embedder) as store:
                memory = store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION)
                await memory.add("user", "warm-up")
                start = time.perf_counter()
                for text in texts:
                    await memory.add("user", text)
                return time.perf_counter() - start

        return run

    seconds = interleaved(
        {"no embedder": appender(None), "offline embedder": appender(WordLlamaEmbedder())},
        rounds,
    )
    return {label: count / value for label, value in seconds.items()}


def print_quality(name: str, report: dict[str, Any]) -> None:
    for part, row in report.items():
        print(f"{name}, {part} ({row['questions']} questions)")
        print(f"  {'':14}" + "".join(f"{mode:>10}" for mode in MODES))
        for measure_name in ("recall@10", "answer_words"):
            cells = "".join(f"{row[measure_name][mode]:>10.1%}" for mode in MODES)
            print(f"  {measure_name:14}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--questions", type=int, default=30, help="per conversation, at most")
    parser.add_argument("--min-sessions", type=int, default=10)
    parser.add_argument("--max-turns", type=int, default=600)
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json, measured too")
    parser.add_argument("--cost", action="store_true", help="the cost at --items instead")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rrf-k", type=int, help="what if: fuse with this k")
    parser.add_argument("--depth", type=int, help="what if: read each ranking N times deeper")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rrf_k is not None:
        fusion.RRF_K = args.rrf_k
    if args.depth is not None:
        fusion.FUSION_DEPTH = args.depth
    if args.cost:
        result: dict[str, Any] = asyncio.run(cost(args.items, args.calls))
        result["appends_per_s"] = appends_per_second()
        print(json.dumps(result, indent=2))
        return
    cache = conversations.DEFAULT_CACHE / "memstore-benchmarks"
    corpora = {
        "Chit-Chat": chitchat_conversations(
            fetch_chitchat(cache), count=args.conversations, min_sessions=args.min_sessions,
            max_turns=args.max_turns, questions=args.questions,
        )
    }  # fmt: skip
    if args.locomo is not None:
        corpora["LoCoMo"] = conversations.locomo_conversations(
            args.locomo, questions=args.questions
        )
    results = {name: asyncio.run(quality(convs)) for name, convs in corpora.items()}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, report in results.items():
        print_quality(name, report)


if __name__ == "__main__":
    main()
