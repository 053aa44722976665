"""Ctrl-C ends every command the same way: exit code 130, one line on stderr, no traceback.
At a prompt (on a pseudo-terminal, where Ctrl-C is a key) and while a command waits for the
database (SIGINT sent to a real process)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from clients import memstore_cli, memstore_command
from conftest import row_counts, write_worked_example
from test_cli_under_pressure import run_in_terminal

from memstore.model_side.stand_in_server import StandInModel, current_turn, text_reply

#: How long a process may take to start and open the database on a loaded machine.
START_TIMEOUT_S = 60


def said(output: str) -> list[str]:
    """The lines of a terminal's output that say something (the ^C echo aside)."""
    return [line for line in output.splitlines() if line.strip() not in ("", "^C")]


@pytest.mark.parametrize("command", ["purge", "prune"])
def test_ctrl_c_at_a_confirmation_is_exit_130(tmp_path: Path, command: str) -> None:
    db = tmp_path / "worked.db"
    write_worked_example(db)
    before = row_counts(db)
    args = [command, "incident-42", *(["--before", "9"] if command == "prune" else [])]
    out, code = run_in_terminal(["--db", str(db), *args], keys=b"\x03", after=b"[y/N]")
    assert code == 130, out
    assert said(out)[-1] == "Interrupted." and "Traceback" not in out and "Aborted" not in out
    assert row_counts(db) == before
    # Answering no is not an interrupt: it stays what it was.
    refused = run_in_terminal(["--db", str(db), *args], keys=b"n\n", after=b"[y/N]")
    assert refused[1] == 1 and "Aborted" in refused[0]


def test_ctrl_c_at_the_chat_prompt_is_exit_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def echo(request: dict[str, object]) -> object:
        return text_reply(request, "echo: " + current_turn(request)[0])

    with StandInModel(echo).serve() as url:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        args = ["--db", str(tmp_path / "chat.db"), "chat", "s", "--summarizer", "extractive"]
        out, code = run_in_terminal(args, keys=b"\x03", after="you ›".encode())
        ended, ended_code = run_in_terminal(args, keys=b"\x04", after="you ›".encode())
    assert code == 130, out
    assert said(out)[-1] == "Interrupted." and "Traceback" not in out
    assert ended_code == 0 and "Interrupted" not in ended  # Ctrl-D ends the chat


def test_ctrl_c_while_waiting_for_the_database_is_exit_130(tmp_path: Path) -> None:
    """The write waits for a lock another connection holds; Ctrl-C; the lock is freed. The
    write either committed or never began, and the command says only that it was stopped."""
    db = tmp_path / "locked.db"
    assert memstore_cli(db, "add", "s", "first", "--estimator", "words").returncode == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    env = dict(os.environ, MEMSTORE_BUSY_TIMEOUT="120")
    process = subprocess.Popen(
        [*memstore_command(), "--db", str(db), "add", "s", "second"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not opened(process.pid, db):  # the command is past its start, at the database
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err == "Interrupted.\n" and out == ""
    assert row_counts(db)["items"] in (1, 2)


def opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux's /proc)."""
    try:
        return any(
            os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path.resolve())
            for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:  # it ended, or a descriptor closed while it was read
        return False
