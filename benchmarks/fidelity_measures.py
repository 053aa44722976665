"""The measures the fidelity benchmarks share: what a model input says, the newest turns a
budget holds, an answer's content words and how many of them an input holds.

``fidelity.py``, ``fidelity_sittings.py`` and ``semantic.py`` import these (beside this file);
none of those imports another, so the benchmarks hold no import cycle.
"""

from __future__ import annotations

import json
from typing import Any

from conversations import normalized, words_of  # beside this file

from memstore.core.search_terms import STOPWORDS
from memstore.core.values import ITEM_OVERHEAD_TOKENS
from memstore.render.input import MEMORIES_CLOSE, MEMORIES_OPEN, SUMMARY_PREAMBLE
from memstore.render.recall import RECALL_CLOSE, RECALL_OPEN


def input_texts(messages: list[dict[str, Any]]) -> str:
    """Everything a model input says, recalled passages and memories decoded from their JSON
    lines."""
    texts = []
    for message in messages:
        content = message["content"]
        lines = content.split("\n")
        if RECALL_OPEN in lines:
            block = lines[lines.index(RECALL_OPEN) + 1 : lines.index(RECALL_CLOSE)]
            texts += [json.loads(line)["text"] for line in block]
        elif MEMORIES_OPEN in lines:
            block = lines[lines.index(MEMORIES_OPEN) + 1 : lines.index(MEMORIES_CLOSE)]
            texts += [str(json.loads(line)["value"]) for line in block]
        elif content.startswith(SUMMARY_PREAMBLE):
            texts.append(content.split("\n\n", 1)[1])
        else:
            texts.append(content)
    return normalized("\n".join(texts))


def truncated(turns: list[tuple[str, str]], counts: list[int], budget: int) -> str:
    """The newest turns whose cost (tokens + 4 each) fits ``budget``."""
    used, kept = 0, []
    for (_role, text), tokens in zip(reversed(turns), reversed(counts), strict=True):
        if used + tokens + ITEM_OVERHEAD_TOKENS > budget:
            break
        used += tokens + ITEM_OVERHEAD_TOKENS
        kept.append(text)
    return normalized("\n".join(kept))


def answer_words(answer: str) -> set[str]:
    """The answer's content words: what an input must hold for the answer to be there."""
    return {word for word in words_of(answer) if word not in STOPWORDS}


def word_recall(answer: set[str], text: str) -> float:
    """The share of ``answer``'s words that ``text`` holds."""
    if not answer:
        return 0.0
    return len(answer & set(words_of(text))) / len(answer)
