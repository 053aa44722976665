"""``memstore ltm ...``: round trips with ``--json`` parsed field by field, and exit codes
(0 ok, 1 a domain failure in one line, 2 a usage error)."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from clients import memstore_process

from memstore.cli import main


def run(db: str | Path, *args: str) -> Result:
    # A wide terminal: human output tables then keep each cell on one line.
    return CliRunner().invoke(main, ["--db", str(db), "ltm", *args], env={"COLUMNS": "250"})


def ok_json(db: str | Path, *args: str) -> Any:
    result = run(db, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    return lines[0]


def test_set_get_round_trip(backend_url: str) -> None:
    created = ok_json(backend_url, "set", "test_framework", "pytest", "--scope", "user:alice")
    assert created["scope"] == "user:alice"
    assert created["key"] == "test_framework"
    assert created["value"] == "pytest"
    assert created["version"] == 1
    assert created["expires_at"] is None
    assert created["created_at"] == created["updated_at"]
    assert datetime.fromisoformat(created["created_at"]).utcoffset() == timedelta(0)
    got = ok_json(backend_url, "get", "test_framework", "--scope", "user:alice")
    assert got == created
    updated = ok_json(
        backend_url, "set", "test_framework", "pytest-asyncio", "--scope", "user:alice"
    )
    assert updated["version"] == 2 and updated["value"] == "pytest-asyncio"
    assert updated["created_at"] == created["created_at"]
    assert updated["updated_at"] >= created["updated_at"]


def test_value_is_a_string_unless_json_value(db_path: Path) -> None:
    assert ok_json(db_path, "set", "n", "42")["value"] == "42"
    assert ok_json(db_path, "set", "n", "42", "--json-value")["value"] == 42
    document = {"editor": "vim", "tabs": False, "width": 4.5, "tags": ["a", None]}
    stored = ok_json(db_path, "set", "prefs", json.dumps(document), "--json-value")
    assert stored["value"] == document and stored["version"] == 1
    assert ok_json(db_path, "get", "prefs")["value"] == document
    assert ok_json(db_path, "get", "n")["value"] == 42
    assert ok_json(db_path, "set", "s", '"quoted"', "--json-value")["value"] == "quoted"


def test_stale_expect_version_is_one_line_and_writes_nothing(db_path: Path) -> None:
    ok_json(db_path, "set", "k", "one")
    ok_json(db_path, "set", "k", "two", "--expect-version", "1")
    line = one_line_error(run(db_path, "set", "k", "three", "--expect-version", "1"))
    assert "--expect-version: " in line and "version 2" in line and "three" not in line
    assert "expected_version" not in line  # the option as typed
    assert ok_json(db_path, "get", "k")["value"] == "two"
    assert [c["version"] for c in ok_json(db_path, "history", "k")] == [1, 2]
    # 0: only if it does not exist.
    one_line_error(run(db_path, "set", "k", "x", "--expect-version", "0"))
    assert ok_json(db_path, "set", "fresh", "x", "--expect-version", "0")["version"] == 1
    # delete is a compare-and-set too.
    one_line_error(run(db_path, "delete", "k", "--expect-version", "1"))
    assert run(db_path, "delete", "k", "--expect-version", "2").exit_code == 0


def test_list_with_scope_and_prefix(db_path: Path) -> None:
    for scope, key in [
        ("global", "lang"),
        ("user:alice", "pref.editor"),
        ("user:alice", "pref.lang"),
        ("user:alice", "name"),
        ("user:bob", "pref.editor"),
    ]:
        ok_json(db_path, "set", key, f"{scope} {key}", "--scope", scope)
    everything = ok_json(db_path, "list")
    assert [(e["scope"], e["key"]) for e in everything] == [
        ("global", "lang"),
        ("user:alice", "name"),
        ("user:alice", "pref.editor"),
        ("user:alice", "pref.lang"),
        ("user:bob", "pref.editor"),
    ]
    assert all(e["value"] == f"{e['scope']} {e['key']}" and e["version"] == 1 for e in everything)
    alice = ok_json(db_path, "list", "--scope", "user:alice", "--prefix", "pref.")
    assert [e["key"] for e in alice] == ["pref.editor", "pref.lang"]
    assert {e["scope"] for e in ok_json(db_path, "list", "--prefix", "pref.editor")} == {
        "user:alice",
        "user:bob",
    }
    assert ok_json(db_path, "list", "--scope", "user:carol") == []


def test_delete_and_history(db_path: Path) -> None:
    ok_json(db_path, "set", "k", "a", "--scope", "agent:reviewer")
    ok_json(db_path, "set", "k", "[1, 2]", "--json-value", "--scope", "agent:reviewer")
    deleted = run(db_path, "delete", "k", "--scope", "agent:reviewer")
    assert deleted.exit_code == 0 and "deleted" in deleted.stdout
    one_line_error(run(db_path, "get", "k", "--scope", "agent:reviewer"))
    one_line_error(run(db_path, "delete", "k", "--scope", "agent:reviewer"))  # nothing left
    history = ok_json(db_path, "history", "k", "--scope", "agent:reviewer")
    assert [(c["version"], c["action"], c["value"]) for c in history] == [
        (1, "set", "a"),
        (2, "set", [1, 2]),
        (3, "delete", None),
    ]
    assert all(c["scope"] == "agent:reviewer" and c["key"] == "k" for c in history)
    stamps = [datetime.fromisoformat(c["changed_at"]) for c in history]
    assert stamps == sorted(stamps)
    one_line_error(run(db_path, "history", "never-written"))


def test_ttl_expiry_and_prune(db_path: Path) -> None:
    entry = ok_json(db_path, "set", "note", "short-lived", "--ttl", "0.2")
    expires = datetime.fromisoformat(entry["expires_at"])
    assert (
        timedelta(0)
        < expires - datetime.fromisoformat(entry["updated_at"])
        <= timedelta(seconds=0.2)
    )
    ok_json(db_path, "set", "keep", "forever")
    time.sleep(0.3)
    one_line_error(run(db_path, "get", "note"))
    assert [e["key"] for e in ok_json(db_path, "list")] == ["keep"]
    assert ok_json(db_path, "prune") == {"pruned": 1}
    assert ok_json(db_path, "prune") == {"pruned": 0}
    actions = [c["action"] for c in ok_json(db_path, "history", "note")]
    assert actions == ["set", "expire"]
    human = run(db_path, "prune")
    assert human.exit_code == 0 and "pruned 0 expired" in human.stdout


def test_human_output_shows_stored_markup_literally(db_path: Path) -> None:
    result = run(db_path, "set", "[bold]key[/bold]", "[red]value[/red]")
    assert result.exit_code == 0 and "version 1" in result.stdout
    assert "[bold]key[/bold]" in result.stdout
    listing = run(db_path, "list", "--full")
    assert listing.exit_code == 0
    assert "[red]value[/red]" in listing.stdout and "[bold]key[/bold]" in listing.stdout
    got = run(db_path, "get", "[bold]key[/bold]", "--full")
    assert got.exit_code == 0 and "[red]value[/red]" in got.stdout
    history = run(db_path, "history", "[bold]key[/bold]")
    assert history.exit_code == 0 and "set" in history.stdout
    assert run(db_path, "list", "--scope", "user:nobody").stdout.strip() == "no long-term entries"


@pytest.mark.parametrize(
    "args",
    [
        ("set", "k"),  # VALUE missing
        ("set", "k", "v", "--expect-version", "-1"),
        ("set", "k", "v", "--expect-version", "one"),
        ("set", "k", "{not json", "--json-value"),
        ("set", "k", "NaN", "--json-value"),
        ("set", "k", "v", "--ttl", "0"),
        ("set", "k", "v", "--ttl", "soon"),
        ("set", "k", "v", "--unknown"),
        ("get",),
        ("frobnicate",),
    ],
    ids=" ".join,
)
def test_usage_errors_exit_2_and_write_nothing(db_path: Path, args: tuple[str, ...]) -> None:
    result = run(db_path, *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("set", " padded", "v"), "KEY"),  # the argument as typed
        (("set", "k", "null", "--json-value"), "VALUE"),
    ],
)
def test_invalid_input_is_one_line_naming_the_field(
    db_path: Path, args: tuple[str, ...], field: str
) -> None:
    ok_json(db_path, "set", "seed", "x")
    line = one_line_error(run(db_path, *args))
    assert line.startswith(f"Error: {field}: ")
    assert [e["key"] for e in ok_json(db_path, "list")] == ["seed"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("set", "k", "v", "--scope", "User:Alice"), "--scope"),
        (("get", "k", "--scope", "nope"), "--scope"),
        (("list", "--prefix", "bad\nprefix"), "--prefix"),
    ],
)
def test_an_invalid_option_value_is_a_usage_error_naming_it(
    db_path: Path, args: tuple[str, ...], option: str
) -> None:
    ok_json(db_path, "set", "seed", "x")
    result = run(db_path, *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"Invalid value for '{option}'" in result.stderr
    assert [e["key"] for e in ok_json(db_path, "list")] == ["seed"]


def test_reading_a_missing_database_fails_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    for args in (("get", "k"), ("list",), ("history", "k"), ("prune",)):
        one_line_error(run(missing, *args))
    assert not missing.exists()


def test_real_process_exit_codes(db_path: Path) -> None:
    """The installed executable, as an operator runs it: 0, 1 with one line, 2."""

    def memstore(*args: str) -> subprocess.CompletedProcess[str]:
        return memstore_process(db_path, "ltm", *args)

    assert memstore("set", "k", "v").returncode == 0
    stale = memstore("set", "k", "w", "--expect-version", "5")
    assert stale.returncode == 1 and "Traceback" not in stale.stderr
    assert stale.stderr.strip().splitlines() == [
        "Error: --expect-version: long-term entry 'k' in scope 'global' is at version 1, "
        "not version 5"
    ]
    assert memstore("set", "k").returncode == 2
