"""The options of the handle a model-input preview reads through (``store.preview``, which
``memstore input`` and the MCP ``build_model_input`` tool use): an existing session as it was
recorded, or one that does not exist yet as a new session of a scope would start.

A scope means one thing wherever it is given: its long-term entries (the "Relevant memories"
message) and the sessions recorded in it (recall across them). So the first scope asked for
is the scope of a session that records none, a returning user's fresh session included: its
input holds what memstore knows of the user before its first message. A session that records
a scope keeps it, first; every other scope asked for adds its entries.

A preview writes nothing: a handle creates its session only by an append, and building the
input only reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memstore.core.ltm_entries import validate_scopes
from memstore.errors import SessionNotFoundError
from memstore.memory.options import SessionOptions

if TYPE_CHECKING:
    from memstore.core.records import SessionInfo
    from memstore.core.tokens import TokenEstimator


def preview_options(
    session_id: str,
    info: SessionInfo | None,
    scopes: Sequence[str] = (),
    *,
    estimator: TokenEstimator | None = None,
) -> SessionOptions:
    """The options of a handle whose ``build_model_input`` is the input ``session_id`` gets
    with ``scopes``.

    Args:
        session_id: The session, existing or not.
        info: Its header (``None``: it does not exist yet).
        scopes: Long-term scopes; the first is the scope of a session that records none.
        estimator: How a session that does not exist yet would be counted (default, as
            :meth:`~memstore.MemoryStore.session`: tiktoken's o200k_base).

    Raises:
        SessionNotFoundError: the session does not exist and no scope says what it would be.
        ValidationError: a bad scope.
    """
    chosen = validate_scopes(scopes)
    options = SessionOptions(estimator=estimator, ltm_scopes=chosen, consolidate=False)
    if info is None:
        if not chosen:
            raise SessionNotFoundError(session_id)
        return replace(options, scope=chosen[0])
    # Counted as recorded, in its scope; a session of none previews the first one asked for.
    scope = info.scope or (chosen[0] if chosen else None)
    return replace(options.of_record(info), scope=scope)
