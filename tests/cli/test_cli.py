"""The CLI of the foundation: `memstore demo`, `memstore show`, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from memstore.cli import main
from memstore.cli.demo import SCRIPT


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_demo_runs_offline_and_show_reads_it(db_path: Path) -> None:
    result = invoke("--db", str(db_path), "demo")
    assert result.exit_code == 0, result.output
    assert "compaction #1" in result.output
    assert "dropped" in result.output and "summarized" in result.output
    assert f"memstore --db {db_path} show incident-demo --all" in result.output

    shown = invoke("--db", str(db_path), "show", "incident-demo", "--all", "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    session = data["session"]
    assert session["items_total"] == len(SCRIPT)
    assert session["compaction_count"] >= 2
    assert session["estimator"] == "tiktoken:o200k_base"
    assert session["total_tokens"] < session["hard_limit"]
    # Most essential first: the user's rule. No objective leads it: the folded items hold no
    # request still open (the rollback asked for ran before the fold), and the newer ones
    # are still active items.
    assert data["summary"].startswith("Constraints:\n- Constraint: never restart payment-service")
    assert "Decisions:\n- Root-cause hypothesis: fraud-service v2.31.0" in data["summary"]
    # Every scripted item is either active or forgotten with a fate: nothing was lost.
    seqs = sorted(i["seq"] for i in data["items"] + data["forgotten"])
    assert seqs == list(range(1, len(SCRIPT) + 1))
    assert {i["fate"] for i in data["forgotten"]} <= {"dropped", "summarized", "evicted"}
    assert all(i["removed_by"] >= 1 for i in data["forgotten"])

    # A second run makes a new session instead of mixing into the first.
    again = invoke("--db", str(db_path), "demo")
    assert "incident-demo-2" in again.output


def test_show_human_output(db_path: Path) -> None:
    invoke("--db", str(db_path), "demo", "--session", "inc-1")
    result = invoke("--db", str(db_path), "show", "inc-1")
    assert result.exit_code == 0
    assert "summary" in result.output and "active items" in result.output
    assert "hard 440" in result.output
    assert "forgotten items" not in result.output
    full = invoke("--db", str(db_path), "show", "inc-1", "--all", "--full")
    assert (
        "forgotten items" in full.output and "evicted" in full.output
    ) or "dropped" in full.output


def test_unknown_session_is_one_line_exit_1(db_path: Path) -> None:
    invoke("--db", str(db_path), "demo", "--session", "exists")
    result = CliRunner().invoke(main, ["--db", str(db_path), "show", "nope"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: session 'nope' does not exist"


def test_missing_database_is_not_created_by_show(tmp_path: Path) -> None:
    target = tmp_path / "absent.db"
    result = CliRunner().invoke(main, ["--db", str(target), "show", "x"])
    assert result.exit_code == 1
    assert "no database at" in result.output
    assert not target.exists()


def test_not_a_database_exits_1_without_traceback(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("these are my notes, not a database\n")
    env = {**os.environ, "MEMSTORE_DB": str(bogus)}
    proc = subprocess.run(
        [sys.executable, "-m", "memstore.cli", "show", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().endswith("is not an SQLite database (left untouched)")
    assert bogus.read_text() == "these are my notes, not a database\n"


def test_usage_error_exits_2(db_path: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(db_path), "show"])
    assert result.exit_code == 2


def test_invalid_session_id_exits_1(db_path: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(db_path), "demo", "--session", "bad id"])
    assert result.exit_code == 1
    assert "--session: 'bad id' is not a valid id" in result.output  # as typed, not session_id
    assert "session_id" not in result.output
