"""Memory fidelity: do planted facts survive 20 successive compactions?

Each session is a long, deterministic (seeded) incident investigation. Among filler (greetings,
acknowledgements, the assistant's narration and questions, verbose NORMAL tool logs, LOW tool
noise, restatements) it plants facts of the four kinds a summary must keep:
constraints (user sentences), decisions (DECISION items), HIGH-priority observations and
unresolved questions (the user's). It appends until the session has compacted 20 times, with
the store's defaults (limits 1500 / 900 / keep 4, exact o200k_base token counts), and after
every compaction it reads ``build_model_input()`` and checks each fact planted so far:

* **kept**: the fact's sentence is in the model input, word for word (white space aside);
* **changed**: its opening words are there but the sentence is not (it drifted);
* **lost**: neither.

Two summarizers run over the same sessions: the :class:`~memstore.ExtractiveSummarizer`, and
the :class:`~memstore.OpenAISummarizer` through the real ``openai`` client against a scripted
stand-in of ``/v1/responses`` (memstore.offline_model) that decodes the fenced data it was sent and
answers what the extractive summarizer would. The second run measures the model path's
plumbing (fencing and escaping round trip, folding the previous summary, usage), not a real
model's judgement; its summaries should equal the first run's.

    python benchmarks/fidelity.py [--sessions 3] [--compactions 20] [--json]

Offline: no key, no network. Prints retention after each compaction and at the end, and
every fact that changed or was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore import (
    ExtractiveSummarizer,
    MemoryKind,
    MemoryStore,
    OpenAISummarizer,
    Priority,
    Settings,
)
from memstore.offline_model import StandInModel, extractive_brain
from memstore.summarizers import Summarizer

SERVICES = ["checkout", "payments", "fraud", "inventory", "search", "billing", "ledger", "auth"]
DATABASES = ["orders-db", "ledger-db", "sessions-db", "catalog-db"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["March", "April", "May", "June"]

CONSTRAINTS = [
    "Never restart {svc}-service during business hours without paging the on-call first.",
    "All schema migrations on {db} must be reversible and reviewed by a second engineer.",
    "Only use the read replica {db}-replica-{n} for ad-hoc queries.",
    "Do not change the public API of {svc}-service before the {month} release.",
    "You must keep the error budget of {svc}-service above {pct} percent this quarter.",
    "Always tag the rollback commit with incident number INC-{n}{m}.",
]
DECISIONS = [
    "Decided to roll back {svc}-service to v2.{n}.{m} and keep the new rules table.",
    "Set the {db} connection pool to {n}{m} connections for the {svc} workers.",
    "Postponed the {svc}-service migration until the load test on {day} passes.",
    "Moved the {svc} cache TTL from 300s to {n}{m}s to cut stale reads.",
    "Paged the {svc} team lead and opened incident INC-{m}{n}{m} at severity 2.",
    "Disabled the {svc} feature flag new-scoring-{n} for all regions.",
]
OBSERVATIONS = [
    "{svc}-service p95 latency is {n}{m}40ms and degraded since 08:{m}{n} UTC.",
    "Disk on {db}-primary is {pct}% full and grows {n}GB per day.",
    "Error rate of {svc}-service jumped to {n}.{m}% right after deploy v2.{m}.{n}.",
    "The {db} index idx_{svc}_user is unused; {svc} queries do sequential scans.",
    "{svc}-service pods restarted {n}{m} times in the last hour with OOMKilled.",
    "Replication lag on {db}-replica-{n} reached {m}{n} seconds at peak.",
]
QUESTIONS = [
    "Is the {svc} cache warmed after each deploy?",
    "Who owns the {db} backup schedule now?",
    "Why did {svc}-service stop emitting traces at 07:{m}{n} UTC?",
    "Does the {svc} retry policy double the load on {db} during failover?",
    "Which team approved the {svc} rate limit of {n}{m}0 requests per second?",
    "Can we prove that no {svc} orders were lost during the outage?",
]
CATEGORIES = {
    "constraint": CONSTRAINTS,
    "decision": DECISIONS,
    "observation": OBSERVATIONS,
    "question": QUESTIONS,
}
CHATTER = ["Thanks.", "Ok.", "Great, carry on.", "Hi again!", "Thanks, that helps.", "Got it."]
REQUESTS = [
    "Check the dashboards for {svc}-service next.",
    "Look at the {svc} logs from the last hour.",
    "Compare {svc} latency with yesterday at the same time.",
    "Go through the recent deploys of {svc}-service.",
]
NARRATION = [
    "I will look at the {svc} traces next and report back.",
    "Here is what I found so far: nothing unusual in {svc} apart from the usual noise.",
    "Shall I continue with {svc}-service or switch to {db}?",
    "I checked {db}; its metrics look similar to last week, so I will move on.",
]
#: Words of one verbose NORMAL tool log: what a summary should not keep.
LOG_LINES = 6
#: Facts per session: 6 of each kind, spread over the first ~80% of the run.
FACTS_PER_CATEGORY = 6
#: Events between facts: enough filler that every compaction sees several kinds of noise.
FILLER_PER_FACT = 7


@dataclass(frozen=True)
class Fact:
    """One planted fact: its kind and exact sentence."""

    category: str
    text: str

    @property
    def opening(self) -> str:
        """Its first five words: how a drifted version is recognised."""
        return _norm(" ".join(self.text.split()[:5]))


@dataclass(frozen=True)
class Event:
    """One append: role, kind, priority, content, and the fact it plants (if any)."""

    role: str
    kind: MemoryKind
    priority: Priority
    content: str
    fact: Fact | None = None


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w%.:/-]+", " ", text.lower()).split())


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        svc=rng.choice(SERVICES),
        db=rng.choice(DATABASES),
        day=rng.choice(DAYS),
        month=rng.choice(MONTHS),
        n=rng.randint(1, 9),
        m=rng.randint(0, 9),
        pct=rng.randint(80, 99),
    )


def _log(rng: random.Random) -> str:
    svc = rng.choice(SERVICES)
    return " ".join(
        f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)} GET /api/{svc}/"
        f"{rng.choice(['health', 'items', 'orders', 'metrics'])} {rng.choice([200, 200, 304])} "
        f"{rng.randint(3, 90)}ms pod={svc}-{rng.randint(1000, 9999)}"
        for _ in range(LOG_LINES)
    )


def _filler(rng: random.Random, planted: list[Fact]) -> Event:
    roll = rng.random()
    if roll < 0.25:
        return Event("tool", MemoryKind.TOOL_OBSERVATION, Priority.NORMAL, _log(rng))
    if roll < 0.40:
        noise = (
            f"kubectl get pods -n {rng.choice(SERVICES)}: {rng.randint(3, 9)} Running, 0 Pending"
        )
        return Event("tool", MemoryKind.TOOL_OBSERVATION, Priority.LOW, noise)
    if roll < 0.60:
        return Event(
            "assistant", MemoryKind.ASSISTANT_MESSAGE, Priority.NORMAL,
            _fill(rng, rng.choice(NARRATION)),
        )  # fmt: skip
    if roll < 0.70 and planted:
        # A restatement: the same fact again, wrapped in chatter (repetition to fold away).
        fact = rng.choice([f for f in planted if f.category == "constraint"] or planted)
        if fact.category in ("constraint", "question"):
            return Event(
                "user",
                MemoryKind.USER_MESSAGE,
                Priority.NORMAL,
                f"{rng.choice(CHATTER)} {fact.text}",
            )
    text = f"{rng.choice(CHATTER)} {_fill(rng, rng.choice(REQUESTS))}"
    return Event("user", MemoryKind.USER_MESSAGE, Priority.NORMAL, text)


def _planting(category: str, text: str, rng: random.Random) -> Event:
    fact = Fact(category, text)
    if category == "decision":
        return Event("developer", MemoryKind.DECISION, Priority.NORMAL, text, fact)
    if category == "observation":
        return Event("tool", MemoryKind.TOOL_OBSERVATION, Priority.HIGH, text, fact)
    request = _fill(rng, rng.choice(REQUESTS))
    content = f"{rng.choice(CHATTER)} {text} {request}"  # the fact sits among other sentences
    return Event("user", MemoryKind.USER_MESSAGE, Priority.NORMAL, content, fact)


def scenario(seed: int) -> Iterator[Event]:
    """An endless session: facts among filler first, then filler only."""
    rng = random.Random(seed)
    pending = [(cat, _fill(rng, t)) for cat, ts in CATEGORIES.items() for t in ts]
    rng.shuffle(pending)
    pending = pending[: FACTS_PER_CATEGORY * len(CATEGORIES)]
    planted: list[Fact] = []
    yield Event("user", MemoryKind.USER_MESSAGE, Priority.NORMAL,
                "Hi! Investigate the checkout incident end to end and keep me posted.")  # fmt: skip
    while True:
        for _ in range(FILLER_PER_FACT):
            yield _filler(rng, planted)
        if pending:
            category, text = pending.pop()
            event = _planting(category, text, rng)
            assert event.fact is not None
            planted.append(event.fact)
            yield event


@dataclass
class Run:
    """One summarizer over one session."""

    summarizer: str
    seed: int
    facts: int = 0
    retention: list[float] = field(default_factory=list)  # after each compaction
    changed: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    compactions: int = 0
    summary_errors: int = 0
    summary_tokens: int = 0
    usage_tokens: int = 0
    final_summary: str = ""
    seconds: float = 0.0

    @property
    def final(self) -> float:
        return self.retention[-1] if self.retention else 1.0


def check_facts(model_input: list[dict[str, Any]], facts: list[Fact]) -> tuple[int, list, list]:
    """(facts kept, facts changed, facts lost) in ``model_input``."""
    seen = _norm(" ".join(str(message.get("content", "")) for message in model_input))
    kept, changed, lost = 0, [], []
    for fact in facts:
        if _norm(fact.text) in seen:
            kept += 1
        elif fact.opening in seen:
            changed.append(fact)
        else:
            lost.append(fact)
    return kept, changed, lost


async def run_session(
    store: MemoryStore, name: str, summarizer: Summarizer, seed: int, compactions: int
) -> Run:
    """Append the seeded scenario until ``compactions`` compactions; measure after each."""
    run = Run(name, seed)
    memory = store.session(f"fidelity-{name}-{seed}", summarizer=summarizer)
    planted: list[Fact] = []
    counted = 0
    began = time.perf_counter()
    for event in scenario(seed):
        await memory.add(event.role, event.content, kind=event.kind, priority=event.priority)
        if event.fact is not None:
            planted.append(event.fact)
        reports = await memory.reports()
        if len(reports) == counted:
            continue
        counted = len(reports)
        kept, changed, lost = check_facts(await memory.build_model_input(), planted)
        run.retention.append(kept / len(planted) if planted else 1.0)
        if counted >= compactions:
            run.changed = [f.text for f in changed]
            run.lost = [f.text for f in lost]
            break
    run.seconds = time.perf_counter() - began
    run.facts = len(planted)
    run.compactions = counted
    run.summary_errors = sum(1 for r in reports if r.summary_error)
    run.usage_tokens = sum(int((r.usage or {}).get("total_tokens", 0)) for r in reports)
    run.summary_tokens = reports[-1].summary_tokens or 0
    run.final_summary = await memory.summary() or ""
    return run


async def measure(db: Path, *, sessions: int = 3, compactions: int = 20) -> list[Run]:
    """Both summarizers over ``sessions`` seeded sessions, in one database."""
    runs: list[Run] = []
    # FULL durability is not what is measured here; NORMAL keeps the run short.
    async with MemoryStore.open(db, settings=Settings(sqlite_synchronous="NORMAL")) as store:
        for seed in range(1, sessions + 1):
            runs.append(
                await run_session(store, "extractive", ExtractiveSummarizer(), seed, compactions)
            )
            standin = StandInModel(extractive_brain())
            client = standin.client()
            summarizer = OpenAISummarizer(client, "stand-in")
            runs.append(await run_session(store, "openai-standin", summarizer, seed, compactions))
            await client.close()
    return runs


def report(runs: list[Run], out: Any = sys.stdout) -> None:
    """Print the table, retention after each compaction, and every changed or lost fact."""
    print(
        f"{'summarizer':<16} {'seed':>4} {'facts':>5} {'min kept':>9} {'final kept':>10} "
        f"{'changed':>7} {'lost':>4} {'compactions':>11} {'errors':>6} {'summary tok':>11} "
        f"{'model tok':>9}",
        file=out,
    )
    for run in runs:
        print(
            f"{run.summarizer:<16} {run.seed:>4} {run.facts:>5} {min(run.retention):>9.0%} "
            f"{run.final:>10.0%} {len(run.changed):>7} {len(run.lost):>4} {run.compactions:>11} "
            f"{run.summary_errors:>6} {run.summary_tokens:>11} {run.usage_tokens:>9}",
            file=out,
        )
    for name in dict.fromkeys(r.summarizer for r in runs):
        mine = [r for r in runs if r.summarizer == name]
        width = max(len(r.retention) for r in mine)
        shares = [
            sum(r.retention[i] for r in mine if i < len(r.retention))
            / sum(1 for r in mine if i < len(r.retention))
            for i in range(width)
        ]
        print(f"{name}: kept after each compaction: " + " ".join(f"{s:.0%}" for s in shares),
              file=out)  # fmt: skip
    by_seed: dict[int, set[str]] = {}
    for run in runs:
        by_seed.setdefault(run.seed, set()).add(run.final_summary)
    same = all(len(summaries) == 1 for summaries in by_seed.values())
    print(f"openai path (stand-in) summaries equal the extractive ones: {same}", file=out)
    for run in runs:
        for text in run.changed:
            print(f"CHANGED [{run.summarizer} seed {run.seed}] {text}", file=out)
        for text in run.lost:
            print(f"LOST    [{run.summarizer} seed {run.seed}] {text}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=3, help="seeded sessions per summarizer")
    parser.add_argument("--compactions", type=int, default=20, help="compactions per session")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = asyncio.run(
            measure(Path(tmp) / "fidelity.db", sessions=args.sessions, compactions=args.compactions)
        )
    if args.json:
        print(json.dumps([{**run.__dict__, "final": run.final} for run in runs], indent=2))
    else:
        report(runs)
    return 0 if all(r.final == 1.0 and not r.changed for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
