"""What a store does to a session's recorded history as a whole: export it, import it, prune
or purge it, and find the long-term entries consolidated from it.

:class:`StoreHistory` is a part :class:`~memstore.memory.store.MemoryStore` holds; the store
shows its methods as its own.
Deleting history is an explicit operator action; the entries consolidation derived from it are
the user's long-term memory now, so they stay unless ``with_derived`` deletes them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memstore.config import DEFAULT_MAX_ITEM_BYTES
from memstore.core.validation import validate_flag, validate_session_id
from memstore.errors import ValidationError

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.ltm_entries import LongTermEntry
    from memstore.db import Database
    from memstore.db.transfer import Rows
    from memstore.memory.embedding import EmbeddingService
    from memstore.memory.long_term import LongTermMemory


@dataclass(frozen=True)
class CheckedExport:
    """An export's records, checked as an import checks them, ready to insert.

    Attributes:
        session_id: The exported session.
        rows: The rows to insert, by table.
        max_item_bytes: The largest item they were checked to accept.
    """

    session_id: str
    rows: Rows
    max_item_bytes: int


def check_export(
    records: Iterable[Mapping[str, Any]], *, max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES
) -> CheckedExport:
    """Check an export's records before any database is opened (pure: no I/O).

    Raises:
        ValidationError: naming the record and field that is wrong.
    """
    from memstore.db.transfer import parse_records

    session_id, rows = parse_records(records, max_item_bytes)
    return CheckedExport(session_id, rows, max_item_bytes)


class StoreHistory:
    """Export, import, prune, purge, and the entries derived from a session.

    Args:
        database: The store's database.
        settings: Store-wide settings (the largest item an import may hold).
        embedding: The store's embedder (``None``: none): an import is embedded after.
        long_term: The store's long-term memory (its clock dates what a deletion erases).
    """

    def __init__(
        self,
        database: Database,
        settings: Settings,
        embedding: EmbeddingService | None,
        long_term: Callable[[], LongTermMemory],
    ) -> None:
        self._db = database
        self._settings = settings
        self._embedding = embedding
        self._long_term = long_term

    async def export_session(self, session_id: str) -> list[dict[str, Any]]:
        """The session's rows as JSON-ready records (write one per line for JSON Lines).

        Raises:
            SessionNotFoundError: no such session.
        """
        from memstore.db import transfer

        return await transfer.export_records(self._db, validate_session_id(session_id))

    async def import_session(self, records: Iterable[Mapping[str, Any]] | CheckedExport) -> str:
        """Insert an exported session, in one transaction; return its id.

        Args:
            records: The export's records, or what :func:`check_export` made of them (checked
                before any database was opened: a failed check creates no file).

        Raises:
            ValidationError: a malformed record, or a ledger ``memstore check`` would refuse
                (:mod:`memstore.core.import_checks`), naming record and field (nothing written);
                records checked against a larger item size than this store allows.
            ConflictError: a session with that id exists here already (nothing written).
        """
        from memstore.db import transfer

        limit = self._settings.max_item_bytes
        if not isinstance(records, CheckedExport):
            checked = check_export(records, max_item_bytes=limit)
        elif records.max_item_bytes > limit:
            raise ValidationError(
                "records",
                f"checked for items of {records.max_item_bytes} bytes; this store takes {limit}",
            )
        else:
            checked = records
        await transfer.insert_records(self._db, checked.session_id, checked.rows)
        if self._embedding is not None:  # a bulk of new rows: embed them in the background
            self._embedding.start()
        return checked.session_id

    async def prune(
        self,
        session_id: str,
        *,
        before_version: int | None = None,
        before: datetime | None = None,
        with_derived: bool = False,
    ) -> tuple[int, int]:
        """Delete compactions committed before a version (or time) and the items they removed.

        The working memory is untouched and the remaining history still replays and verifies.
        Long-term entries consolidated from the deleted items stay unless ``with_derived``
        (:meth:`derived_entries` lists them), which deletes them in the same transaction and
        erases the text and source of their history's versions consolidated from those items.

        Returns:
            (compactions deleted, items deleted).

        Raises:
            ValidationError: a bad ``before`` or ``with_derived``.
        """
        from memstore.db import prune as pruning

        sid = validate_session_id(session_id)
        return await pruning.prune(
            self._db,
            sid,
            before_version=before_version,
            before_time=before,
            with_derived=validate_flag("with_derived", with_derived),
            now=self._long_term().clock(),
        )

    async def purge(
        self, session_id: str, *, with_forks: bool = False, with_derived: bool = False
    ) -> int:
        """Delete a session and its whole history; return how many items were deleted.

        Long-term entries consolidated from it (or from a fork deleted with it) stay unless
        ``with_derived``, which deletes them in the same transaction and erases the text and
        source of every history version consolidated from a deleted session.

        Raises:
            ForkedHistoryError: forks hold copies of its history (nothing deleted), unless
                ``with_forks`` deletes them too.
            ValidationError: ``with_forks`` or ``with_derived`` is not a bool.
        """
        from memstore.db import prune as pruning

        sid = validate_session_id(session_id)
        return await pruning.purge(
            self._db,
            sid,
            with_forks=validate_flag("with_forks", with_forks),
            with_derived=validate_flag("with_derived", with_derived),
            now=self._long_term().clock(),
        )

    async def derived_entries(
        self, session_id: str, *, deleted_items_only: bool = False
    ) -> list[LongTermEntry]:
        """Live long-term entries whose current version consolidation derived from the session
        (``deleted_items_only``: from items of it that no longer exist, after a prune)."""
        from memstore.db import consolidation_runs as runs

        sid, now = validate_session_id(session_id), self._long_term().clock()
        return await runs.derived_entries(self._db, sid, now, deleted_items_only)
