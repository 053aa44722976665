"""Every Python example in README.md and docs/ runs as written, and the documents stay docs.

A block is a complete program (it ends in ``asyncio.run(main())``), or a fragment of the
quickstart (its first line is ``# fragment: continues the quickstart``), run inside the
quickstart's ``async with`` block after its last line. Each runs in an empty directory,
offline, as ``__main__`` of a fresh namespace, with the environment it started with restored
after it. One interpreter, outside the test process, runs them all in turn: starting one per
example cost more than most examples.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
FRAGMENT = "# fragment: continues the quickstart\n"
QUICKSTART_END = (
    "        print(await memory.build_model_input())  # Responses API `input`, bounded\n"
)


def python_blocks() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        for number, (language, body) in enumerate(FENCE.findall(document.read_text()), 1):
            if language == "python":
                found.append((f"{document.name}#{number}", body))
    return found


def quickstart() -> str:
    readme = (ROOT / "README.md").read_text()
    program = next(
        body
        for language, body in FENCE.findall(readme)
        if language == "python" and "asyncio.run(main())" in body
    )
    assert QUICKSTART_END in program, "the quickstart's last line moved: update this test"
    return program


BLOCKS = python_blocks()

#: What the example runner prints before its answer: an example's own output never does.
ANSWER = "@@memstore-docs-answer@@ "
#: Reads one JSON request a line (program, name, directory); runs it; answers in one line:
#: its traceback, or the lines of the ``print`` calls that never showed a value. A call's
#: arguments other than literals are the values it promises (``print("compacted:",
#: report.removed)`` promises ``report.removed``); a call that never ran, or only ever
#: printed ``None`` or empty values, showed nothing.
RUNNER = f"""
import ast, builtins, contextlib, io, json, os, sys, traceback

def promises(program):
    calls = {{}}
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            values = [n for n, arg in enumerate(node.args) if not isinstance(arg, ast.Constant)]
            calls[(node.lineno, node.end_lineno)] = values
    return calls

def empty(value):
    return value is None or (isinstance(value, (str, list, tuple, dict, set)) and not value)

for line in sys.stdin:
    request = json.loads(line)
    os.chdir(request["cwd"])
    environment = dict(os.environ)
    os.environ.update(request["env"])
    output = io.StringIO()
    calls = promises(request["program"])
    shown = set()

    def tracking_print(*args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_filename == request["where"]:
            for (first, last), values in calls.items():
                if first <= frame.f_lineno <= last and (
                    not values or any(not empty(args[n]) for n in values if n < len(args))
                ):
                    shown.add((first, last))
        builtins.print(*args, **kwargs)

    try:
        with contextlib.redirect_stdout(output):
            code = compile(request["program"], request["where"], "exec")
            exec(code, {{"__name__": "__main__", "print": tracking_print}})
        silent = sorted(first for first, last in set(calls) - shown)
        answer = {{"ok": True, "silent": silent}}
    except BaseException:
        answer = {{"ok": False, "error": traceback.format_exc()}}
    finally:
        os.environ.clear()
        os.environ.update(environment)
    print({ANSWER!r} + json.dumps(answer), flush=True)
"""


@pytest.fixture(scope="module")
def runner() -> Iterator[subprocess.Popen[str]]:
    """The interpreter that runs the examples (started once for this module), in the
    environment the autouse ``hermetic`` fixture gives a test: it starts before that fixture
    runs, so it is built here."""
    hermetic = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("MEMORY_", "MEMSTORE_")) and name != "OPENAI_API_KEY"
    }
    hermetic["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
    with subprocess.Popen(
        [sys.executable, "-c", RUNNER],
        env=hermetic,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        yield process
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


def run_example(runner: subprocess.Popen[str], where: str, program: str, cwd: Path) -> str:
    """Run ``program`` in the runner; its traceback, or the lines of the prints that showed
    nothing (:data:`RUNNER`), or ``""`` when it ran to the end and printed what it says."""
    assert runner.stdin is not None and runner.stdout is not None
    env = {"MEMSTORE_DB": str(cwd / "env.db")}
    request = {"program": program, "where": where, "cwd": str(cwd), "env": env}
    runner.stdin.write(json.dumps(request) + "\n")
    runner.stdin.flush()
    for line in runner.stdout:
        if line.startswith(ANSWER):
            answer = json.loads(line.removeprefix(ANSWER))
            if not answer["ok"]:
                return str(answer["error"])
            lines = program.splitlines()
            return "".join(
                f"line {n} printed nothing: {lines[n - 1].strip()}\n" for n in answer["silent"]
            )
    raise AssertionError(f"{where}: the example runner died")


@pytest.mark.parametrize(("where", "body"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_every_python_example_runs(
    where: str, body: str, tmp_path: Path, runner: subprocess.Popen[str]
) -> None:
    if body.startswith(FRAGMENT):
        program = quickstart().replace(
            QUICKSTART_END, QUICKSTART_END + textwrap.indent(body, " " * 8)
        )
    else:
        assert "asyncio.run(main())" in body, f"{where}: neither a program nor a fragment"
        program = body
    error = run_example(runner, where, program, tmp_path)
    if where in PRINTS_NOTHING_YET and error.startswith("line "):
        pytest.xfail(PRINTS_NOTHING_YET[where])
    assert error == "", f"{where}:\n{error[-3000:]}"
    assert where not in PRINTS_NOTHING_YET, f"{where} prints it now: take it off the list"


#: Examples that run but print nothing where they promise something, for a known reason of
#: the product's (reported as expected failures until it is fixed, then the test says so).
PRINTS_NOTHING_YET: dict[str, str] = {}


def test_there_are_examples_to_run() -> None:
    assert len(BLOCKS) >= 5


#: What a document must not say: the spec the repository does not contain, work-log
#: material, and the names of write-path machinery that no longer exists.
FORBIDDEN = [
    r"\bSPEC\b",
    r"as the issue",
    r"\b20\d\d-\d\d-\d\d\b",
    r"\bcommit [0-9a-f]{7,40}\b",
    r"loop.commit",
    r"LOOP_COMMIT",
    r"step generator",
    r"sqlite_statements",
    r"CHECKPOINT_FRAMES",
    r"standin",
]


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_documents_read_as_documentation(document: Path) -> None:
    text = document.read_text()
    found = [pattern for pattern in FORBIDDEN if re.search(pattern, text)]
    assert found == [], f"{document.name} says {found}"


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) < 300


def test_no_source_file_cites_a_spec_the_repository_does_not_contain() -> None:
    sources = [
        path
        for folder in ("memstore", "tests", "benchmarks", "examples", "migrations")
        for path in (ROOT / folder).rglob("*.py")
        if path != Path(__file__).resolve()
    ]
    citing = [str(path.relative_to(ROOT)) for path in sources if "SPEC" in path.read_text()]
    assert citing == []
