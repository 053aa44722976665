"""examples/code_review_agent.py, offline: a preference remembered in one run shapes the next."""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from rich.console import Console

from memstore import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
PREFERENCE = "Review stats.py. From now on, add docstrings to all generated code."


def load_example() -> ModuleType:
    path = ROOT / "examples" / "code_review_agent.py"
    spec = importlib.util.spec_from_file_location("code_review_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run(example: ModuleType, *argv: str):  # type: ignore[no-untyped-def]
    out = io.StringIO()
    result, standin = await example.review(
        example.parse_args(["--offline", *argv]), Console(file=out, width=120)
    )
    return result, standin, out.getvalue()


async def test_a_preference_from_one_run_shapes_the_next(tmp_path: Path) -> None:
    example = load_example()
    workspace, db = tmp_path / "ws", tmp_path / "review.db"
    common = ("--workspace", str(workspace), "--db", str(db))

    first, standin, shown = await run(example, "--sample", *common, PREFERENCE)
    assert [c.name for c in first.tool_calls] == [
        "remember",
        "read_file",
        "patch_file",
        "print_review",
    ]
    assert all(c.ok for c in first.tool_calls)
    assert "stats.py: average() divides by values" in shown
    stats = (workspace / "stats.py").read_text()
    assert 'raise ValueError("values must not be empty")' in stats
    assert '"""Compute average of values' in stats  # the preference, applied at once
    async with MemoryStore.open(db) as store:
        entry = await store.ltm.get("docstrings", scope="agent:code-reviewer")
        assert entry is not None and entry.value == "add docstrings to all generated code"
        kinds = [i.kind.value for i in await store.session("review-1").items()]
    assert kinds[0] == "USER_MESSAGE" and kinds[-1] == "ASSISTANT_MESSAGE"
    assert kinds.count("DECISION") == 2  # remember and patch_file: changes the agent made

    # A new run is a new session: its working memory is empty, its long-term memory is not.
    second, standin, _ = await run(example, *common, "Review pricing.py.")
    first_request = standin.bodies[0]
    assert first_request["instructions"] == example.INSTRUCTIONS
    memories, request = first_request["input"]
    assert memories["role"] == "developer" and memories["content"].startswith("Relevant memories")
    assert "add docstrings to all generated code" in memories["content"]
    assert request == {"role": "user", "content": "Review pricing.py."}
    assert {t["name"] for t in first_request["tools"]} == {
        "remember",
        "recall",
        "search_memory",
        "read_file",
        "patch_file",
        "print_review",
    }
    pricing = (workspace / "pricing.py").read_text()
    assert '"""Compute unit price of total, quantity' in pricing
    assert "if quantity == 0:" in pricing
    assert second.reply.startswith("Done: 1 finding(s)")


async def test_without_the_preference_no_docstring_is_written(tmp_path: Path) -> None:
    example = load_example()
    workspace = tmp_path / "ws"
    await run(example, "--sample", "--workspace", str(workspace), "--db", str(tmp_path / "x.db"),
              "Review pricing.py.")  # fmt: skip
    pricing = (workspace / "pricing.py").read_text()
    assert "if quantity == 0:" in pricing and '"""' not in pricing


async def test_the_workspace_confines_the_tools(tmp_path: Path) -> None:
    example = load_example()
    (tmp_path / "secret.py").write_text("TOKEN = 1\n")
    tools = {t.name: t for t in example.review_tools(tmp_path / "ws", Console(file=io.StringIO()))}
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("x = 1\nx = 1\n")
    for path in ("../secret.py", str(tmp_path / "secret.py"), "missing.py"):
        try:
            await tools["read_file"].handler(path=path)
        except ValueError:
            continue
        raise AssertionError(f"{path} was readable")
    try:
        await tools["patch_file"].handler(path="a.py", old="x = 1", new="x = 2")
    except ValueError as error:
        assert "occurs 2 times" in str(error)
    else:
        raise AssertionError("an ambiguous patch was applied")


def test_the_script_runs_offline_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("OPENAI_API_KEY", None)
    command = [sys.executable, str(ROOT / "examples" / "code_review_agent.py"), "--offline"]
    common = ["--workspace", str(tmp_path / "ws"), "--db", str(tmp_path / "r.db")]
    done = subprocess.run(
        [*command, "--sample", *common, PREFERENCE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "long-term: docstrings = 'add docstrings to all generated code'" in done.stdout
    # Without --offline and without a key: one line, exit 1.
    online = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "code_review_agent.py"), *common, "Review."],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert online.returncode == 1
    assert online.stderr.startswith("Error: OPENAI_API_KEY: is not set")
