"""examples/agents_sdk_session.py runs offline, as its docstring says, and ends with the audit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "agents_sdk_session.py"


def test_the_example_compacts_and_prints_the_audit(tmp_path: Path) -> None:
    db = tmp_path / "orders.db"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "turn 11: Order 11 is with DPD" in out
    assert "compaction #1:" in out and "compaction #2:" in out
    assert "forgotten items" in out and "summarized" in out  # memstore show --all
    assert "function_call_output call_0" in out  # the first call's output, on the record
    # Tracing is off: nothing about exporting traces, on either stream.
    assert "trace export" not in out + done.stderr and "OPENAI_API_KEY" not in out + done.stderr
