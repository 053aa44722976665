"""Tool-using agent sessions, generated: what a compacted session still knows of its answers.

Each session is a run of tasks an assistant does with tools, stored as Responses items the
way an Agents SDK session stores them (``add_items``: the user's message, the call, its
output, the reply). Eight kinds of task (orders, flights, weather, stock, support tickets,
calendar, exchange rates, the staff directory), each with several tools, argument shapes,
result formats (JSON objects, nested JSON, key-value text, prose, long logs) and phrasings of
the question and of the reply, drawn by a seeded random generator; between tasks come
thanks, small talk, LOW-priority health checks, statements of the user's plans and the odd
question nobody answers. Nothing is shaped after what the summarizer looks for: the
wording pools were written as a support agent's traffic, and every value is random.

An **answer** is a task's subject (an id or a name) and the values its tool returned. At
the end, an answer is *kept* by an input when its call and output are still items of it,
or when one line of it holds the subject and every value (case aside). Truncation keeps the
newest items that fit the same tokens. A question is *presented as open* when a line under
an open / pending / unresolved heading holds an answered question's subject.
"""

from __future__ import annotations

import json
import random
import re
import string
import time
from dataclasses import dataclass, field
from typing import Any

from memstore import MemoryLimits, MemoryStore, Priority, TiktokenEstimator

_OPEN_HEADING = re.compile(r"\b(open|pending|unresolved)\b", re.I)


@dataclass
class Task:
    """One question answered through tools."""

    subject: str
    values: list[str]
    items: list[dict[str, Any]]
    call_ids: list[str] = field(default_factory=list)


@dataclass
class Session:
    """A generated session: batches of Responses items (one ``add_items`` each)."""

    name: str
    batches: list[tuple[list[dict[str, Any]], list[Priority]]] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)


def _code(rng: random.Random, letters: int, digits: int, sep: str = "-") -> str:
    head = "".join(rng.choices(string.ascii_uppercase, k=letters))
    return f"{head}{sep}{''.join(rng.choices(string.digits, k=digits))}"


