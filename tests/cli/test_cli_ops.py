"""The operator CLI over real SQLite files: JSON asserted field by field, exit codes, replay."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from clients import memstore_cli
from conftest import WORKED_FIFTH, WORKED_ITEMS, WORKED_SUMMARY, write_worked_example

from memstore import MemoryLimits, MemoryStore, Priority, WordEstimator
from memstore.cli import main


def cli(db: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), *args], input=input)


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def _long(db: Path, n: int = 400) -> None:
    """A long random session with many compactions (extractive summaries, noise, decisions)."""
    rng = random.Random(42)
    kinds = [
        ("user", "USER_MESSAGE"),
        ("assistant", "ASSISTANT_MESSAGE"),
        ("tool", "TOOL_OBSERVATION"),
        ("developer", "DECISION"),
    ]
    async with MemoryStore.open(db) as store:
        memory = store.session(
            "long",
            estimator=WordEstimator(),
            limits=MemoryLimits(hard=300, target=180, keep_recent=3),
        )
        for i in range(n):
            role, kind = rng.choice(kinds)
            words = " ".join(f"w{rng.randint(0, 50)}" for _ in range(rng.randint(3, 40)))
            await memory.add(role, f"{i}: {words}", kind=kind, priority=rng.choice(list(Priority)))


@pytest.fixture
def worked_db(db_path: Path) -> Path:
    write_worked_example(db_path)
    return db_path


@pytest.fixture(scope="module")
def long_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "long.db"
    asyncio.run(_long(path))  # closing the store checkpoints the WAL into the file
    return path


@pytest.fixture
def long_db(long_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "long.db"
    shutil.copyfile(long_template, path)
    return path


def test_sessions_json(worked_db: Path) -> None:
    [session] = as_json(cli(worked_db, "sessions", "--json"))
    assert session["id"] == "incident-42"
    assert session["active_items"] == 2 and session["items_total"] == 5
    assert session["total_tokens"] == 52
    assert (session["hard_limit"], session["target_limit"], session["keep_recent"]) == (55, 52, 2)
    assert session["compaction_count"] == 1 and session["version"] == 6
    assert session["estimator"] == "words"
    human = cli(worked_db, "sessions")
    assert "incident-42" in human.output and "2 of 5" in human.output


def test_show_json_field_by_field(worked_db: Path) -> None:
    data = as_json(cli(worked_db, "show", "incident-42", "--all", "--json"))
    assert data["summary"] == WORKED_SUMMARY
    assert [i["content"] for i in data["items"]] == [WORKED_ITEMS[3][3], WORKED_FIFTH[3]]
    assert [i["seq"] for i in data["items"]] == [4, 5]
    assert [(i["seq"], i["fate"], i["removed_by"]) for i in data["forgotten"]] == [
        (1, "summarized", 1),
        (2, "dropped", 1),
        (3, "summarized", 1),
    ]
    first = data["forgotten"][0]
    assert first["kind"] == "USER_MESSAGE" and first["priority"] == "NORMAL"
    assert first["estimated_tokens"] == 9 and first["role"] == "user"


def test_reports_json(worked_db: Path) -> None:
    [report] = as_json(cli(worked_db, "reports", "incident-42", "--json"))
    assert (report["before_tokens"], report["after_tokens"]) == (65, 52)
    assert (report["items_dropped"], report["items_summarized"], report["items_evicted"]) == (
        1,
        2,
        0,
    )
    assert report["compaction_count"] == 1 and report["summary_error"] is None
    assert sorted(report["removed"].values()) == ["dropped", "summarized", "summarized"]
    assert report["summarizer"] == "fixed_summary" and report["trigger"] == "hard_limit"
    assert "dropped" in cli(worked_db, "reports", "incident-42").output


def test_input_is_the_exact_model_input(worked_db: Path) -> None:
    data = as_json(cli(worked_db, "input", "incident-42"))
    assert data[0]["role"] == "developer" and data[0]["content"].endswith(WORKED_SUMMARY)
    assert data[1:] == [
        {"role": "assistant", "content": WORKED_ITEMS[3][3]},
        {"role": "user", "content": WORKED_FIFTH[3]},
    ]


def test_add_from_argument_and_stdin(db_path: Path) -> None:
    first = as_json(
        cli(
            db_path,
            "add",
            "notes",
            "use the staging cluster",
            "--role",
            "developer",
            "--priority",
            "high",
            "--estimator",
            "words",
            "--json",
        )
    )
    assert first["item"]["kind"] == "DECISION" and first["item"]["priority"] == "HIGH"
    assert first["total_tokens"] == 4 + 4
    piped = as_json(cli(db_path, "add", "notes", "--json", input="  from stdin  \n"))
    assert piped["item"]["content"] == "from stdin" and piped["item"]["seq"] == 2
    retry = as_json(cli(db_path, "add", "notes", "x y", "--idempotency-key", "k", "--json"))
    again = as_json(cli(db_path, "add", "notes", "x y", "--idempotency-key", "k", "--json"))
    assert again["item"]["id"] == retry["item"]["id"]
    bad = cli(db_path, "add", "notes", "hi", "--role", "tool", "--kind", "USER_MESSAGE")
    assert bad.exit_code == 1 and "role" in bad.output
    assert cli(db_path, "add", "notes", "x", "--priority", "urgent").exit_code == 2


def test_compact_dry_run_writes_nothing(long_db: Path) -> None:
    before = long_db.read_bytes()
    with sqlite3.connect(long_db) as conn:
        version = conn.execute("SELECT version FROM sessions").fetchone()[0]
    plan = as_json(cli(long_db, "compact", "long", "--dry-run", "--json"))
    assert plan["dry_run"] is True
    assert plan["plan"]["after_tokens"] <= 180 and plan["plan"]["removed"]
    with sqlite3.connect(long_db) as conn:
        assert conn.execute("SELECT version FROM sessions").fetchone()[0] == version
    del before
    done = as_json(cli(long_db, "compact", "long", "--json"))
    assert done["report"]["trigger"] == "manual"
    assert done["report"]["removed"] == plan["plan"]["removed"]


def test_replay_verifies_the_worked_example(worked_db: Path) -> None:
    result = cli(worked_db, "replay", "incident-42")
    assert result.exit_code == 0
    assert "replay verified" in result.output
    lines = [
        json.loads(line)
        for line in cli(worked_db, "replay", "incident-42", "--json").stdout.splitlines()
    ]
    assert [e["event"] for e in lines] == ["append"] * 5 + ["compaction", "verified"]
    assert [e["tokens"] for e in lines[:6]] == [13, 23, 35, 51, 65, 52]
    assert lines[5]["summary"] == WORKED_SUMMARY
    assert lines[-1] == {"event": "verified", "problems": []}


def test_replay_verifies_a_long_random_session(long_db: Path) -> None:
    lines = [
        json.loads(line) for line in cli(long_db, "replay", "long", "--json").stdout.splitlines()
    ]
    compactions = [e for e in lines if e["event"] == "compaction"]
    assert len(compactions) >= 20
    assert lines[-1] == {"event": "verified", "problems": []}


def test_replay_reports_a_mismatch_and_exits_1(worked_db: Path) -> None:
    with sqlite3.connect(worked_db) as conn:
        conn.execute("UPDATE compactions SET after_tokens = 50")
    result = cli(worked_db, "replay", "incident-42")
    assert result.exit_code == 1
    assert "after_tokens 50, replay says 52" in result.output
    last = json.loads(cli(worked_db, "replay", "incident-42", "--json").stdout.splitlines()[-1])
    assert last["event"] == "mismatch"


def test_replay_at_a_version_before_the_first_compaction(worked_db: Path) -> None:
    data = as_json(cli(worked_db, "replay", "incident-42", "--at", "4", "--json"))
    assert data["tokens"] == 51 and data["summary"] is None
    assert [i["seq"] for i in data["items"]] == [1, 2, 3, 4]
    assert data["input"][1] == {
        "role": "developer",
        "content": "[Tool observation] " + WORKED_ITEMS[1][3],
    }
    human = cli(worked_db, "replay", "incident-42", "--at", "4")
    assert "at version 4" in human.output and "51 tokens" in human.output
    assert cli(worked_db, "replay", "incident-42", "--at", "99").exit_code == 2  # a bad option


def test_what_if_compares_actual_and_simulated(long_db: Path) -> None:
    data = as_json(
        cli(long_db, "replay", "long", "--hard-limit", "2000", "--target-limit", "1000", "--json")
    )
    actual, simulated = data["actual"], data["simulated"]
    assert actual["compactions"] >= 20
    assert simulated["compactions"] < actual["compactions"]
    assert simulated["tokens"] < 2000
    # Everything ever added is either kept or had exactly one fate, in both worlds.
    for world in (actual, simulated):
        assert (
            world["items_kept"] + world["dropped"] + world["summarized"] + world["evicted"] == 400
        )
    same = as_json(
        cli(long_db, "replay", "long", "--hard-limit", "300", "--target-limit", "180", "--json")
    )
    assert same["simulated"]["tokens"] == same["actual"]["tokens"]
    assert same["simulated"]["summary"] == same["actual"]["summary"]
    assert "what-if" in cli(long_db, "replay", "long", "--summarizer", "none").output


def test_export_import_round_trip(long_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "long.jsonl"
    assert cli(long_db, "export", "long", "-o", str(export)).exit_code == 0
    target = tmp_path / "copy.db"
    imported = cli(target, "import", str(export))
    assert imported.exit_code == 0 and "imported session long" in imported.output
    assert "replay verified" in cli(target, "replay", "long").output
    original = as_json(cli(long_db, "show", "long", "--all", "--json"))
    copy = as_json(cli(target, "show", "long", "--all", "--json"))
    assert copy == original
    assert as_json(cli(target, "reports", "long", "--json")) == as_json(
        cli(long_db, "reports", "long", "--json")
    )
    again = cli(target, "import", str(export))
    assert again.exit_code == 1 and "already exists" in again.output


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_an_export_file_is_readable_by_its_owner_only(
    worked_db: Path, tmp_path: Path, umask: int
) -> None:
    export, existing = tmp_path / "new.jsonl", tmp_path / "existing.jsonl"
    existing.write_text("old\n")
    existing.chmod(0o644)
    previous = os.umask(umask)
    try:
        for target in (export, existing):
            result = cli(worked_db, "export", "incident-42", "-o", str(target))
            assert result.exit_code == 0, result.output
            assert stat.S_IMODE(target.stat().st_mode) == 0o600
            assert target.read_text().startswith('{"type": "session"')
    finally:
        os.umask(previous)


def test_an_export_that_cannot_be_written_is_one_line_exit_1(
    worked_db: Path, tmp_path: Path
) -> None:
    result = cli(worked_db, "export", "incident-42", "-o", str(tmp_path / "no" / "such.jsonl"))
    assert result.exit_code == 1 and "cannot write" in result.output
    assert "Traceback" not in result.output


def test_import_rejects_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "item"}\n')
    result = cli(target, "import", str(bad))
    assert result.exit_code == 1 and "record 1" in result.output
    bad.write_text("not json\n")
    assert "line 1" in cli(target, "import", str(bad)).output
    # Checked before the database is opened: a new path is left without a file.
    assert list(tmp_path.glob("copy.db*")) == []


def test_prune_leaves_a_session_that_still_verifies(long_db: Path) -> None:
    reports = as_json(cli(long_db, "reports", "long", "--json"))
    cut = reports[len(reports) // 2]["committed_version"]
    before = as_json(cli(long_db, "show", "long", "--json"))
    result = cli(long_db, "prune", "long", "--before", str(cut), "--yes")
    assert result.exit_code == 0 and "pruned" in result.output
    assert "replay verified" in cli(long_db, "replay", "long").output
    assert cli(long_db, "check").exit_code == 0
    after = as_json(cli(long_db, "show", "long", "--json"))
    assert after["items"] == before["items"] and after["summary"] == before["summary"]
    left = as_json(cli(long_db, "reports", "long", "--json"))
    assert left[0]["compaction_count"] == len(reports) // 2 + 1
    # The timeline starts where the kept history does, with the summary in force there.
    series = as_json(cli(long_db, "show", "long", "--timeline", "--json"))
    first, pruned_at = series["points"][0], reports[len(reports) // 2 - 1]
    assert first["version"] == pruned_at["committed_version"]
    assert first["summary_tokens"] == (pruned_at["summary_tokens"] or 0)
    assert first["tokens"] > 0
    # Without --yes it asks, and "no" changes nothing.
    declined = cli(long_db, "prune", "long", "--before", "999999", input="n\n")
    assert declined.exit_code == 1
    assert as_json(cli(long_db, "reports", "long", "--json")) == left


def test_prune_by_date_and_purge(long_db: Path) -> None:
    result = cli(long_db, "prune", "long", "--before", "2000-01-01", "--yes")
    assert "pruned 0 compaction(s)" in result.output
    assert (
        cli(long_db, "prune", "long", "--before", "yesterday", "--yes").exit_code == 2
    )  # a usage error
    assert cli(long_db, "purge", "long", "--yes").exit_code == 0
    assert as_json(cli(long_db, "sessions", "--json")) == []
    assert cli(long_db, "purge", "long", "--yes").exit_code == 1


def test_db_current_and_upgrade(tmp_path: Path) -> None:
    from alembic import command

    from memstore.db.migrate import alembic_config, head_revision

    path = tmp_path / "old.db"
    assert cli(path, "db", "current").exit_code == 1  # no database yet: nothing created
    assert not path.exists()
    assert "upgraded (empty) ->" in cli(path, "db", "upgrade").output
    engine_url = f"sqlite:///{path}"
    from sqlalchemy import create_engine

    engine = create_engine(engine_url)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0001")
    engine.dispose()
    status = as_json(cli(path, "db", "current", "--json"))
    assert status == {
        "current": "0001",
        "head": head_revision(),
        "up_to_date": False,
        "newer": False,
    }
    assert f"upgraded 0001 -> {head_revision()}" in cli(path, "db", "upgrade").output
    assert "already at" in cli(path, "db", "upgrade").output


def test_expected_failures_are_one_line_without_traceback(tmp_path: Path) -> None:
    notdb = tmp_path / "notes.txt"
    notdb.write_text("hello")
    newer = tmp_path / "newer.db"
    write_worked_example(newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    cases = [
        ([str(tmp_path / "w.db"), "show", "nope"], "no database at"),
        ([str(newer), "show", "nope"], "newer than this memstore"),
        ([str(notdb), "sessions"], "not an SQLite database"),
        ([str(newer), "sessions"], "newer than this memstore"),
    ]
    for (db, *args), message in cases:
        proc = memstore_cli(db, *args)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_a_newer_schema_says_to_upgrade_memstore_in_db_current_as_in_db_upgrade(
    tmp_path: Path,
) -> None:
    from memstore.db.migrate import head_revision

    newer = tmp_path / "newer.db"
    write_worked_example(newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    current = memstore_cli(newer, "db", "current")
    upgrade = memstore_cli(newer, "db", "upgrade")
    advice = f"the database schema (9999) is newer than this memstore ({head_revision()}); "
    assert current.returncode == 0 and "db upgrade" not in current.stdout
    assert current.stdout.strip().endswith(advice + "upgrade memstore to use it")
    assert upgrade.returncode == 1 and advice + "upgrade memstore to use it" in upgrade.stderr
    status = as_json(cli(newer, "db", "current", "--json"))
    assert status["newer"] is True and status["up_to_date"] is False


def test_busy_database_is_exit_1(worked_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTORE_BUSY_TIMEOUT", "0.2")
    holder = sqlite3.connect(worked_db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc = memstore_cli(worked_db, "add", "incident-42", "blocked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "locked" in proc.stderr


def test_version_and_help() -> None:
    runner = CliRunner()
    assert "memstore, version" in runner.invoke(main, ["--version"]).output
    assert "replay" in runner.invoke(main, ["-h"]).output
    assert runner.invoke(main, ["nonsense"]).exit_code == 2


def test_stored_markup_prints_as_text(db_path: Path) -> None:
    hostile = "close [/bold] and [link=https://example.invalid]click[/link] [red]x"
    assert cli(db_path, "add", "m", hostile, "--estimator", "words").exit_code == 0
    for args in (
        ("show", "m"),
        ("show", "m", "--full"),
        ("replay", "m", "--at", "1"),
        ("compact", "m", "--dry-run"),
    ):
        result = cli(db_path, *args)
        assert result.exit_code == 0, result.output
    full = cli(db_path, "show", "m", "--full").output
    assert "[/bold]" in full and "[link=https://example.invalid]" in full


def test_input_with_long_term_scopes(db_path: Path) -> None:
    # Default limits (1500 / 900): the memories message gets hard - target = 600 tokens.
    assert cli(db_path, "add", "s", "write the tests", "--estimator", "words").exit_code == 0
    stored = cli(db_path, "ltm", "set", "test_framework", "pytest", "--scope", "user:alice")
    assert stored.exit_code == 0
    plain = as_json(cli(db_path, "input", "s"))
    scoped = as_json(cli(db_path, "input", "s", "--scope", "user:alice"))
    assert len(scoped) == len(plain) + 1
    memories = [m for m in scoped if "test_framework" in m["content"]]
    assert len(memories) == 1 and memories[0]["role"] == "developer"


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("id", "../../etc x", "session_id"),
        ("content", "bad\x00content", "content"),
        ("role", "wizard", "role"),
        ("priority", True, "priority"),
        ("seq", "7", "seq"),
    ],
)
def test_import_validates_like_the_api_and_writes_nothing(
    long_db: Path, tmp_path: Path, field: str, value: object, named: str
) -> None:
    records = [json.loads(line) for line in cli(long_db, "export", "long").stdout.splitlines()]
    target = records[0] if field == "id" else next(r for r in records if r["type"] == "item")
    target[field] = value
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    copy = tmp_path / "copy.db"
    result = cli(copy, "import", str(bad))
    assert result.exit_code == 1 and named in result.output
    assert list(tmp_path.glob("copy.db*")) == []  # no database file made for nothing
    existing = tmp_path / "existing.db"
    assert cli(existing, "ltm", "set", "k", "v").exit_code == 0
    assert cli(existing, "import", str(bad)).exit_code == 1
    assert as_json(cli(existing, "sessions", "--json")) == []


def test_an_export_to_a_device_leaves_the_device_alone(worked_db: Path) -> None:
    before = os.stat("/dev/null").st_mode
    result = cli(worked_db, "export", "incident-42", "-o", "/dev/null")
    assert result.exit_code == 0
    assert os.stat("/dev/null").st_mode == before
