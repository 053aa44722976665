"""Core statements compiled for the stdlib driver: an expanding bind binds as SQLAlchemy's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sqlalchemy import bindparam, select

from memstore.db.compaction import MARK_REMOVED
from memstore.db.sqlite_statements import _DIALECT, Compiled
from memstore.db.tables import items


def params(ids: list[str]) -> dict[str, object]:
    return {"sid": "s", "item_ids": ids, "fate": "dropped", "number": 3, "v": 9}


@pytest.mark.parametrize("length", [1, 3, 500])
def test_an_expanding_bind_renders_and_binds_as_sqlalchemy_does(length: int) -> None:
    ids = [f"id-{n}" for n in range(length)]
    ours = Compiled(MARK_REMOVED).bound(params(ids))
    theirs = MARK_REMOVED.compile(dialect=_DIALECT).construct_expanded_state(params(ids))
    assert ours == (theirs.statement, tuple(theirs.positional_parameters))
    assert ours[0].count("?") == len(ours[1]) == length + 5


def test_the_sql_is_rendered_once_per_length() -> None:
    compiled = Compiled(MARK_REMOVED)
    first = compiled.bound(params(["a", "b"]))[0]
    assert compiled.bound(params(["c", "d"]))[0] is first
    assert compiled.bound(params(["c", "d", "e"]))[0] is not first


def test_a_statement_with_two_expanding_binds_is_refused() -> None:
    twice = select(items.c.id).where(
        items.c.id.in_(bindparam("a", expanding=True)),
        items.c.session_id.in_(bindparam("b", expanding=True)),
    )
    with pytest.raises(ValueError, match="more than one expanding bind"):
        Compiled(twice)


def test_values_expanded_elsewhere_than_the_lists_slot_are_refused() -> None:
    """If SQLAlchemy ever rendered the list away from its slot, splicing the values there
    would bind them to the wrong placeholders: that is checked, not assumed."""
    compiled = Compiled(MARK_REMOVED)
    real = compiled._compiled.construct_expanded_state(params(["a", "b"]))
    moved = [*real.positiontup[-1:], *real.positiontup[:-1]]
    compiled._compiled = SimpleNamespace(  # type: ignore[assignment]
        construct_expanded_state=lambda _: SimpleNamespace(
            statement=real.statement, positiontup=moved
        )
    )
    with pytest.raises(RuntimeError, match="expanded 'item_ids'"):
        compiled.bound(params(["a", "b"]))
