"""Tool-using agent sessions, generated for :mod:`agent_sessions` to measure.

Each session is a run of tasks an assistant does with tools, stored as Responses items the
way an Agents SDK session stores them (``add_items``: the user's message, the call, its
output, the reply). Eight kinds of task (orders, flights, weather, stock, support tickets,
calendar, exchange rates, the staff directory), each with several tools, argument shapes,
result formats (JSON objects, nested JSON, key-value text, prose, long logs) and phrasings of
the question and of the reply, drawn by a seeded random generator; between tasks come
thanks, small talk, LOW-priority health checks, statements of the user's plans and the odd
question nobody answers. Nothing is shaped after what the summarizer looks for: the
wording pools were written as a support agent's traffic, and every value is random.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

from memstore import Priority


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
