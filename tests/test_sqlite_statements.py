"""Core statements compiled for the stdlib driver: an expanding bind binds as SQLAlchemy's."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import bindparam, select, update

from memstore.db.compaction import MARK_REMOVED
from memstore.db.sqlite_statements import _DIALECT, Compiled, execute
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


def test_an_expanding_statement_is_never_run_as_executemany(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "x.db")) as conn, pytest.raises(ValueError) as raised:
        execute(conn, MARK_REMOVED, [params(["a"]), params(["b"])])
    assert "executemany of a statement with an expanding bind" in str(raised.value)


def test_an_expanding_bind_with_a_type_processor_is_refused() -> None:
    """Each value would need converting after the splice: refused rather than sent raw."""
    stamped = select(items.c.id).where(items.c.created_at.in_(bindparam("at", expanding=True)))
    with pytest.raises(ValueError, match="an expanding bind with a type processor"):
        Compiled(stamped)


def test_a_statement_with_two_expanding_binds_is_refused() -> None:
    twice = select(items.c.id).where(
        items.c.id.in_(bindparam("a", expanding=True)),
        items.c.session_id.in_(bindparam("b", expanding=True)),
    )
    with pytest.raises(ValueError, match="more than one expanding bind"):
        Compiled(twice)


MIDDLE = (
    update(items)
    .where(items.c.id.in_(bindparam("ids", expanding=True)), items.c.seq > bindparam("after"))
    .values(fate=bindparam("fate"), removed_by=bindparam("number"))
)
MIDDLE_PARAMS = {"ids": ["a", "b", "c"], "after": 7, "fate": "evicted", "number": 2}


def test_binds_after_the_expanding_one_keep_their_places() -> None:
    theirs = MIDDLE.compile(dialect=_DIALECT).construct_expanded_state(MIDDLE_PARAMS)
    ours = Compiled(MIDDLE).bound(MIDDLE_PARAMS)
    assert ours == (theirs.statement, tuple(theirs.positional_parameters))
    assert ours[1] == ("evicted", 2, "a", "b", "c", 7)


@pytest.mark.parametrize(
    "misplace",
    [
        lambda names: [names[-1], *names[:-1]],  # a value before the list moved
        lambda names: [*names[:-2], names[-1], names[-2]],  # the bind after the list moved
        lambda names: names[:-1],  # the bind after the list gone
    ],
    ids=["head", "tail", "missing"],
)
def test_values_expanded_elsewhere_than_the_lists_slot_are_refused(
    misplace: Callable[[list[str]], list[str]],
) -> None:
    """If SQLAlchemy ever rendered the list away from its slot, splicing the values there
    would bind them to the wrong placeholders: that is checked, not assumed."""
    compiled = Compiled(MIDDLE)
    real = compiled._compiled.construct_expanded_state(MIDDLE_PARAMS)
    compiled._compiled = SimpleNamespace(  # type: ignore[assignment]
        construct_expanded_state=lambda _: SimpleNamespace(
            statement=real.statement, positiontup=misplace(list(real.positiontup))
        )
    )
    with pytest.raises(RuntimeError, match="expanded 'ids'"):
        compiled.bound(MIDDLE_PARAMS)
