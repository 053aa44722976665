"""``memstore fork``, and what ``show``, ``sessions``, ``replay``, ``export`` and ``purge``
say about forks (in process, through click's runner)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from conftest import write_worked_example

from memstore.cli import main


def run(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), *args])


def test_fork_show_sessions_replay_and_export(db_path: Path) -> None:
    write_worked_example(db_path)  # incident-42: five appends and one compaction, version 6
    forked = run(db_path, "fork", "incident-42", "retry", "--at", "4")
    assert forked.exit_code == 0, forked.output
    assert forked.stdout.startswith("forked incident-42 at version 4 into retry: 4 active items")
    shown = run(db_path, "show", "retry")
    assert "parent: incident-42 @ 4" in shown.stdout
    assert "parent:" not in run(db_path, "show", "incident-42").stdout
    as_json = json.loads(run(db_path, "show", "retry", "--json").stdout)
    assert as_json["session"]["parent_id"] == "incident-42"
    assert as_json["session"]["parent_version"] == 4
    listed = run(db_path, "sessions").stdout
    assert "incident-42 @ 4" in listed
    infos = {i["id"]: i for i in json.loads(run(db_path, "sessions", "--json").stdout)}
    assert (
        infos["retry"]["parent_id"] == "incident-42" and infos["incident-42"]["parent_id"] is None
    )
    replayed = run(db_path, "replay", "retry")
    assert replayed.exit_code == 0, replayed.output
    assert "forked from incident-42 at version 4" in replayed.stdout
    assert "replay verified" in replayed.stdout
    stream = run(db_path, "replay", "retry", "--json").stdout.splitlines()
    assert json.loads(stream[0]) == {
        "event": "forked", "parent": "incident-42", "parent_version": 4,
    }  # fmt: skip
    at = json.loads(run(db_path, "replay", "retry", "--at", "4", "--json").stdout)
    parent_at = json.loads(run(db_path, "replay", "incident-42", "--at", "4", "--json").stdout)
    assert at["input"] == parent_at["input"] and at["parent"] == "incident-42"
    exported = run(db_path, "export", "retry").stdout.splitlines()
    assert json.loads(exported[0])["parent_id"] == "incident-42"
    latest = run(db_path, "fork", "incident-42", "again", "--json")
    assert json.loads(latest.stdout)["parent_version"] == 6
    assert run(db_path, "check").exit_code == 0


def test_bad_fork_input_is_one_line(db_path: Path) -> None:
    write_worked_example(db_path)
    before = run(db_path, "sessions", "--json").stdout
    missing = run(db_path, "fork", "nobody", "x")
    assert missing.exit_code == 1 and "SESSION: session 'nobody' does not exist" in missing.output
    taken = run(db_path, "fork", "incident-42", "incident-42")
    assert taken.exit_code == 1 and "NEW: session 'incident-42' already exists" in taken.output
    for at in ("0", "7", "-2"):
        bad = run(db_path, "fork", "incident-42", "x", "--at", at)
        assert bad.exit_code == 2 and "'--at'" in bad.output, bad.output
    not_a_number = run(db_path, "fork", "incident-42", "x", "--at", "latest")
    assert not_a_number.exit_code == 2
    bad_id = run(db_path, "fork", "incident-42", "no/slash")
    assert bad_id.exit_code == 1 and "NEW: 'no/slash' is not a valid id" in bad_id.output
    assert all("Traceback" not in r.output for r in (missing, taken, bad_id))
    assert run(db_path, "sessions", "--json").stdout == before


def test_purge_lists_forks_and_with_forks_deletes_them(db_path: Path) -> None:
    write_worked_example(db_path)
    assert run(db_path, "fork", "incident-42", "a").exit_code == 0
    assert run(db_path, "fork", "a", "b", "--at", "3").exit_code == 0
    refused = run(db_path, "purge", "incident-42", "--yes")
    assert refused.exit_code == 1
    assert "a, b" in refused.output and "--with-forks" in refused.output
    assert {i["id"] for i in json.loads(run(db_path, "sessions", "--json").stdout)} == {
        "incident-42", "a", "b",
    }  # fmt: skip
    purged = run(db_path, "purge", "incident-42", "--with-forks", "--yes")
    assert purged.exit_code == 0, purged.output
    assert "purged session incident-42 and its forks a, b" in purged.stdout
    assert json.loads(run(db_path, "sessions", "--json").stdout) == []
    assert run(db_path, "check").exit_code == 0
