"""Choosing what to keep by what it adds: the rule both a summary and consolidation follow.

A summary has room for a few dozen lines out of hundreds of turns, and long-term entries for
a fifth of a conversation's tokens. A later question can name anything the conversation
touched, so what is kept should cover as much of it as the room allows: each candidate is
worth what it is on its own (a constraint's weight, a share of its content score) plus the
words it adds that nothing kept before it holds, per token it costs. A second line on the
same words adds little; a line with new names, numbers and things adds much. This is the
greedy rule for maximum coverage within a budget: each pick is the one that adds most per
token given the picks before it.

Pure: no I/O.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memstore.core.statements import is_chatter, telling_words

#: What a candidate's own content score (3 to 15: names, numbers, dates, what someone did)
#: counts beside the words it adds: a few words' worth, so a sentence with specifics goes
#: before one of ordinary words, but one that adds nothing new does not outrank one that does.
SCORE_SHARE = 0.3
_LABEL = re.compile(r"^[^:]{1,40}:\s")


@dataclass(frozen=True)
class Candidate:
    """Something that may be kept.

    Attributes:
        words: What it would add (:func:`new_words`).
        worth: What it is worth on its own, in words' worth.
        cost: Its tokens (at least 1 counts).
        rank: Among candidates alike, the higher goes first (the newer line, the older fact).
    """

    words: frozenset[str]
    worth: float
    cost: int
    rank: float = 0.0


def new_words(text: str) -> frozenset[str]:
    """The words ``text`` could add, its label's too (a subject's id says what a line is
    about; a speaker's name is soon covered). A single letter or digit says little on its
    own (``day 4``), and chatter (``ok``) nothing."""
    if is_chatter(_LABEL.sub("", text, count=1)):
        return frozenset()
    return frozenset(word for word in telling_words(text) if len(word) > 1)


def coverage_order(candidates: Sequence[Candidate]) -> list[int]:
    """The indexes of ``candidates`` in the order they are worth keeping: greedily, the most
    said per token, where what one says is its own worth plus the words it adds that none
    before it holds (module docstring)."""
    covered: set[str] = set()

    def worth(candidate: Candidate) -> float:
        return (candidate.worth + len(candidate.words - covered)) / max(candidate.cost, 1)

    # Lazy greedy: a candidate's worth only falls as its words are covered, so one whose
    # fresh worth still tops the heap is the best one (no need to re-rate all of them).
    heap = [(-worth(c), -c.rank, n) for n, c in enumerate(candidates)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, rank, n = heapq.heappop(heap)
        fresh = worth(candidates[n])
        if heap and fresh < -heap[0][0]:
            heapq.heappush(heap, (-fresh, rank, n))
            continue
        order.append(n)
        covered |= candidates[n].words  # the next candidate on these words says less
    return order
