"""The OpenAI Agents SDK's own session tests, run against MemstoreSession.

The SDK's source package (sdist) of the installed version carries its test suite. This module
fetches it from the package index with pip at test time (it is never committed), then runs
its session tests in a separate pytest process with ``agents_sdk_shim`` loaded: every
``SQLiteSession`` those tests build is a ``MemstoreSession`` (limits large enough that nothing
compacts), and their assertions are untouched. Only the tests the shim names are skipped, each
with its reason.

Without a network the fetch fails: in CI (``CI`` set) that is a failure, elsewhere the test
is skipped and says why.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from agents_sdk_shim import SKIPPED

HERE = Path(__file__).parent
#: The SDK's tests of the session protocol, and the runner tests that run turns through a
#: ``SQLiteSession``: what the SDK itself does with a session.
SUITE = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/test_tool_batch_failure_history.py",
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_failure_boundaries.py",
    "tests/test_programmatic_tool_calling.py",
    "tests/test_max_turns.py",
    "tests/test_soft_cancel.py",
    "tests/test_run_impl_resume_paths.py",
    "tests/test_agent_runner.py",
    "tests/test_agent_runner_streamed.py",
]
#: Fetching 7 MB and unpacking it; more means the index is unreachable.
FETCH_TIMEOUT_S = 300
SUITE_TIMEOUT_S = 1200


def fetch_sdist(version: str, into: Path) -> Path:
    """The unpacked sdist of ``openai-agents==version`` under ``into`` (pip download)."""
    command = [
        sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
        "--disable-pip-version-check", "-q", "-d", str(into), f"openai-agents=={version}",
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
        failure = None if done.returncode == 0 else (done.stderr or done.stdout).strip()
    except subprocess.TimeoutExpired:
        failure = f"pip download did not finish in {FETCH_TIMEOUT_S} s"
    if failure is not None:
        why = f"could not fetch the openai-agents {version} sdist (no network?): {failure[-500:]}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    archive = next(into.glob("openai_agents-*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return next(path for path in into.iterdir() if path.is_dir())


def run_suite(sdist: Path, report: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(sdist), str(HERE)])
    command = [
        sys.executable, "-m", "pytest", "-p", "agents_sdk_shim", "-p", "no:cacheprovider",
        "-q", "-rfEs", f"--junitxml={report}", "--rootdir", str(sdist),
        "-c", str(sdist / "pyproject.toml"), *SUITE,
    ]  # fmt: skip
    return subprocess.run(
        command, cwd=sdist, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S
    )


def outcomes(report: Path) -> dict[str, tuple[str, str]]:
    """Test id -> (outcome, message) from a JUnit XML report."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome, message = tag, node.get("message") or ""
                break
        found[test_id] = (outcome, message)
    return found


def test_the_sdks_session_tests_pass_against_memstore(tmp_path: Path) -> None:
    version = importlib.metadata.version("openai-agents")
    sdist = fetch_sdist(version, tmp_path)
    report = tmp_path / "sdk-suite.xml"
    done = run_suite(sdist, report)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = outcomes(report)
    failed = {t: m for t, (o, m) in results.items() if o in ("failure", "error")}
    assert not failed, "\n".join(f"{t}: {m[:300]}" for t, m in failed.items())
    skipped = {t: m for t, (o, m) in results.items() if o == "skipped"}
    ours = {t for t, m in skipped.items() if m.startswith("memstore:")}
    # Every test the shim names exists in this version (a renamed test must not be skipped
    # silently forever), and nothing else is skipped by memstore.
    named = {t.rsplit("::", 1)[1].split("[")[0] for t in ours}
    assert named == set(SKIPPED), sorted(set(SKIPPED) ^ named)
    passed = sum(1 for o, _ in results.values() if o == "passed")
    assert passed >= 500, done.stdout[-3000:]
    print(
        f"openai-agents {version}: {passed} passed, {len(failed)} failed, "
        f"{len(ours)} skipped by memstore, {len(skipped) - len(ours)} skipped by the SDK"
    )
    assert done.returncode == 0, done.stdout[-3000:]
