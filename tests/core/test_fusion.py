"""Reciprocal rank fusion and the search modes: pure rules, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstore.core.embedder import check_embedder, resolve_mode
from memstore.core.fusion import RRF_K, fuse_hits, reciprocal_rank_fusion
from memstore.core.search_terms import SearchHit
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.errors import ValidationError

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def hit(seq: int, *, minutes: int = 0, snippet: str = "") -> SearchHit:
    item = MemoryItem(
        id=f"id-{seq}", session_id="s", seq=seq, role=MemoryRole.USER,
        kind=MemoryKind.USER_MESSAGE, priority=Priority.NORMAL, content=f"text {seq}",
        timestamp=T0 + timedelta(minutes=minutes), estimated_tokens=2,
    )  # fmt: skip
    return SearchHit("item", item.content, 1.0, snippet, session_id="s", seq=seq, item=item)


def names(fused: list[tuple[str, float]]) -> list[str]:
    return [name for name, _ in fused]


def test_each_ranking_gives_one_over_k_plus_rank() -> None:
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], str, lambda _: "")
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / (RRF_K + 1))
    assert scores["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert scores["c"] == pytest.approx(1 / (RRF_K + 2))
    assert names(fused) == ["b", "a", "c"]  # agreement beats one list's first place


def test_equal_scores_put_the_newer_hit_first() -> None:
    when = {"old": "2026-01-01", "new": "2026-02-01"}
    fused = reciprocal_rank_fusion([["old"], ["new"]], str, when.__getitem__)
    assert names(fused) == ["new", "old"]


def test_equal_scores_and_times_keep_the_word_ranking_order() -> None:
    fused = reciprocal_rank_fusion([["x", "y"], ["z"]], str, lambda _: "same")
    assert names(fused)[:2] == ["x", "z"]  # x and z tie at rank 1; x came first


def test_k_flattens_the_head() -> None:
    steep = dict(reciprocal_rank_fusion([["a", "b"]], str, lambda _: "", k=0))
    flat = dict(reciprocal_rank_fusion([["a", "b"]], str, lambda _: "", k=60))
    assert steep["a"] / steep["b"] > flat["a"] / flat["b"]


def test_empty_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion([[], []], str, str) == []


def test_fused_hits_carry_the_fused_score_and_the_word_snippet() -> None:
    lexical = [hit(1, snippet="[car] found"), hit(2)]
    semantic = [hit(3, minutes=5), hit(1, snippet="opening words")]
    fused = fuse_hits(lexical, semantic)
    assert [h.seq for h in fused] == [1, 3, 2]
    assert fused[0].snippet == "[car] found"
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)


def test_a_tie_between_the_rankings_goes_to_the_newer_item() -> None:
    fused = fuse_hits([hit(1, minutes=0)], [hit(2, minutes=9)])
    assert [h.seq for h in fused] == [2, 1]


@pytest.mark.parametrize(
    ("mode", "embedder", "expected"),
    [(None, True, "hybrid"), (None, False, "lexical"), ("semantic", True, "semantic"),
     ("lexical", True, "lexical"), ("lexical", False, "lexical")],
)  # fmt: skip
def test_the_default_mode_follows_the_embedder(
    mode: str | None, embedder: bool, expected: str
) -> None:
    assert resolve_mode(mode, embedder) == expected


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_ranking_by_meaning_without_an_embedder_is_refused(mode: str) -> None:
    with pytest.raises(ValidationError) as caught:
        resolve_mode(mode, False)
    assert caught.value.field == "mode"


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValidationError, match="lexical, semantic, hybrid"):
        resolve_mode("fuzzy", True)


class Good:
    name = "x"
    dimensions = 3

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


class NoName(Good):
    name = ""


class BadDimensions(Good):
    dimensions = 0


class NoEmbed:
    name = "x"
    dimensions = 3


@pytest.mark.parametrize("embedder", [NoName(), BadDimensions(), NoEmbed(), object()])
def test_an_embedder_missing_a_member_is_refused_naming_it(embedder: object) -> None:
    with pytest.raises(ValidationError) as caught:
        check_embedder(embedder)
    assert caught.value.field == "embedder"


def test_any_object_with_the_three_members_is_an_embedder() -> None:
    good = Good()
    assert check_embedder(good) is good
