"""Listings on a real 60-column terminal: a pseudo-terminal whose window size is set with
``TIOCSWINSZ`` (no ``COLUMNS`` in the environment), the installed ``memstore`` in a process
of its own. No line is wider than the terminal and no word is broken: every word printed is
a word of what the command's ``--json`` says, or of the layout's own labels."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import select
import struct
import subprocess
import termios
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from clients import memstore_cli, memstore_command
from conftest import add_worked_example
from rich.console import Console

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.cli.output import narrow_listing, plain

COLUMNS = 60
#: Words the layouts print around the data (titles, headers, figures' names).
LABELS = frozenset(
    re.findall(
        r"\w+",
        """best match es first where snippet seq summary current active saved by ltm session
        state items item of tokens hard target compaction compactions updated utc scope entry
        value version from change set decision fact skipped would write dry run new read
        proposed superseded supersede skip wrote extractive summarized evicted dropped sessions
        entries history long term""",
    )
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_WORD = re.compile(r"\w+")


def run_on_terminal(args: list[str], columns: int = COLUMNS) -> tuple[str, int]:
    """``memstore ARGS`` with a pseudo-terminal of ``columns`` as its standard streams."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    process = subprocess.Popen(
        [*memstore_command(), *args], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    code = process.wait(timeout=60)
    return _ANSI.sub("", out.decode(errors="replace")).replace("\r\n", "\n"), code


def words_of(value: Any) -> set[str]:
    """Every word a JSON value holds (timestamps also as the tables print them)."""
    if isinstance(value, dict):
        return set().union(*(words_of(v) | words_of(k) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(words_of(v) for v in value))
    text = str(value)
    found = {word.lower() for word in _WORD.findall(text)}
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return found
    return found | set(_WORD.findall(moment.strftime("%Y-%m-%d %H:%M:%S")))


def broken_words(printed: str, known: set[str]) -> list[str]:
    """The words printed that are neither data nor a label: pieces of a broken word."""
    plain = printed.lower().replace("(s)", "")  # "item(s)": a label, not a word and an "s"
    return [word for word in _WORD.findall(plain) if word not in known | LABELS]


async def fill(path: Path) -> None:
    async with MemoryStore.open(path) as store:
        await add_worked_example(store)
        trip = store.session(
            "trip-alice-1",
            scope="user:alice",
            estimator=WordEstimator(),
            limits=MemoryLimits(hard=60, target=40, keep_recent=2),
        )
        await trip.add("user", "I am flying to Lisbon next Tuesday for the conference.")
        await trip.add("assistant", "Noted: Lisbon trip next Tuesday. Want a hotel nearby?")
        for i in range(8):
            await trip.add("user", f"Reminder {i}: pack the charger, passport and adapters.")
        await store.ltm.set("home_city", "Lisbon is where my sister lives", scope="user:alice")
        await store.ltm.set("editor", "vim", scope="user:alice")
        await store.ltm.set("editor", "neovim", scope="user:alice")
        bob = store.session("bob-1", scope="user:bob", estimator=WordEstimator())
        await bob.add("user", "Lisbon is lovely in spring, says Bob.")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("narrow") / "narrow.db"
    asyncio.run(fill(path))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["search", "payment"],
        ["search", "Lisbon", "--scope", "user:alice"],
        ["sessions"],
        ["ltm", "list"],
        ["ltm", "history", "editor", "--scope", "user:alice"],
        ["consolidate", "trip-alice-1", "--dry-run"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_listings_fit_60_columns_with_no_word_broken(filled: Path, args: list[str]) -> None:
    printed, code = run_on_terminal(["--db", str(filled), *args])
    assert code == 0, printed
    assert [line for line in printed.splitlines() if len(line) > COLUMNS] == [], printed
    as_json = memstore_cli(filled, *args, "--json")
    assert as_json.returncode == 0, as_json.stderr
    known = words_of(json.loads(as_json.stdout))
    assert broken_words(printed, known) == [], printed
    assert len(_WORD.findall(printed)) > 10  # the records are there, not only a frame


def test_the_demo_shows_whole_words_of_each_item_on_60_columns(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    printed, code = run_on_terminal(["--db", str(db), "demo"])
    assert code == 0, printed
    lines = printed.splitlines()
    # The command to run next stays on one line, to be copied whole.
    assert [line for line in lines if len(line) > COLUMNS and "Inspect it:" not in line] == []
    exported = memstore_cli(db, "export", "incident-demo")
    stored = words_of([json.loads(line).get("content") for line in exported.stdout.splitlines()])
    previews = [lines[n + 1] for n, line in enumerate(lines) if line.lstrip().startswith("+#")]
    assert len(previews) == 22
    # Each item shows words of its content (not 6 characters), and only whole ones.
    assert all(len(preview.split()) >= 5 for preview in previews), previews
    assert broken_words("\n".join(previews), stored) == []


@pytest.mark.parametrize("width", range(30, 48, 3))
def test_a_key_wider_than_its_column_breaks_after_its_punctuation(width: int) -> None:
    """A long-term entry's key (a search hit's snippet) has no spaces to wrap at: it breaks
    after its separators, never inside one of its words."""
    key = "fact:assistant:noted-[lisbon]~f87c0a"
    said = f"hits where snippet 1. ltm {key} and the rest of it"
    table = narrow_listing("hits", "where", "snippet")
    table.add_row("1. ltm", plain(f"{key} and the rest of it"))
    console = Console(width=width, record=True)
    console.print(table)
    printed = console.export_text()
    assert [line for line in printed.splitlines() if len(line) > width] == []
    assert broken_words(printed, set(_WORD.findall(said))) == []
    assert "".join(printed.split()).count(key) == 1  # every character, in order
