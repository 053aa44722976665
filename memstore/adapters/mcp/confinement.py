"""What a server pinned with ``--scope`` may touch: long-term entries of its scope, and the
sessions of its scope or of none.

A session records its scope once, at its first append; a session recorded in no scope (made
before sessions had scopes, or without one) belongs to nobody, so a pinned server serves it as
an unpinned one does: existing pinned deployments keep their sessions. A session of another
scope is refused as a scope is, with a :class:`~memstore.errors.ValidationError` naming
``session_id``, before anything is written. Sessions a pinned server creates are created in its
scope.
"""

from __future__ import annotations

from typing import Any

from memstore import MemoryStore, SessionMemory
from memstore.core.ltm_entries import DEFAULT_SCOPE, validate_scope
from memstore.core.records import SessionInfo
from memstore.core.validation import validate_session_id
from memstore.errors import SessionNotFoundError, ValidationError


class Confinement:
    """The pinned scope of a server over one store (``None``: unpinned, everything goes).

    Args:
        store: The open store.
        scope: The long-term scope the server is pinned to (``None``: any scope).
    """

    def __init__(self, store: MemoryStore, scope: str | None) -> None:
        self.store = store
        self.pinned = None if scope is None else validate_scope(scope)

    # -- long-term scopes ----------------------------------------------------------------

    def scope_schema(self, *, listing: bool = False) -> dict[str, Any]:
        """The ``scope`` argument: free, or the pinned scope only."""
        if self.pinned is not None:
            return {
                "type": "string",
                "enum": [self.pinned],
                "description": f"The long-term scope; this server serves {self.pinned} only.",
            }
        default = "every scope" if listing else f"'{DEFAULT_SCOPE}'"
        return {
            "type": "string",
            "description": f"'global' or 'kind:name', e.g. user:alice (default: {default}).",
        }

    def scope(self, given: str | None) -> str:
        """The scope one entry is read or written in: ``given``, else the pinned scope, else
        ``global``."""
        return self.confined(given) if given is not None else self.pinned or DEFAULT_SCOPE

    def confined(self, given: object, field: str = "scope") -> str:
        """``given`` as a scope this server may touch.

        Raises:
            ValidationError: naming ``field``: not a scope, or not the pinned scope.
        """
        scope = validate_scope(given, field)
        if self.pinned is not None and scope != self.pinned:
            raise ValidationError(
                field, f"this server is confined to scope {self.pinned!r}, not {scope!r}"
            )
        return scope

    # -- sessions ------------------------------------------------------------------------

    def serves(self, scope: str | None) -> bool:
        """Whether a session recorded in ``scope`` is this server's to touch."""
        return self.pinned is None or scope is None or scope == self.pinned

    def check_session(self, session_id: str, scope: str | None) -> None:
        """Refuse a session recorded in ``scope`` unless this server serves it.

        Raises:
            ValidationError: naming ``session_id``: the session is of another scope.
        """
        if not self.serves(scope):
            # Its scope is not named: a pinned client learns nothing of other scopes.
            raise ValidationError(
                "session_id",
                f"this server is confined to scope {self.pinned!r}; session "
                f"{session_id!r} belongs to another scope",
            )

    async def session_info(self, session_id: object) -> SessionInfo | None:
        """The session's header, ``None`` if it does not exist.

        Raises:
            ValidationError: a bad id, or a session of another scope (``session_id``).
        """
        chosen = validate_session_id(session_id)
        try:
            info = await self.store.session_info(chosen)
        except SessionNotFoundError:
            return None
        self.check_session(chosen, info.scope)
        return info

    async def attach(
        self, session_id: str, *, create: bool = False, **options: Any
    ) -> SessionMemory:
        """``store.attach``, refused for a session of another scope (nothing is written); a
        session it creates (``create``) is created in the pinned scope.

        Raises:
            ValidationError: a session of another scope (``session_id``).
            SessionNotFoundError: no such session, and not ``create``.
        """
        info = await self.session_info(session_id)  # refuses another scope's, unnamed
        scope = self.pinned if info is None else info.scope
        return await self.store.attach(session_id, create=create, scope=scope, **options)