def _pick(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


def _date(rng: random.Random) -> str:
    return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# Each task kind returns (subject, values, call name, arguments, result text, question, reply).
def _order(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    order = _code(rng, 1, 4)
    status = _pick(rng, "shipped", "in transit", "out for delivery", "awaiting stock", "delivered")
    carrier = _pick(rng, "DHL", "DPD", "UPS", "Royal Mail", "FedEx", "Evri")
    eta = _date(rng)
    name, args = _pick(rng, "lookup_order", "get_order_status", "track_order"), {"order_id": order}
    result = rng.choice(
        [
            json.dumps({"order_id": order, "status": status, "carrier": carrier, "eta": eta}),
            json.dumps(
                {
                    "order": {
                        "id": order,
                        "state": status,
                        "shipping": {"carrier": carrier, "estimated_delivery": eta},
                    }
                }
            ),
            f"Order {order}: {status} via {carrier}, estimated delivery {eta}.",
        ]
    )
    question = _pick(
        rng,
        f"Where is order {order}?",
        f"Any news on my order {order}?",
        f"Can you check the status of {order} for me?",
        f"My parcel {order} hasn't arrived, what's going on?",
    )
    reply = _pick(
        rng,
        f"Your order {order} is {status} with {carrier}; it should arrive by {eta}.",
        f"{carrier} has it: {status}, expected {eta}.",
        f"Good news, it is {status}. The carrier is {carrier} and the estimate is {eta}.",
    )
    return order, [status, carrier, eta], name, args, result, question, reply


def _flight(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    flight = _code(rng, 2, rng.choice((3, 4)), "")
    gate = f"{rng.choice('ABCDE')}{rng.randint(1, 48)}"
    boards = f"{rng.randint(5, 22):02d}:{rng.choice(('05', '15', '30', '40', '55'))}"
    status = _pick(rng, "on time", "delayed", "boarding", "gate changed")
    name = _pick(rng, "flight_status", "get_flight")
    args = {"flight": flight, "date": _date(rng)}
    result = rng.choice(
        [
            f"{flight}: gate {gate}, boarding {boards}, status {status}",
            json.dumps(
                {
                    "flight": flight,
                    "gate": gate,
                    "boarding_time": boards,
                    "status": status,
                    "terminal": rng.randint(1, 5),
                }
            ),
            f"Flight {flight} is {status}. Passengers board at {boards} from gate {gate}.",
        ]
    )
    question = _pick(
        rng,
        f"Which gate does {flight} leave from?",
        f"Is flight {flight} on time?",
        f"When do we board {flight}?",
        f"Can you look up {flight} today?",
    )
    reply = _pick(
        rng,
        f"{flight} is {status}, gate {gate}, boarding at {boards}.",
        f"It boards at {boards} from {gate} ({status}).",
    )
    return flight, [gate, boards], name, args, result, question, reply


def _weather(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    city = _pick(rng, "Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Tbilisi", "Porto", "Quito")
    temp, cond = (
        str(rng.randint(-5, 34)),
        _pick(rng, "light rain", "sunny", "overcast", "snow showers", "fog"),
    )
    name, args = _pick(rng, "get_weather", "forecast"), {"city": city, "units": "metric"}
    result = rng.choice(
        [
            json.dumps(
                {
                    "location": city,
                    "temp_c": int(temp),
                    "conditions": cond,
                    "wind_kmh": rng.randint(0, 60),
                }
            ),
            f"{city} now: {temp}°C, {cond}, humidity {rng.randint(20, 99)}%",
        ]
    )
    question = _pick(
        rng,
        f"What's the weather like in {city}?",
        f"Do I need an umbrella in {city} today?",
        f"How warm is it in {city} right now?",
    )
    reply = _pick(
        rng, f"It's {temp} degrees and {cond} in {city}.", f"{cond.capitalize()}, {temp}°C."
    )
    return city, [temp, cond], name, args, result, question, reply


def _stock(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    sku = _code(rng, 2, 3)
    units, site = (
        str(rng.randint(0, 400)),
        _pick(rng, "Leeds", "Bristol", "Rotterdam", "Lyon", "Dublin"),
    )
    name, args = _pick(rng, "check_stock", "inventory_lookup"), {"sku": sku}
    result = rng.choice(
        [
            json.dumps(
                {
                    "sku": sku,
                    "warehouses": [{"site": site, "on_hand": int(units)}],
                    "reorder_level": 50,
                }
            ),
            f"sku={sku} on_hand={units} site={site} reserved={rng.randint(0, 20)}",
            f"There are {units} units of {sku} at {site}.",
        ]
    )
    question = _pick(
        rng,
        f"How many {sku} do we have left?",
        f"Is {sku} in stock?",
        f"Stock level for {sku}, please.",
    )
    reply = _pick(rng, f"{units} units at {site}.", f"We have {units} of {sku} in {site}.")
    return sku, [units, site], name, args, result, question, reply


def _ticket(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    ticket = _code(rng, 3, 4)
    status = _pick(rng, "waiting on customer", "escalated", "resolved", "in progress")
    owner = _pick(rng, "Priya", "Tomasz", "Aiko", "Mateo", "Grace", "Olu")
    name, args = _pick(rng, "get_ticket", "support_ticket"), {"ticket_id": ticket}
    log = " ".join(
        f"[{_date(rng)} 10:{rng.randint(10, 59)}] note added by agent, customer notified."
        for _ in range(rng.randint(2, 5))
    )
    result = rng.choice(
        [
            json.dumps(
                {
                    "id": ticket,
                    "status": status,
                    "assignee": {"name": owner, "team": "Tier 2"},
                    "history": log,
                }
            ),
            f"Ticket {ticket}\nStatus: {status}\nAssignee: {owner}\nHistory: {log}",
        ]
    )
    question = _pick(
        rng,
        f"Who is handling {ticket}?",
        f"What's the status of ticket {ticket}?",
        f"Has anyone picked up {ticket} yet?",
    )
    reply = _pick(
        rng, f"{owner} has it; it's {status}.", f"Ticket {ticket} is {status}, assigned to {owner}."
    )
    return ticket, [status, owner], name, args, result, question, reply


def _meeting(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    title = _pick(
        rng,
        "design review",
        "quarterly planning",
        "vendor call",
        "retro",
        "budget sync",
        "onboarding",
    )
    start, room = (
        f"{_date(rng)} {rng.randint(8, 17)}:00",
        _pick(rng, "Orion", "Room 4B", "Atlas", "Kestrel"),
    )
    name, args = "find_event", {"query": title}
    result = json.dumps(
        {"events": [{"title": title.title(), "start": start, "room": room, "organizer": "ops"}]}
    )
    question = _pick(
        rng,
        f"When is the {title}?",
        f"Where's the {title} happening?",
        f"Can you find the {title} in my calendar?",
    )
    reply = _pick(rng, f"The {title} is on {start} in {room}.", f"{start}, {room}.")
    return title, [start, room], name, args, result, question, reply


def _fx(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    base, quote = rng.sample(["EUR", "USD", "GBP", "JPY", "CHF", "SEK"], 2)
    rate = f"{rng.uniform(0.5, 2.0):.4f}"
    name, args = _pick(rng, "fx_rate", "exchange_rate"), {"base": base, "quote": quote}
    result = _pick(
        rng,
        json.dumps({"pair": f"{base}{quote}", "rate": float(rate), "as_of": _date(rng)}),
        f"1 {base} = {rate} {quote}",
    )
    question = _pick(
        rng, f"What's the {base} to {quote} rate?", f"How much is one {base} in {quote}?"
    )
    reply = f"One {base} buys {rate} {quote}."
    return base, [rate], name, args, result, question, reply


def _person(rng: random.Random) -> tuple[str, list[str], str, dict[str, Any], str, str, str]:
    first = _pick(rng, "Dana", "Ravi", "Lena", "Kofi", "Marta", "Jonas")
    person = f"{first} {_pick(rng, 'Whitfield', 'Okafor', 'Lindqvist', 'Moreau', 'Tanaka')}"
    ext, office = (
        str(rng.randint(1000, 9999)),
        _pick(rng, "Building C", "the Leeds office", "floor 3"),
    )
    name, args = "staff_directory", {"name": person}
    result = rng.choice(
        [
            json.dumps({"name": person, "extension": ext, "office": office, "title": "Engineer"}),
            f"{person} | ext {ext} | {office}",
        ]
    )
    question = _pick(rng, f"What's {person}'s extension?", f"How do I reach {person}?")
    reply = _pick(
        rng,
        f"{person} is on extension {ext}, in {office}.",
        f"Call {ext}; {person} sits in {office}.",
    )
    return person, [ext, office], name, args, result, question, reply


KINDS = [_order, _flight, _weather, _stock, _ticket, _meeting, _fx, _person]
_THANKS = ["thanks!", "great, cheers", "ok perfect", "Thank you so much.", "cool", "nice one"]
_SMALL_TALK = [
    "I'm flying out to Porto on Friday for the offsite.",
    "I prefer aisle seats, by the way.",
    "My manager wants a summary of all of this by Thursday.",
    "Sorry, busy morning here.",
]
_DANGLING = [
    "Can you also dig out last year's returns policy?",
    "Does the vendor portal support SSO?",
]


def generate(seed: int, tasks: int) -> Session:
    """One session of ``tasks`` tasks, with chatter and noise between them."""
    rng = random.Random(seed)
    session = Session(f"agent-{seed}")
    calls = 0
    for _ in range(tasks):
        subject, values, name, args, result, question, reply = rng.choice(KINDS)(rng)
        calls += 1
        call_id = f"call_{seed}_{calls}"
        items: list[dict[str, Any]] = [
            {"role": "user", "content": question},
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(args),
            },
            {"type": "function_call_output", "call_id": call_id, "output": result},
            {"role": "assistant", "content": [{"type": "output_text", "text": reply}]},
        ]
        session.tasks.append(Task(subject, values, items, [call_id]))
        session.batches.append((items, [Priority.NORMAL] * len(items)))
        roll = rng.random()
        if roll < 0.25:
            text = rng.choice(_THANKS)
            session.batches.append(
                (
                    [
                        {"role": "user", "content": text},
                        {"role": "assistant", "content": "You're welcome!"},
                    ],
                    [Priority.NORMAL] * 2,
                )
            )
        elif roll < 0.35:
            calls += 1
            ping = f"call_{seed}_{calls}"
            noise = [
                {
                    "type": "function_call",
                    "call_id": ping,
                    "name": "health_check",
                    "arguments": "{}",
                },
                {
                    "type": "function_call_output",
                    "call_id": ping,
                    "output": "GET /health 200 3ms\n" * 5,
                },
            ]
            session.batches.append((noise, [Priority.LOW] * 2))
        elif roll < 0.42:
            session.batches.append(
                ([{"role": "user", "content": rng.choice(_SMALL_TALK)}], [Priority.NORMAL])
            )
        elif roll < 0.46:
            session.batches.append(
                ([{"role": "user", "content": rng.choice(_DANGLING)}], [Priority.NORMAL])
            )
    return session


def _holds(line: str, task: Task) -> bool:
    lowered = line.lower()
    return task.subject.lower() in lowered and all(v.lower() in lowered for v in task.values)


async def measure(session: Session, store: MemoryStore, limits: MemoryLimits) -> dict[str, Any]:
    """Answers kept by memstore's input and by truncation to the same tokens."""
    estimator = TiktokenEstimator()
    memory = store.session(f"{session.name}-{limits.hard}", limits=limits, estimator=estimator)
    stored: list[Any] = []
    for items, priorities in session.batches:
        stored += await memory.add_items(items, priority=priorities)
    active = {item.seq for item in await memory.items()}
    summary = await memory.summary() or ""
    budget = await memory.estimated_tokens()
    window: set[int] = set()
    used = 0
    for item in reversed(stored):  # truncation: the newest items that fit the same tokens
        if used + item.cost > budget:
            break
        used += item.cost
        window.add(item.seq)
    lines = summary.splitlines()
    heading, open_lines = "", []
    for line in lines:
        if line.endswith(":") and not line.startswith("-"):
            heading = line
        elif _OPEN_HEADING.search(heading):
            open_lines.append(line)
    kept = kept_forgotten = forgotten = truncated = presented_open = 0
    for task in session.tasks:
        seqs = {item.seq for item in stored if item.call_id in task.call_ids}
        raw = seqs <= active
        in_summary = any(_holds(line, task) for line in lines)
        kept += raw or in_summary
        if not raw:
            forgotten += 1
            kept_forgotten += in_summary
        truncated += seqs <= window
        presented_open += any(task.subject.lower() in line.lower() for line in open_lines)
    reports = await memory.reports()
    return {
        "session": session.name,
        "tasks": len(session.tasks),
        "compactions": len(reports),
        "summary_errors": sum(1 for r in reports if r.summary_error),
        "tokens": budget,
        "kept": kept,
        "forgotten": forgotten,
        "forgotten_kept": kept_forgotten,
        "truncation_kept": truncated,
        "presented_open": presented_open,
    }


async def run(
    sessions: list[Session], limits: list[MemoryLimits], store: MemoryStore
) -> list[dict[str, Any]]:
    """Every session at every pair of limits."""
    rows = []
    for limit in limits:
        for session in sessions:
            row = await measure(session, store, limit)
            row["limits"] = f"{limit.hard}/{limit.target}"
            rows.append(row)
    return rows


def summarizer_time(items: int = 1000, repeats: int = 5) -> dict[str, float]:
    """Seconds the extractive summarizer takes to fold ``items`` items (median of
    ``repeats``), with exact token counts and a 700-token room."""
    from datetime import UTC, datetime

    from memstore.core.carried_items import derived_text
    from memstore.core.statements import score
    from memstore.core.summarizers import ExtractiveSummarizer
    from memstore.core.values import MemoryItem, MemoryKind, MemoryRole

    kinds = {
        "user": (MemoryRole.USER, MemoryKind.USER_MESSAGE),
        "assistant": (MemoryRole.ASSISTANT, MemoryKind.ASSISTANT_MESSAGE),
        "function_call": (MemoryRole.ASSISTANT, MemoryKind.ASSISTANT_MESSAGE),
        "function_call_output": (MemoryRole.TOOL, MemoryKind.TOOL_OBSERVATION),
    }
    built: list[MemoryItem] = []
    seed = 0
    while len(built) < items:
        seed += 1
        for batch, priorities in generate(seed, 20).batches:
            for raw, priority in zip(batch, priorities, strict=True):
                role, kind = kinds[raw.get("type") or raw["role"]]
                built.append(
                    MemoryItem(
                        id=str(len(built)),
                        session_id="timing",
                        seq=len(built) + 1,
                        role=role,
                        kind=kind,
                        priority=priority,
                        content=derived_text(raw),
                        timestamp=datetime.now(UTC),
                        estimated_tokens=0,
                        payload=raw,
                        call_id=raw.get("call_id"),
                    )
                )
    built = built[:items]
    count = TiktokenEstimator().count
    summarizer = ExtractiveSummarizer()
    times = []
    for _ in range(repeats):
        score.cache_clear()  # each run from cold: no sentence scored by an earlier one
        began = time.perf_counter()
        summarizer.summarize(None, built, max_tokens=700, count_tokens=count)
        times.append(time.perf_counter() - began)
    return {"items": items, "median_s": sorted(times)[len(times) // 2], "min_s": min(times)}


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals per pair of limits."""
    out: dict[str, Any] = {}
    for limits in dict.fromkeys(row["limits"] for row in rows):
        group = [row for row in rows if row["limits"] == limits]
        total = {
            key: sum(row[key] for row in group)
            for key in group[0]
            if isinstance(group[0][key], int)
        }
        out[limits] = {
            **total,
            "forgotten_kept_share": total["forgotten_kept"] / max(total["forgotten"], 1),
            "over_truncation": total["kept"] / total["truncation_kept"]
            if total["truncation_kept"]
            else None,
        }
    return out


def print_report(rows: list[dict[str, Any]], timing: dict[str, float]) -> None:
    print(f"\nTool-using agent sessions (generated, {len(KINDS)} kinds of task, varied wording)")
    print(
        f"{'session':<12}{'limits':>10}{'tasks':>6}{'compactions':>12}{'kept':>6}"
        f"{'forgotten':>10}{'of those kept':>14}{'truncation':>11}{'open':>6}{'errors':>7}"
    )
    for row in rows:
        print(
            f"{row['session']:<12}{row['limits']:>10}{row['tasks']:>6}{row['compactions']:>12}"
            f"{row['kept']:>6}{row['forgotten']:>10}{row['forgotten_kept']:>14}"
            f"{row['truncation_kept']:>11}{row['presented_open']:>6}{row['summary_errors']:>7}"
        )
    for limits, total in report(rows).items():
        ratio = total["over_truncation"]
        print(
            f"limits {limits}: {total['forgotten_kept']} of {total['forgotten']} forgotten answers "
            f"still in the input ({total['forgotten_kept_share']:.0%}); answers kept "
            f"{total['kept']} vs truncation's {total['truncation_kept']} at the same tokens ("
            + ("n/a" if ratio is None else f"{ratio:.1f}x")
            + f"); answered questions presented as open: {total['presented_open']}; "
            f"summary errors: {total['summary_errors']}"
        )
    print(
        f"summarizer time for a {timing['items']}-item compaction: "
        f"{timing['median_s'] * 1000:.1f} ms (median of 5)"
    )


async def main_async(seeds: int, tasks: int) -> list[dict[str, Any]]:
    import tempfile
    from pathlib import Path

    sessions = [generate(seed, tasks) for seed in range(1, seeds + 1)]
    limits = [MemoryLimits(hard=1200, target=800, keep_recent=4), MemoryLimits()]
    with tempfile.TemporaryDirectory() as scratch:
        async with MemoryStore.open(Path(scratch) / "agents.db") as store:
            return await run(sessions, limits, store)


if __name__ == "__main__":
    import asyncio
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rows = asyncio.run(main_async(count, 40))
    print_report(rows, summarizer_time())
