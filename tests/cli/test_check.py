"""`memstore check`: a sound ledger passes; each kind of tampering is reported, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import raw_sqlite, write_worked_example

from memstore.cli import main


def check(db_path: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["--db", str(db_path), "check", *args])


def test_sound_database_passes(db_path: Path) -> None:
    write_worked_example(db_path)
    result = check(db_path)
    assert result.exit_code == 0
    assert result.output.strip() == "ok: all invariants hold"
    as_json = json.loads(check(db_path, "incident-42", "--json").output)
    assert as_json == {"ok": True, "violations": [], "index_lag": 0}


TAMPERING = {
    "tokens": "UPDATE sessions SET active_tokens = active_tokens + 1",
    "ledger": "UPDATE sessions SET active_items = active_items + 1",
    "clock": "UPDATE sessions SET version = version + 1",
    "report": "UPDATE compactions SET items_dropped = 2",
    "fate": "UPDATE items SET removed_by = 7 WHERE fate IS NOT NULL AND seq = 1",
    "summary": "UPDATE sessions SET summary = 'rewritten by hand'",
    "compactions": "UPDATE sessions SET compaction_count = 2",
}


@pytest.mark.parametrize("rule", sorted(TAMPERING))
def test_tampering_is_reported(db_path: Path, rule: str) -> None:
    write_worked_example(db_path)
    with raw_sqlite(db_path) as conn:  # foreign keys off: a hand edit can break them
        conn.execute(TAMPERING[rule])
    result = check(db_path, "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False
    assert rule in {v["rule"] for v in report["violations"]}
    human = check(db_path, "incident-42")
    assert human.exit_code == 1
    assert f"incident-42: {rule}:" in human.output


def test_foreign_key_breakage_is_reported_database_wide(db_path: Path) -> None:
    write_worked_example(db_path)
    with raw_sqlite(db_path) as conn:
        conn.execute("DELETE FROM compactions")
    result = check(db_path)
    assert result.exit_code == 1
    assert "foreign_key_check" in result.output


def test_check_of_unknown_session_exits_1(db_path: Path) -> None:
    write_worked_example(db_path)
    result = check(db_path, "nope")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: session 'nope' does not exist"
