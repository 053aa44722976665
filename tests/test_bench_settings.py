"""The benchmarks run memstore as its users configure it: its settings come from the same
``MEMSTORE_*`` variables, and raw sqlite3 runs at the same ``synchronous`` setting.

``MEMSTORE_SQLITE_SYNCHRONOUS=NORMAL python benchmarks/suite.py`` must measure memstore at
NORMAL (the trade the README describes), not silently at the default. Each case imports the
benchmarks in a fresh interpreter: they read the environment once, at import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

#: What each ``synchronous`` mode reads back as from ``PRAGMA synchronous``.
PRAGMA_VALUE = {"NORMAL": 1, "FULL": 2}

PROBE = """
import sys
import many_workers, single_appends, suite
from memstore.db.sqlite_writer import connect
conn = connect(sys.argv[1], single_appends.SETTINGS)  # as the floor's and SQL-alone lines
print(single_appends.SYNC, many_workers.SETTINGS.sqlite_synchronous,
      conn.execute("PRAGMA synchronous").fetchone()[0])
"""


def run_python(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, in ``benchmarks/`` as they run, with no ``MEMSTORE_*``
    variable but those given."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=BENCHMARKS,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def probe(tmp_path: Path, **env: str) -> list[str]:
    done = run_python(PROBE, str(tmp_path / "probe.db"), **env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("mode", ["NORMAL", "normal", "FULL"])
def test_the_benchmarks_take_synchronous_from_the_environment(tmp_path: Path, mode: str) -> None:
    wanted = mode.upper()
    assert probe(tmp_path, MEMSTORE_SQLITE_SYNCHRONOUS=mode) == [
        wanted, wanted, str(PRAGMA_VALUE[wanted]),
    ]  # fmt: skip


def test_without_the_variable_they_run_at_memstores_default(tmp_path: Path) -> None:
    assert probe(tmp_path) == ["FULL", "FULL", "2"]


def test_a_bad_value_stops_them_naming_the_variable() -> None:
    done = run_python("import single_appends", MEMSTORE_SQLITE_SYNCHRONOUS="sometimes")
    assert done.returncode != 0
    assert "MEMSTORE_SQLITE_SYNCHRONOUS" in done.stderr
