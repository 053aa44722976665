"""A pytest plugin that runs the OpenAI Agents SDK's own session tests against MemstoreSession.

Loaded with ``-p agents_sdk_shim`` into a pytest run over the SDK's source package
(``test_agents_sdk_suite.py`` fetches it and runs it). Before the SDK's test modules are
imported it puts :func:`SQLiteSession` in place of the SDK's ``SQLiteSession``, so every test
that builds one gets a :class:`~memstore.openai_agents.MemstoreSession` on a real SQLite file,
with limits so large that nothing compacts. The tests' assertions are not touched.

Two things differ from ``SQLiteSession`` on purpose, and the shim bridges them:

* ``SQLiteSession(session_id)`` with no path is an in-memory database; here it is a fresh file
  in a temporary folder (a memstore store is shared by every event loop of the process, and
  the SDK's ``run_sync`` tests use one loop per thread).
* ``SQLiteSession`` creates its tables in its constructor; a memstore file is created (its
  migrations run, about a second) on first use. Some SDK tests give a whole run two seconds,
  so the shim creates the file when the test builds the session, as ``SQLiteSession`` does.
* ``SQLiteSession.close()`` is synchronous; ``MemstoreSession.close()`` must be awaited (it
  finishes queued writes first). The tests call ``session.close()`` without awaiting, so the
  shim's ``close`` releases the database at once, as dropping the session would.

A test is skipped only by name, with its reason (:data:`SKIPPED`): the tests of
``SQLiteSession``'s internals (its tables, connections and locks), and documented deliberate
differences.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import agents
import agents.memory
import agents.memory.sqlite_session
import pytest

from memstore import MemoryLimits, MemoryStore, SessionOptions, WordEstimator
from memstore.openai_agents import MemstoreSession

#: Limits no test of the SDK comes near: nothing is compacted, so what the SDK stored is what
#: it reads back.
NO_COMPACTION = MemoryLimits(hard=10_000_000, target=9_000_000, keep_recent=4)

_INTERNALS = "tests SQLiteSession's internals (its connections, tables or locks), not the protocol"
#: Test name (without parameters) -> why it is skipped.
SKIPPED: dict[str, str] = {
    "test_sqlite_session_close_closes_worker_thread_connections": _INTERNALS,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _INTERNALS,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _INTERNALS,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _INTERNALS,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _INTERNALS,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _INTERNALS,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _INTERNALS,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _INTERNALS,
    "test_sqlite_session_file_lock_is_shared_across_instances": _INTERNALS,
    "test_sqlite_session_failed_add_items_releases_write_lock": _INTERNALS,
    "test_sqlite_session_failed_clear_session_rolls_back": _INTERNALS,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _INTERNALS,
    "test_sqlite_session_rollback_failure_evicts_connection": _INTERNALS,
    "test_sqlite_session_close_retries_quarantined_connection": _INTERNALS,
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _INTERNALS,
    "test_session_limit_drops_unmatched_history_function_call_output": (
        "a deliberate difference: get_items(limit=N) never returns an output whose call the "
        "cut left out (the Responses API refuses it); SQLiteSession returns it and leaves "
        "the Runner to drop it"
    ),
    "test_handoff_resume_after_cancelled_compaction_commits": (
        "patches SQLiteSession._insert_items, an internal of SQLiteSession"
    ),
    "test_resumed_committed_append_refreshes_compaction_input": (
        "the same deliberate difference: the SDK reconciles a lost append by comparing "
        "get_items(limit=N) with the exact newest N items, and memstore's cut leaves out "
        "the call/output units it separates"
    ),
    "test_sqlite_session_closed_rejects_empty_add_items": (
        "expects SQLiteSession's own message ('SQLiteSession is closed'); a closed "
        "MemstoreSession refuses with StorageError ('the session is closed')"
    ),
}

_folders: list[str] = []


class SQLiteSession(MemstoreSession):
    """A MemstoreSession where the SDK's test asked for a ``SQLiteSession`` (tests subclass
    it, so it is a class), with ``SQLiteSession``'s synchronous ``close``."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        if str(db_path) == ":memory:":
            folder = tempfile.mkdtemp(prefix="memstore-sdk-")
            _folders.append(folder)
            db_path = Path(folder) / "session.db"
        _create(Path(db_path))
        options = SessionOptions(limits=NO_COMPACTION, estimator=WordEstimator())
        self._open_on_use(session_id, db_path, session_settings, options)

    def close(self) -> None:  # type: ignore[override]
        self._release()


def _create(path: Path) -> None:
    """Create the database at ``path`` now (in a thread: the caller may be inside a loop)."""

    async def create() -> None:
        async with MemoryStore.open(path):
            pass

    thread = threading.Thread(target=asyncio.run, args=(create(),))
    thread.start()
    thread.join()


# In place before pytest imports the SDK's test modules (they import the name at the top).
agents.SQLiteSession = SQLiteSession  # type: ignore[attr-defined,misc,assignment]
agents.memory.SQLiteSession = SQLiteSession  # type: ignore[attr-defined,misc,assignment]
agents.memory.sqlite_session.SQLiteSession = SQLiteSession  # type: ignore[misc,assignment]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        if name in SKIPPED:
            item.add_marker(pytest.mark.skip(reason=f"memstore: {SKIPPED[name]}"))


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _folders:
        shutil.rmtree(folder, ignore_errors=True)
