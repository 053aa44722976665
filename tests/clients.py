"""How tests drive memstore from outside, as its users do: the ``memstore`` command (in this
process by click's runner, or as a process of its own) and an MCP client in process."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memstore import MemoryStore, WordEstimator


def memstore_command() -> list[str]:
    """How to run ``memstore``: the installed executable (``python -m memstore`` without it)."""
    installed = Path(sys.executable).with_name("memstore")
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "memstore"]


def memstore_cli(
    db: Path | str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``memstore --db DB ARGS...`` run in this process by click's runner: its exit code,
    standard output and standard error, as a user's shell would get them, without starting
    an interpreter per call. Output is not a terminal (piped widths, no colour), and the
    environment is this process's. An exception the CLI does not turn into a message (a bug,
    where a user would see a traceback) is raised here rather than printed.

    :func:`memstore_process` runs the installed executable instead, for the few tests that
    prove the entry point itself.
    """
    argv = ["--db", str(db), *args]

    def invoke() -> subprocess.CompletedProcess[str]:
        from click.testing import CliRunner

        from memstore.cli import main

        with contextlib.chdir(cwd or Path.cwd()):
            result = CliRunner().invoke(main, argv, prog_name="memstore", catch_exceptions=False)
        return subprocess.CompletedProcess(
            ["memstore", *argv], result.exit_code, result.stdout, result.stderr
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return invoke()
    # Called from a coroutine: the command runs its own event loop, which needs a thread
    # without one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(invoke).result()


def memstore_process(
    db: Path | str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``memstore --db DB ARGS...`` run as a user runs it: the installed executable, a
    process of its own, its output piped."""
    return subprocess.run(
        [*memstore_command(), "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@asynccontextmanager
async def mcp_client(store: MemoryStore, **options: Any) -> AsyncIterator[Any]:
    """An MCP client connected in process (the SDK's memory streams, JSON-RPC framed) to
    memstore's MCP server over ``store``; new sessions count words. ``options``: the
    server's (``scope``, ``read_only``)."""
    from mcp import Client

    from memstore.adapters.mcp.server import McpServer

    server = McpServer(store, estimator=WordEstimator(), **options)
    async with Client(server.server, mode="legacy") as client:
        yield client


def tool_text(result: Any) -> str:
    """The text of an MCP tool result (memstore's tools answer with one text block)."""
    (block,) = result.content
    return str(block.text)
