"""What MCP adds to a call: appends and reads through the API, in process, over stdio and HTTP.

    python benchmarks/mcp_roundtrip.py [--n 300] [--db-url URL]

Each way appends ``--n`` items of ~12 words to a session of its own (default limits, tiktoken
counts), then reads the session's model input ``--n`` times, and reports the median and 95th
percentile per call:

* ``api``: ``memory.add`` and ``memory.build_model_input`` (the baseline, in the same run);
* ``in-process``: the MCP tools through the SDK's client over memory streams (JSON-RPC framed);
* ``stdio``: ``memstore mcp`` launched by the SDK's stdio client;
* ``http``: ``memstore mcp --http 127.0.0.1:0`` through the SDK's streamable HTTP client.

Needs the ``mcp`` extra. ``--db-url`` points every way at PostgreSQL instead of a SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from memstore import MemoryStore
from memstore.adapters.mcp.server import McpServer

TEXT = "payment-service p95 latency is {n}ms and the fraud-service queue is growing"
MEMSTORE = str(Path(sys.executable).with_name("memstore"))


async def timed(calls: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    """Seconds each of ``calls`` awaited calls took."""
    spent = []
    for n in range(calls):
        start = time.perf_counter()
        await call(n)
        spent.append(time.perf_counter() - start)
    return spent


async def through_client(client: Any, session: str, calls: int) -> tuple[list[float], list[float]]:
    async def append(n: int) -> None:
        arguments = {"session_id": session, "content": TEXT.format(n=n), "role": "tool"}
        result = await client.call_tool("append_to_session", arguments)
        assert not result.is_error, result

    async def read(n: int) -> None:
        assert not (await client.call_tool("build_model_input", {"session_id": session})).is_error

    return await timed(calls, append), await timed(calls, read)


async def through_api(db: str, calls: int) -> tuple[list[float], list[float]]:
    async with MemoryStore.open(db) as store:
        memory = store.session("api")

        async def append(n: int) -> None:
            await memory.add("tool", TEXT.format(n=n))

        async def read(n: int) -> None:
            await memory.build_model_input()

        return await timed(calls, append), await timed(calls, read)


async def in_process(db: str, calls: int) -> tuple[list[float], list[float]]:
    async with MemoryStore.open(db) as store:
        server = McpServer(store)
        async with Client(server.server, mode="legacy") as client:
            return await through_client(client, "in-process", calls)


async def over_stdio(db: str, calls: int) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(command=MEMSTORE, args=["--db", db, "mcp"], env=dict(os.environ))
    async with Client(stdio_client(params)) as client:
        return await through_client(client, "stdio", calls)


async def over_http(db: str, calls: int) -> tuple[list[float], list[float]]:
    command = [MEMSTORE, "--db", db, "mcp", "--http", "127.0.0.1:0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        select.select([process.stderr], [], [], 60)
        url = process.stderr.readline().split(" on ", 1)[1].split()[0]
        async with Client(url) as client:
            return await through_client(client, "http", calls)
    finally:
        process.terminate()
        process.wait(timeout=30)


def milliseconds(spent: list[float]) -> str:
    cuts = statistics.quantiles(spent, n=20)
    return f"median {statistics.median(spent) * 1e3:6.2f} ms, p95 {cuts[18] * 1e3:6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--db-url", default=None)
    args = parser.parse_args()
    db = args.db_url or str(Path(tempfile.mkdtemp()) / "mcp-bench.db")
    for name, way in (
        ("api", through_api),
        ("in-process", in_process),
        ("stdio", over_stdio),
        ("http", over_http),
    ):
        appends, reads = asyncio.run(way(db, args.n))
        print(f"{name:>10}  append: {milliseconds(appends)}  model input: {milliseconds(reads)}")


if __name__ == "__main__":
    main()
