"""The CLI as a new user meets it: usage errors exit 2, a closed pipe and Ctrl-C end quietly,
hostile values are one line each, a damaged file is never written, and a 60-column terminal
still shows every figure."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from clients import memstore_cli, memstore_command
from conftest import row_counts, write_worked_example

from memstore import MemoryLimits, MemoryStore, WordEstimator


@pytest.fixture
def worked(tmp_path: Path) -> Path:
    path = tmp_path / "worked.db"
    write_worked_example(path)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["prune", "incident-42", "--before", "notadate", "--yes"], "--before"),
        (["prune", "incident-42", "--before", "100000000000000000000", "--yes"], "--before"),
        (["search", ""], "QUERY"),
        (["search", "   "], "QUERY"),
    ],
)
def test_bad_values_are_usage_errors(worked: Path, args: list[str], option: str) -> None:
    before = row_counts(worked)
    done = memstore_cli(worked, *args)
    assert done.returncode == 2, done.stderr
    assert option in done.stderr and "Traceback" not in done.stderr
    assert row_counts(worked) == before


def test_a_deeply_nested_json_value_is_one_line(worked: Path) -> None:
    deep = "[" * 30_000 + "]" * 30_000
    done = memstore_cli(worked, "ltm", "set", "k", deep, "--json-value")
    assert done.returncode == 2, done.stderr[-500:]
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert "VALUE" in done.stderr and "nested" in done.stderr
    listed = memstore_cli(worked, "ltm", "list", "--json")
    assert listed.returncode == 0 and "[]" in listed.stdout


async def fill(path: Path, session_id: str, n: int) -> None:
    async with MemoryStore.open(path) as store:
        memory = store.session(
            session_id, estimator=WordEstimator(), limits=MemoryLimits(hard=100_000, target=50)
        )
        for i in range(n):
            await memory.add("user", f"line {i} " + "word " * 40)


def test_a_closed_pipe_ends_quietly(worked: Path) -> None:
    asyncio.run(fill(worked, "big", 300))  # more output than a pipe buffer holds
    command = " ".join(f"'{part}'" for part in memstore_command())
    for args in ("show big --all", "export big", "replay big", "sessions"):
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {command} --db '{worked}' {args} | head -1"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (args, done.stderr)
        assert done.stderr == "", (args, done.stderr)
        assert len(done.stdout.splitlines()) == 1


def run_in_terminal(
    args: list[str], *, columns: int = 80, keys: bytes | None = None, after: bytes = b""
) -> tuple[str, int]:
    """``memstore ARGS`` on a pseudo-terminal ``columns`` wide; ``keys`` typed once the
    output shows ``after``."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of that width
        os.environ["COLUMNS"] = str(columns)
        os.environ["LINES"] = "40"
        command = memstore_command()
        os.execv(command[0], [*command, *args])
    out = b""
    deadline = time.monotonic() + 60
    typed_at = None
    while time.monotonic() < deadline:
        if (
            keys is not None
            and after in out
            and (typed_at is None or time.monotonic() > typed_at + 5)
        ):
            # Typed once the prompt shows; again if the program, slow to start reading on a
            # loaded machine, has not answered in 5 s (as a person would press it again).
            time.sleep(0.2)
            os.write(fd, keys)
            typed_at = time.monotonic()
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:  # still running past the deadline: a hang, reported, not waited on
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode(errors="replace"))  # colours are not width
    return text.replace("\r\n", "\n"), os.waitstatus_to_exitcode(status)


def too_wide(text: str, columns: int = 60) -> list[str]:
    return [line for line in text.splitlines() if len(line) > columns]


def test_ctrl_c_at_the_add_prompt_cancels(tmp_path: Path) -> None:
    db = tmp_path / "cc.db"
    out, code = run_in_terminal(["--db", str(db), "add", "s"], keys=b"\x03", after=b"Ctrl-C")
    assert code == 130, out
    assert "must not be empty" not in out and "Traceback" not in out
    assert "nothing was added" in out.lower()


def test_60_columns_keep_every_figure(worked: Path) -> None:
    reports, code = run_in_terminal(["--db", str(worked), "reports", "incident-42"], columns=60)
    assert code == 0
    assert too_wide(reports) == []
    assert "65" in reports and "52" in reports  # before and after tokens, uncut
    shown, code = run_in_terminal(["--db", str(worked), "show", "incident-42", "--all"], columns=60)
    assert code == 0 and too_wide(shown) == []
    # The content column stays wide enough to read words, not five characters.
    assert "fraud-service" in shown.replace("\n", " ") or "fraud-" in shown
    timeline, code = run_in_terminal(
        ["--db", str(worked), "show", "incident-42", "--timeline"], columns=60
    )
    assert code == 0 and "incident-42" in timeline
    assert too_wide(timeline) == []


async def remember_many(path: Path, n: int) -> None:
    async with MemoryStore.open(path) as store:
        for i in range(n):
            await store.ltm.set(f"k{i}", "a value of several words " * 8, scope="user:a")


def damage(path: Path) -> None:
    """Break the pages of the long-term history: the session's writes never read them, so
    only a check of the whole file finds the damage (a write without it would commit)."""
    asyncio.run(remember_many(path, 200))
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            row[0]
            for row in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'ltm_history' AND pagetype = 'leaf'"
            )
        ]
    data = bytearray(path.read_bytes())
    for page in pages:
        data[(page - 1) * page_size] = 0  # no valid b-tree page type
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "args",
    [
        ["add", "incident-42", "one more"],
        ["compact", "incident-42"],
        ["prune", "incident-42", "--before", "6", "--yes"],
        ["purge", "incident-42", "--yes"],
    ],
)
def test_a_damaged_file_is_never_written(worked: Path, args: list[str]) -> None:
    damage(worked)
    with sqlite3.connect(worked) as conn:
        try:
            found = [row[0] for row in conn.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as error:  # as damaged as it gets: the check cannot finish
            found = [str(error)]
    assert found != ["ok"], "the damage must be one quick_check finds"
    before = digest(worked)
    done = memstore_cli(worked, *args)
    assert done.returncode == 1, done.stderr
    assert "damaged" in done.stderr or "corrupt" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert digest(worked) == before


def test_demo_previews_end_at_a_word(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    done = memstore_cli(db, "demo")
    assert done.returncode == 0, done.stderr
    exported = memstore_cli(db, "export", "incident-demo")
    stored = {
        word.strip(".,;:()")
        for line in exported.stdout.splitlines()
        for word in str(json.loads(line).get("content") or "").split()
    }
    cut = [word.rstrip("…").strip(".,;:()") for word in done.stdout.split() if word.endswith("…")]
    assert cut, "the demo shows previews"
    # Each preview ends with a whole word of what was stored, never a piece of one.
    assert [stem for stem in cut if stem and stem not in stored] == []
