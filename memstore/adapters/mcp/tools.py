"""The tools ``memstore mcp`` offers: what a model is told, and the public API call each makes.

Each is a :class:`memstore.model_side.agent_tools.Tool` (a name, a description, the JSON schema of
its arguments, a coroutine): the tools that write (``remember``, ``forget``, ``append_to_session``)
record as ``DECISION`` and a read-only server refuses them. Arguments are named as the API names
them, so an error memstore raises (``role: unknown role 'robot'``) names the argument the model
sent. Every write's answer is made from what the write returned: a write that committed is never
reported as failed by a read after it.

Long-term tools work in one scope: the ``scope`` argument (``global`` by default), or the scope
the server is pinned to with ``--scope``, which is then the only one they may name; session
tools then serve that scope's sessions and those of no scope only, and create sessions in it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memstore import MemoryStore, SessionOptions
from memstore.adapters.mcp.confinement import Confinement
from memstore.adapters.mcp.render import (
    as_json,
    counted,
    memories_view,
    reports_view,
    search_view,
    session_view,
)
from memstore.agent import Tool
from memstore.core.embedder import SEARCH_MODES, resolve_mode
from memstore.core.ltm_entries import DEFAULT_SCOPE
from memstore.core.records import CompactionReport
from memstore.core.tokens import TokenEstimator
from memstore.core.validation import validate_session_id
from memstore.core.values import MemoryKind, MemoryRole, Priority

SESSION_ID = {
    "type": "string",
    "description": "The session id: 1-128 letters, digits and ._:@- (e.g. incident-42).",
}
KEY = {"type": "string", "description": "A short key, e.g. test_framework."}
EXPECTED_VERSION = {
    "type": "integer",
    "minimum": 0,
    "description": "Compare-and-set: write only if the entry is at this version (0: only if "
    "it does not exist yet). Omit to write unconditionally.",
}
#: Entries one listing shows: the model reads every line of the answer, so a scope of
#: thousands is cut here and the answer says how many more there are.
MAX_LISTED_ENTRIES = 200
#: Tools that only add: every other writing tool may replace or delete what is there.
ADDITIVE_TOOLS = frozenset({"append_to_session"})


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


class McpTools:
    """The tools over one store.

    Args:
        store: The open store.
        scope: The long-term scope the server is pinned to (``None``: any scope); sessions of
            another scope are then refused (:mod:`memstore.adapters.mcp.confinement`).
        estimator: Counts the tokens of sessions this server creates (an existing session
            keeps the estimator it was counted with).
    """

    def __init__(
        self, store: MemoryStore, *, scope: str | None = None, estimator: TokenEstimator | None
    ) -> None:
        self.store = store
        #: What the server may touch (every scope when not pinned).
        self.confinement = Confinement(store, scope)
        self.pinned = self.confinement.pinned
        self.estimator = estimator

    # -- long-term memory ----------------------------------------------------------------

    async def remember(
        self,
        key: str,
        value: Any,
        scope: str | None = None,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> str:
        """``store.ltm.set``."""
        where = self.confinement.scope(scope)
        entry = await self.store.ltm.set(
            key, value, scope=where, expected_version=expected_version, ttl=ttl
        )
        expiry = "" if entry.expires_at is None else f", expires {entry.expires_at.isoformat()}"
        return f"Saved in scope {entry.scope} at version {entry.version}{expiry}."

    async def recall(self, key: str, scope: str | None = None) -> str:
        """``store.ltm.get``: the entry as a fenced memories block."""
        where = self.confinement.scope(scope)
        entry = await self.store.ltm.get(key, scope=where)
        if entry is None:
            return (
                f"No live entry under that key in scope {where} (its version is 0: remember "
                "with expected_version=0 creates it only if it is still absent)."
            )
        return memories_view([entry])

    async def forget(
        self, key: str, scope: str | None = None, expected_version: int | None = None
    ) -> str:
        """``store.ltm.delete``."""
        where = self.confinement.scope(scope)
        if await self.store.ltm.delete(key, scope=where, expected_version=expected_version):
            return f"Deleted from scope {where}; its history keeps the deletion."
        return f"No live entry under that key in scope {where}; nothing deleted."

    async def list_memories(self, scope: str | None = None, prefix: str | None = None) -> str:
        """``store.ltm.list``: live entries by scope then key, as a fenced memories block."""
        where = self.pinned if scope is None else self.confinement.confined(scope)
        entries = await self.store.ltm.list(scope=where, prefix=prefix)
        shown = entries[:MAX_LISTED_ENTRIES]
        return memories_view(shown, more=len(entries) - len(shown))

    async def search(
        self,
        query: str,
        session_id: str | None = None,
        scope: str | None = None,
        limit: int = 10,
        mode: str | None = None,
    ) -> str:
        """``store.search``, confined. As in the API, each argument adds what it selects:
        ``session_id`` that session's history, ``scope`` that scope's long-term entries and
        the history of the sessions recorded in it; neither, everything this server serves
        (a pinned server: its scope's entries, the history of its scope's sessions and of
        unscoped ones). A session of another scope is refused. With an embedder it ranks hybrid."""
        if session_id is not None and self.pinned is not None:
            # Refuses another scope's session, without naming its scope.
            await self.confinement.session_info(session_id)
        hits = await self.store.search(
            query,
            sessions=None if session_id is None else [validate_session_id(session_id)],
            scopes=None if scope is None else [self.confinement.confined(scope)],
            limit=limit,
            mode=resolve_mode(mode, self.store.embedding is not None),
            confined_to=self.pinned,
        )
        return search_view(hits)

    # -- working memory ------------------------------------------------------------------

    async def append_to_session(
        self,
        session_id: str,
        content: str,
        role: str,
        kind: str | None = None,
        priority: str = "NORMAL",
        idempotency_key: str | None = None,
    ) -> str:
        """``memory.add``: append one item; compaction runs as in the API."""
        # A new session is created in the pinned scope: its compactions consolidate there,
        # its recall spans the scope's sessions.
        memory = await self.confinement.attach(session_id, create=True, estimator=self.estimator)
        compactions: list[CompactionReport] = []
        memory.add_observer(compactions.append)
        before = await memory.snapshot() if idempotency_key else None
        item = await memory.add(
            role, content, kind=kind, priority=priority, idempotency_key=idempotency_key
        )
        # Stored from here on: the answer is made from what add() returned, nothing is read.
        if before is not None and item.version <= before.version:
            return (
                f"Already stored as item #{item.seq} (idempotency_key was used before); "
                "nothing appended."
            )
        said = [
            f"Appended item #{item.seq} to session {item.session_id}: {item.kind.value}, "
            f"{item.priority.name}, {counted(item.estimated_tokens, 'token')}."
        ]
        said += [
            f"Compaction #{r.compaction_count} ran: {r.before_tokens} -> {r.after_tokens} "
            f"tokens ({r.items_dropped} dropped, {r.items_summarized} summarized, "
            f"{r.items_evicted} evicted)."
            for r in compactions
        ]
        return " ".join(said)

    async def build_model_input(
        self, session_id: str, scopes: list[str] | None = None, recall: str | None = None
    ) -> str:
        """``memory.build_model_input(recall=...)``: the Responses API input list, as JSON.
        A session that does not exist yet gets the input a new session of the first scope
        would start with (``store.preview``); nothing is written."""
        if scopes is None:
            scopes = [] if self.pinned is None else [self.pinned]
        chosen = [self.confinement.confined(scope, "scopes") for scope in scopes]
        await self.confinement.session_info(session_id)  # refuses a session of another scope
        memory = await self.store.preview(session_id, chosen, estimator=self.estimator)
        return as_json(await memory.build_model_input(recall=recall))

    async def show_session(self, session_id: str) -> str:
        """The session's header, summary and active items."""
        memory = await self.confinement.attach(session_id)
        snapshot = await memory.require()
        info = await self.store.session_info(session_id)
        return session_view(info, snapshot.summary, snapshot.items)

    async def compaction_reports(self, session_id: str) -> str:
        """``memory.reports``: every compaction report, oldest first."""
        return reports_view(await (await self.confinement.attach(session_id)).reports())

    async def consolidate(self, session_id: str, dry_run: bool = False) -> str:
        """``memory.consolidate``: distil the session into long-term entries of its scope
        (a session that recorded none goes to the pinned scope); the run's report as JSON."""
        info = await self.store.session_info(session_id)
        self.confinement.check_session(info.id, info.scope)
        scope = self.confinement.confined(info.scope or self.pinned or DEFAULT_SCOPE)
        # Counted as recorded; in the scope chosen here, which a session of none lacks.
        recorded = SessionOptions(consolidate=False).of_record(info)
        memory = self.store.session(session_id, options=replace(recorded, scope=scope))
        report = await memory.consolidate(dry_run=bool(dry_run))
        return as_json(None if report is None else report.to_dict())

    # -- the list ------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """Every tool, in the order a client lists them."""
        scope = {"scope": self.confinement.scope_schema()}
        value = {
            "type": ["string", "number", "integer", "boolean", "array", "object"],
            "description": "Any JSON value except null: a sentence, a number, a list, an object.",
        }
        ttl = {"type": "number", "exclusiveMinimum": 0, "description": "Expire after seconds."}
        write = MemoryKind.DECISION
        return [
            Tool(
                "remember",
                "Save a lasting fact or preference in long-term memory: it outlives sessions "
                "and is shared by every agent using this store. Replaces the key's value.",
                _object(
                    {"key": KEY, "value": value, **scope, "expected_version": EXPECTED_VERSION}
                    | {"ttl": ttl},
                    "key",
                    "value",
                ),
                self.remember,
                record_as=write,
            ),
            Tool(
                "recall",
                "Read one long-term memory by key, with its version.",
                _object({"key": KEY, **scope}, "key"),
                self.recall,
            ),
            Tool(
                "forget",
                "Delete one long-term memory (its history keeps the deletion).",
                _object({"key": KEY, **scope, "expected_version": EXPECTED_VERSION}, "key"),
                self.forget,
                record_as=write,
            ),
            Tool(
                "list_memories",
                "List live long-term memories, by scope then key, with their versions.",
                _object(
                    {
                        "scope": self.confinement.scope_schema(listing=True),
                        "prefix": {"type": "string", "description": "Only keys starting so."},
                    }
                ),
                self.list_memories,
            ),
            Tool(
                "search",
                "Search everything ever stored for words: every session's items (also those "
                "compaction removed, with their fate) and summaries, and long-term memories. "
                "session_id and scope each add what they select. Best match first.",
                _object(
                    {
                        "query": {"type": "string", "description": "Words to look for."},
                        "session_id": SESSION_ID
                        | {
                            "description": "This session's history (and no memories unless "
                            "scope is given)."
                        },
                        "scope": self.confinement.scope_schema()
                        | {
                            "description": "This scope's memories and the history of its "
                            "sessions" + ("." if self.pinned is None else f" (only {self.pinned}).")
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 1000,
                            "description": "Hits to return at most (10).",
                        },
                        "mode": {
                            "type": "string",
                            "enum": list(SEARCH_MODES),
                            "description": "Rank by words, by meaning or both (hybrid: the "
                            "default when the server has an embedder).",
                        },
                    },
                    "query",
                ),
                self.search,
            ),
            Tool(
                "append_to_session",
                "Append a message, tool observation or decision to a session's working "
                "memory (created by its first append). Memory compacts itself past its limit.",
                _object(
                    {
                        "session_id": SESSION_ID,
                        "content": {"type": "string", "description": "The text to remember."},
                        "role": {"type": "string", "enum": [r.value for r in MemoryRole]},
                        "kind": {
                            "type": "string",
                            "enum": [k.value for k in MemoryKind],
                            "description": "Default from the role: tool -> TOOL_OBSERVATION, "
                            "developer -> DECISION.",
                        },
                        "priority": {
                            "type": "string",
                            "enum": [p.name for p in Priority],
                            "description": "How readily compaction may drop it (NORMAL).",
                        },
                        "idempotency_key": {
                            "type": "string",
                            "description": "Makes a retried append safe: the same key never "
                            "appends twice.",
                        },
                    },
                    "session_id",
                    "content",
                    "role",
                ),
                self.append_to_session,
                record_as=write,
            ),
            Tool(
                "build_model_input",
                "The session's bounded model input (Responses API input items, oldest first), "
                "with long-term memories of the given scopes. For a session that does not "
                "exist yet: the input a new session of the first scope would start with "
                "(its memories, and with recall what its other sessions said).",
                _object(
                    {
                        "session_id": SESSION_ID,
                        "scopes": {
                            "type": "array",
                            "items": self.confinement.scope_schema(),
                            "description": "Scopes whose long-term entries are included "
                            "as Relevant memories; the first is the scope of a session that "
                            "records none, whose recall then spans that scope's sessions "
                            f"(default: {self.pinned or 'none'}).",
                        },
                        "recall": {
                            "type": "string",
                            "description": "Recall for this query: "
                            "forgotten passages (a scoped session's: its scope's "
                            "sessions too) that match it.",
                        },
                    },
                    "session_id",
                ),
                self.build_model_input,
            ),
            Tool(
                "show_session",
                "A session's totals and limits, its summary and its active items.",
                _object({"session_id": SESSION_ID}, "session_id"),
                self.show_session,
            ),
            Tool(
                "consolidate",
                "Distil what a session said (facts, preferences, decisions) into long-term "
                "memories of its scope, each naming its source; facts already known, and "
                "memories a person set, are left alone. Returns what it wrote and skipped.",
                _object(
                    {
                        "session_id": SESSION_ID,
                        "dry_run": {
                            "type": "boolean",
                            "description": "Only report what it would write.",
                        },
                    },
                    "session_id",
                ),
                self.consolidate,
                record_as=write,
            ),
            Tool(
                "compaction_reports",
                "Every compaction of a session, oldest first: tokens before and after, what "
                "was dropped, summarized or evicted, and any summarizer error.",
                _object({"session_id": SESSION_ID}, "session_id"),
                self.compaction_reports,
            ),
        ]
