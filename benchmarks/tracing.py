"""What tracing costs the hot paths: appends and model inputs, with OpenTelemetry absent,
imported with no SDK behind it, and recording with the SDK.

    pip install '.[test]'             # the OpenTelemetry API and SDK
    python benchmarks/tracing.py [--appends 400] [--inputs 200] [--rounds 5] [--dir DIR]

Three modes, each a fresh process per round, the rounds interleaved (every mode once per
round, each first in turn) so that a noisy moment of a shared machine hits every mode alike:

(a) ``absent``: ``import opentelemetry`` made impossible, as where it is not installed;
(b) ``api``: ``opentelemetry.trace`` imported and no provider set, as when the MCP SDK or
    pydantic-ai brought the API in and the application traces nothing;
(c) ``sdk``: the SDK's ``TracerProvider`` with a ``SimpleSpanProcessor`` into an
    ``InMemorySpanExporter``: every span recorded and exported as it ends.

Each process appends ``--appends`` ~40-word user messages one by one to a new session of a
new SQLite file (limits that never compact: the append itself), then builds the model input
``--inputs`` times for a session of 40 items and a summary, and times each call; it also
times the span helper alone (what every operation pays before its own work). Appends run at
``synchronous=NORMAL`` unless ``MEMSTORE_SQLITE_SYNCHRONOUS`` says otherwise: an fsync costs
milliseconds, and its noise would hide the microseconds measured here. Medians of each
process, then the median over rounds, and each mode's ratio to (a). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("absent", "api", "sdk")
#: Calls of the span helper timed in one loop: long enough for a clock of 1 µs resolution.
HELPER_CALLS = 20_000
#: Items in the session whose model input is built: a working memory of some size.
INPUT_ITEMS = 40
#: The writer thread indexes new items about once a second: past this pause it has, and its
#: work no longer lands among the timed model inputs.
INDEX_PAUSE_S = 2.0

#: Installed first in an ``absent`` worker: every ``opentelemetry`` import fails.
BLOCK_OPENTELEMETRY = """
import sys
class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(name)
        return None
sys.meta_path.insert(0, NoOpenTelemetry())
"""


def set_up(mode: str) -> Any:
    """Prepare this process for ``mode``; the SDK's exporter for ``sdk``."""
    if mode == "absent":
        exec(BLOCK_OPENTELEMETRY, {})
        return None
    import opentelemetry.trace

    if mode == "api":
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    opentelemetry.trace.set_tracer_provider(provider)
    return exporter


#: The words of the messages appended (the same for every mode).
WORDS = ("the", "checkout", "service", "timed", "out", "again", "after", "the", "deploy")


def message(i: int) -> str:
    words = WORDS
    return " ".join(f"{words[(i + k) % len(words)]}{k % 7}" for k in range(40))


async def measure(mode: str, folder: Path, appends: int, inputs: int) -> dict[str, float]:
    exporter = set_up(mode)
    from memstore import MemoryLimits, MemoryStore, WordEstimator
    from memstore.memory import tracing

    never = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
    out: dict[str, float] = {}
    async with MemoryStore.open(folder / "bench.db") as store:
        memory = store.session("appends", limits=never, estimator=WordEstimator())
        for i in range(20):  # warm: the writer thread, the statements, the tracer
            await memory.add("user", message(i))
        times = []
        for i in range(appends):
            began = time.perf_counter()
            await memory.add("user", message(i))
            times.append(time.perf_counter() - began)
        out["append_us"] = statistics.median(times) * 1e6

        limits = MemoryLimits(hard=4000, target=2000, keep_recent=4)
        reading = store.session("inputs", limits=limits, estimator=WordEstimator())
        for i in range(INPUT_ITEMS):
            await reading.add("user" if i % 2 == 0 else "assistant", message(i))
        await reading.compact()  # a summary, as a long session has
        for i in range(INPUT_ITEMS):
            await reading.add("user" if i % 2 == 0 else "assistant", message(i))
        await asyncio.sleep(INDEX_PAUSE_S)  # the writer indexes the new items now, not below
        times = []
        for _ in range(inputs):
            began = time.perf_counter()
            await reading.build_model_input()
            times.append(time.perf_counter() - began)
        out["input_us"] = statistics.median(times) * 1e6

    out["spans"] = 0 if exporter is None else len(exporter.get_finished_spans())
    began = time.perf_counter()
    for _ in range(HELPER_CALLS):
        with tracing.start(tracing.CREATE_MEMORY, operation=tracing.CREATE_MEMORY) as span:
            span.set(tracing.RECORD_COUNT, 1)
    out["helper_ns"] = (time.perf_counter() - began) / HELPER_CALLS * 1e9
    return out


def run_worker(mode: str, folder: Path, appends: int, inputs: int) -> dict[str, float]:
    env = {**os.environ}
    env.setdefault("MEMSTORE_SQLITE_SYNCHRONOUS", "NORMAL")
    command = [sys.executable, __file__, "--worker", mode, "--dir", str(folder)]
    command += ["--appends", str(appends), "--inputs", str(inputs)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=400)
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the databases go")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = asyncio.run(measure(args.worker, Path(args.dir), args.appends, args.inputs))
        print(json.dumps(result))
        return

    rounds: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        for number in range(args.rounds):
            for mode in MODES[number % 3 :] + MODES[: number % 3]:  # no mode always first
                folder = Path(work) / f"{mode}-{number}"
                folder.mkdir()
                rounds[mode].append(run_worker(mode, folder, args.appends, args.inputs))
            print(f"round {number + 1}/{args.rounds} done", file=sys.stderr)

    def median(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[mode])

    def spread(mode: str, key: str) -> str:
        values = [r[key] / median("absent", key) for r in rounds[mode]]
        return f"{min(values):.2f}-{max(values):.2f}"

    sync = os.environ.get("MEMSTORE_SQLITE_SYNCHRONOUS", "NORMAL")
    print(f"medians of {args.rounds} rounds (each round's ratios: min-max); appends at "
          f"synchronous={sync}")  # fmt: skip
    print(f"{'mode':<7} {'add() µs':>9} {'ratio':>7} {'rounds':>10} {'input µs':>9} "
          f"{'ratio':>7} {'rounds':>10} {'span ns':>8} {'spans':>6}")  # fmt: skip
    for mode in MODES:
        append, built = median(mode, "append_us"), median(mode, "input_us")
        print(
            f"{mode:<7} {append:>9.1f} {append / median('absent', 'append_us'):>6.3f}x "
            f"{spread(mode, 'append_us'):>10} {built:>9.1f} "
            f"{built / median('absent', 'input_us'):>6.3f}x {spread(mode, 'input_us'):>10} "
            f"{median(mode, 'helper_ns'):>8.0f} {median(mode, 'spans'):>6.0f}"
        )


if __name__ == "__main__":
    main()
