"""A write of many rows at once leaves an index that searches use at once, on both backends.

``memstore import`` (a process of its own) of a few thousand items, and a fork of a session
that long: right after, ``memstore check`` shows no item missing from the search index (the
writer between writes indexes 500 items a second, and its last catch-up when the importing
process closes only 500 more), and a search finds the newest imported item through it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clients import memstore_process

from memstore import MemoryStore
from memstore.db.audit import index_lag, index_problems

#: Several times what the writer indexes per catch-up (search_index.BULK), so a lag left
#: behind cannot be hidden by the one catch-up a closing store runs.
ITEMS = 3_000


def session_records(session_id: str, count: int) -> list[dict[str, Any]]:
    """An export of a session of ``count`` active items, counted in words."""
    now = datetime.now(UTC).isoformat()
    contents = [
        f"entry {seq} records the reading of gauge {seq} as nominal" for seq in range(1, count + 1)
    ]
    contents[-1] = "the last entry mentions the quartzite canary"
    tokens = [len(content.split()) for content in contents]
    records: list[dict[str, Any]] = [{
        "type": "session", "format": 1, "id": session_id, "version": count, "estimator": "words",
        "last_seq": count, "active_items": count, "active_tokens": sum(tokens) + 4 * count,
        "user_turns": 0, "compaction_count": 0, "summary": None, "summary_tokens": None,
        "hard_limit": 10**9, "target_limit": 10**8, "keep_recent": 4, "lease_token": 0,
        "created_at": now, "updated_at": now,
    }]  # fmt: skip
    for seq in range(1, count + 1):
        records.append({
            "type": "item", "id": str(uuid.uuid4()), "session_id": session_id, "seq": seq,
            "role": "tool", "kind": "TOOL_OBSERVATION", "priority": 50,
            "content": contents[seq - 1], "created_at": now, "estimated_tokens": tokens[seq - 1],
            "added_version": seq, "version": 1,
        })  # fmt: skip
    return records


def test_an_imported_session_is_indexed_when_the_import_returns(
    backend_url: str, tmp_path: Path
) -> None:
    exported = tmp_path / "big.jsonl"
    exported.write_text("".join(json.dumps(r) + "\n" for r in session_records("big", ITEMS)))
    imported = memstore_process(backend_url, "import", str(exported))
    assert imported.returncode == 0, imported.stderr
    checked = memstore_process(backend_url, "check", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] and report["index_lag"] == 0, report


async def test_a_fork_indexes_its_copies(backend_url: str) -> None:
    async with MemoryStore.open(backend_url) as store:
        await store.import_session(session_records("big", ITEMS))
        await store.fork("big", "copy")
        assert await index_lag(store.database) == 0
        assert await index_problems(store.database) == []
        hits = await store.search("quartzite canary", sessions=["copy"])
        assert [hit.seq for hit in hits] == [ITEMS]
