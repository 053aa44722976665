"""Hybrid ranking: full-text and vector rankings fused by reciprocal rank.

A search with an embedder ranks twice: by words (FTS5's ``bm25``, PostgreSQL's ``ts_rank``)
and by meaning (cosine similarity of embeddings). The two scores live on different scales,
and neither scale means the same from one query to the next, so they are not added: their
*ranks* are. Reciprocal rank fusion (RRF) gives a hit ``1 / (k + rank)`` from each ranking it
appears in (rank 1 is the best) and sums them:

* a hit both rankings place high beats one that only one ranking found;
* ``k`` (:data:`RRF_K`, 60 as in the paper that introduced it) flattens the head of each
  ranking, so the first place of one list does not outweigh agreement of both;
* equal fused scores (a hit third by words only, another third by meaning only) are broken
  by recency: the newer one first, then the order of the word ranking.

Pure: the rankings arrive as lists, best first; nothing here reads a database.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from memstore.core.search_terms import SearchHit

T = TypeVar("T")

#: RRF's constant: the value of the paper that introduced it (Cormack, Clarke and Büttcher,
#: 2009), which the benchmarks/semantic.py figures did not improve on (docs/recall.md).
RRF_K = 60
#: How much deeper than the hits wanted each ranking is read before fusing.
FUSION_DEPTH = 3
_OLDEST = datetime.min.isoformat()


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[T]],
    key: Callable[[T], Hashable],
    recency: Callable[[T], str],
    k: int = RRF_K,
) -> list[tuple[T, float]]:
    """The rankings fused, best first, each with its fused score.

    Args:
        rankings: Each a list of hits, best first. A hit appearing in several (by ``key``)
            sums its shares; the first list's copy of it is the one returned.
        key: What makes two hits of different rankings the same hit.
        recency: A sortable text (an ISO time) saying how new a hit is: breaks ties, newer
            first.
        k: The constant added to each rank.

    Returns:
        ``(hit, score)`` pairs, highest score first.
    """
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, tuple[int, T]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            name = key(hit)
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
            first.setdefault(name, (len(first), hit))
    # Newest first among equal scores: sort by recency descending, then by score (stable).
    order = sorted(first, key=lambda name: first[name][0])
    order.sort(key=lambda name: recency(first[name][1]), reverse=True)
    order.sort(key=lambda name: scores[name], reverse=True)
    return [(first[name][1], scores[name]) for name in order]


def hit_key(hit: SearchHit) -> Hashable:
    """What makes two hits one: the item, the summary or the entry they carry."""
    if hit.source == "ltm" and hit.entry is not None:
        return ("ltm", hit.entry.scope, hit.entry.key)
    if hit.source == "summary":
        return ("summary", hit.session_id, hit.compaction)
    return ("item", hit.session_id, hit.seq)


def hit_recency(hit: SearchHit) -> str:
    """When a hit was written, as sortable text (a summary carries no time: the oldest)."""
    if hit.item is not None:
        return hit.item.timestamp.isoformat()
    if hit.entry is not None:
        return hit.entry.updated_at.isoformat()
    return _OLDEST


def fuse_hits(
    lexical: Sequence[SearchHit], semantic: Sequence[SearchHit], k: int | None = None
) -> list[SearchHit]:
    """The word and meaning rankings of one search fused (:func:`reciprocal_rank_fusion`,
    ``k`` :data:`RRF_K` by default), each hit's ``score`` its fused score; a hit both found
    keeps its word snippet."""
    fused = reciprocal_rank_fusion((lexical, semantic), hit_key, hit_recency, k or RRF_K)
    return [replace(hit, score=score) for hit, score in fused]
