"""examples/traced_session.py runs offline and prints the trace docs/observability.md shows:
the compaction under the append that set it off, the consolidation under the compaction, the
recall under the model input; and no stored text unless the process opts in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "traced_session.py"
#: Words of the session's stored texts (a tool's output, a user's preference).
STORED = ("card-network", "#payments", "checkout-service /healthz")


def run(tmp_path: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(tmp_path / "traced.db")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


def test_the_example_prints_the_trace_with_its_figures(tmp_path: Path) -> None:
    out = run(tmp_path)
    lines = out.splitlines()
    spans = [line for line in lines if "|" not in line]
    names = [line.split()[0] for line in spans]
    assert names.count("create_memory") == 9 and names.count("search_memory") == 3
    compact = next(i for i, line in enumerate(spans) if line.strip().startswith("memstore.c"))
    assert spans[compact - 1].strip().startswith("create_memory")  # set off by that append
    assert depth(spans[compact]) == depth(spans[compact - 1]) + 1
    consolidation = spans[compact + 1]
    assert consolidation.strip().startswith("upsert_memory")
    assert depth(consolidation) == depth(spans[compact]) + 1
    assert "| memstore.compaction.items_summarized = 4" in out
    # A conversation this short keeps all it said: its three facts (docs/consolidation.md).
    assert "| memstore.consolidation.written = 3" in out
    assert "| memstore.consolidation.skipped = 0" in out
    assert "| memstore.input.recalled = 1" in out
    assert "| memstore.compaction.summarizer = extractive" in out
    assert not any(word in out for word in STORED)


def test_with_the_opt_in_the_trace_holds_what_was_stored(tmp_path: Path) -> None:
    out = run(tmp_path, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    assert all(word in out for word in STORED)
    assert "| gen_ai.memory.records = " in out
