"""The resources ``memstore mcp`` offers: each session's audit, and each long-term scope.

* ``memstore://sessions/{session_id}``: everything recorded about a session, as JSON: its
  header, its summary, every item ever appended with its fate (``dropped``, ``summarized``,
  ``evicted``... or ``null`` while active) and every compaction with the summary it produced.
* ``memstore://ltm/{scope}``: the scope's live entries, as the fenced memories block that
  ``list_memories`` returns.

A server pinned with ``--scope`` offers that scope only, and the sessions recorded in it or in
no scope (:mod:`memstore.adapters.mcp.confinement`).

Both are URI templates; the listing also names the most recently updated sessions and every
scope that holds entries, so a client can offer them in a picker. Text in them is labelled as
in the model input (:mod:`memstore.adapters.mcp.render`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from memstore.adapters.mcp.render import audit_view, counted
from memstore.adapters.mcp.tools import McpTools
from memstore.core.validation import validate_session_id
from memstore.errors import ValidationError

SESSIONS = "memstore://sessions/"
SCOPES = "memstore://ltm/"
JSON = "application/json"
TEXT = "text/plain"
#: Sessions named in a listing, most recently updated first: a client shows them in a picker,
#: and every other session is still one template away.
MAX_LISTED_SESSIONS = 100


@dataclass(frozen=True)
class ResourceInfo:
    """One resource or URI template, as a client lists it."""

    uri: str
    name: str
    description: str
    mime_type: str


TEMPLATES = (
    ResourceInfo(
        SESSIONS + "{session_id}",
        "session audit",
        "Everything recorded about a session: every item ever appended with its fate, every "
        "compaction with its report and the summary it produced.",
        JSON,
    ),
    ResourceInfo(
        SCOPES + "{scope}",
        "long-term scope",
        "A long-term scope's live entries (e.g. memstore://ltm/user:alice), with versions.",
        TEXT,
    ),
)


class McpResources:
    """The resources over the tools' store and scope.

    Args:
        tools: The server's tools: their store, their pinned scope, their listing.
    """

    def __init__(self, tools: McpTools) -> None:
        self.tools = tools

    async def listed(self) -> list[ResourceInfo]:
        """The recent sessions (of the pinned scope or of none), then every scope with live
        entries (the pinned one only)."""
        store = self.tools.store
        served = [
            info for info in await store.sessions() if self.tools.confinement.serves(info.scope)
        ]
        found = [
            ResourceInfo(
                SESSIONS + quote(info.id, safe=":@"),
                f"session {info.id}",
                f"Audit of session {info.id}: {counted(info.items_total, 'item')}, "
                f"{counted(info.compaction_count, 'compaction')}.",
                JSON,
            )
            for info in served[:MAX_LISTED_SESSIONS]
        ]
        pinned = self.tools.pinned
        found += [
            ResourceInfo(
                SCOPES + quote(scope, safe=":@"),
                f"scope {scope}",
                f"Long-term scope {scope}: {counted(count, 'live entry', 'live entries')}.",
                TEXT,
            )
            for scope, count in await store.ltm.scopes()
            if pinned is None or scope == pinned
        ]
        return found

    async def read(self, uri: str) -> tuple[str, str]:
        """The text of ``uri`` and its MIME type.

        Raises:
            ValidationError: an unknown URI, a malformed id or scope, a scope outside the
                pinned one, a session of another scope.
            SessionNotFoundError: no such session.
        """
        if uri.startswith(SESSIONS):
            session_id = validate_session_id(unquote(uri.removeprefix(SESSIONS)))
            history = await self.tools.store.history(session_id)
            self.tools.confinement.check_session(session_id, history.info.scope)
            return audit_view(history), JSON
        if uri.startswith(SCOPES):
            scope = self.tools.confinement.confined(unquote(uri.removeprefix(SCOPES)))
            return await self.tools.list_memories(scope=scope), TEXT
        raise ValidationError(
            "uri",
            f"no such resource {uri[:80]!r} (known: {', '.join(t.uri for t in TEMPLATES)})",
        )
