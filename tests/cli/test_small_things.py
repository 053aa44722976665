"""The CLI's small promises, through the executable as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clients import memstore_cli


def test_a_retried_add_says_it_was_already_stored(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    keyed = ["add", "s", "hello", "--idempotency-key", "k1", "--estimator", "words"]
    first, again = memstore_cli(db, *keyed), memstore_cli(db, *keyed)
    assert first.stdout.startswith("added #1 ") and "(1 token)" in first.stdout
    assert again.stdout.startswith("already stored as #1 (idempotency key k1); nothing added")
    assert memstore_cli(db, "add", "s", "two words", "--estimator", "words").stdout.startswith(
        "added #2 "
    )


def test_priorities_are_shown_in_one_case_and_taken_in_any(tmp_path: Path) -> None:
    help_text = memstore_cli(tmp_path / "h.db", "add", "--help").stdout
    assert "[low|normal|high]" in help_text and "NORMAL" not in help_text
    for spelling in ("HIGH", "high", "High"):
        added = memstore_cli(tmp_path / "p.db", "add", "s", "x", "--priority", spelling)
        assert added.returncode == 0 and " HIGH " in added.stdout


def test_the_demo_shows_each_compaction_after_the_append_that_set_it_off(tmp_path: Path) -> None:
    lines = memstore_cli(tmp_path / "demo.db", "demo").stdout.splitlines()
    first_box = next(n for n, line in enumerate(lines) if "compaction #1" in line)
    appends = [n for n, line in enumerate(lines) if line.lstrip().startswith("+#")]
    trigger = max(n for n in appends if n < first_box)
    assert first_box > trigger and any(a > first_box for a in appends)


def test_the_demo_ends_with_a_command_that_works_from_here(tmp_path: Path) -> None:
    last = memstore_cli(tmp_path / "demo.db", "demo", cwd=tmp_path).stdout.strip().splitlines()[-1]
    assert last.startswith("Inspect it: ")
    command = last.removeprefix("Inspect it: ")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    shown = subprocess.run(
        command, shell=True, capture_output=True, text=True, cwd=tmp_path, timeout=60, env=env
    )
    assert shown.returncode == 0 and "incident-demo" in shown.stdout


@pytest.mark.parametrize("columns", ["80", "200"])
def test_piped_output_is_never_cut(
    tmp_path: Path, columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    db = tmp_path / "demo.db"
    memstore_cli(db, "demo", "--session", "incident-demo-with-a-long-identifier")
    sessions = memstore_cli(db, "sessions").stdout
    assert "incident-demo-with-a-long-identifier" in sessions
    full = memstore_cli(db, "show", "incident-demo-with-a-long-identifier", "--full").stdout
    assert "no payments were lost" in full  # a phrase of the last message, on one line
    shown = memstore_cli(db, "show", "incident-demo-with-a-long-identifier", "--all").stdout
    assert "no payments were lost" in shown  # piped: whole texts without --full too
    record = next(line for line in shown.splitlines() if "no payments were lost" in line)
    assert record.split("│")[1].strip().isdigit()  # the whole message on its item's line
