"""A read-only copy (a mounted backup, a production copy) can be inspected: the read commands
open it read-only and write nothing; only writes fail. The copy sits on a tmpfs mounted
read-only in a mount namespace of the test's own (unshare), so even root cannot write it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import write_worked_example

SCRIPT = r"""
set -e
mount -t tmpfs -o size=16m tmpfs "$1"
cp "$2" "$1/copy.db"
mount -o remount,ro "$1"
PY="$3"
cd "$1"
run() { "$PY" -m memstore --db copy.db "$@"; echo "exit $?"; }
set +e
run sessions
run show incident-42 --all
run reports incident-42
run check
run ltm list
run replay incident-42
run show incident-42 --timeline
run db current
run add incident-42 "not stored" --estimator words
ls -a .
"""


def test_every_read_command_works_on_a_read_only_copy_and_writes_fail(tmp_path: Path) -> None:
    assert shutil.which("unshare"), "util-linux's unshare is needed to mount a read-only copy"
    db = tmp_path / "worked.db"
    write_worked_example(db)
    mount = tmp_path / "ro"
    mount.mkdir()
    result = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", SCRIPT, "sh", str(mount), str(db),
         sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, result.stderr
    codes = [line for line in out.splitlines() if line.startswith("exit ")]
    assert codes == ["exit 0"] * 8 + ["exit 1"], out + result.stderr
    assert "incident-42" in out and "replay verified" in out and "ok: all invariants" in out
    assert "read-only" in result.stderr or "cannot be opened" in result.stderr
    assert "Traceback" not in result.stderr
    assert out.split()[-3:] == [".", "..", "copy.db"]  # no WAL, no index, nothing written
