"""Forks: ``store.fork(session, new, at=VERSION)`` on SQLite and PostgreSQL.

A fork starts with the parent's model input at that version, records its parent, and the two
never touch each other; its copied history replays, checks and prunes like any session's;
purge refuses to leave a fork holding copies of a purged history unless asked to delete it;
a search across sessions shows a passage the fork shares with its parent once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import table_counts

from memstore import (
    MemoryLimits,
    MemoryStore,
    SessionNotFoundError,
    ValidationError,
    WordEstimator,
)
from memstore.core.replay import state_at
from memstore.errors import ForkedHistoryError, SessionExistsError
from memstore.memory.session import SessionMemory
from memstore.render.input import build_input

LIMITS = MemoryLimits(hard=60, target=40, keep_recent=2)
WORKER = Path(__file__).with_name("concurrency_worker.py")


async def conversation(
    store: MemoryStore, session_id: str = "p", turns: int = 14, limits: MemoryLimits = LIMITS
) -> SessionMemory:
    """A session long enough to have compacted (a summary, forgotten items)."""
    memory = store.session(session_id, limits=limits, estimator=WordEstimator())
    await memory.add(
        "user", "My sister Ingrid moved to Trondheim last spring.", idempotency_key="k1"
    )
    await memory.add("tool", "Disk usage on volume gamma reached 91 percent.", priority="LOW")
    for i in range(turns):
        role = "user" if i % 2 else "assistant"
        await memory.add(role, f"turn {i} talks about topic number {i} only")
    return memory


async def test_a_fork_starts_with_the_parents_model_input(any_store: MemoryStore) -> None:
    parent = await conversation(any_store)
    assert await parent.reports(), "the parent compacted"
    before = await parent.build_model_input()
    info = await any_store.session_info("p")
    fork = await any_store.fork("p", "f")
    assert fork.session_id == "f"
    assert await fork.build_model_input() == before
    assert await fork.summary() == await parent.summary()
    assert [i.content for i in await fork.items()] == [i.content for i in await parent.items()]
    forked = await any_store.session_info("f")
    assert (forked.parent_id, forked.parent_version) == ("p", info.version)
    assert forked.version == info.version and forked.limits == info.limits
    assert forked.estimator == info.estimator == "words"
    assert forked.total_tokens == info.total_tokens
    assert await any_store.lease_holder("f") is None
    assert await any_store.check() == []
    # Every copied row has an id of its own: a random UUID.
    copied = (await any_store.history("f")).items
    originals = {item.id for item in (await any_store.history("p")).items}
    assert len({item.id for item in copied}) == len(copied) == len(originals)
    assert all(uuid.UUID(item.id).version == 4 for item in copied)
    assert not {item.id for item in copied} & originals


async def test_a_fork_at_a_past_version_is_the_state_replay_rebuilds(
    any_store: MemoryStore,
) -> None:
    await conversation(any_store)
    history = await any_store.history("p")
    first = history.reports[0]
    for at in (first.snapshot_version, first.committed_version, history.info.version - 1):
        fork = await any_store.fork("p", f"f{at}", at=at)
        then = state_at(history, at)
        assert [(i.seq, i.content) for i in await fork.items()] == [
            (i.seq, i.content) for i in then.items
        ]
        assert await fork.summary() == then.summary
        if at == first.committed_version:  # within the limits: the input is the state
            assert await fork.build_model_input() == build_input(then.items, then.summary)
        assert (await any_store.session_info(f"f{at}")).version == at
        # The fork's ledger is the parent's cut at `at`: replay agrees at every version.
        forked = await any_store.history(f"f{at}")
        for version in range(max(1, at - 3), at + 1):
            mine, theirs = state_at(forked, version), state_at(history, version)
            assert [(i.seq, i.content) for i in mine.items] == [
                (i.seq, i.content) for i in theirs.items
            ]
            assert mine.summary == theirs.summary
    assert await any_store.check() == []


async def test_writes_to_either_never_touch_the_other(any_store: MemoryStore) -> None:
    parent = await conversation(any_store)
    at = (await any_store.session_info("p")).version - 2
    fork = await any_store.fork("p", "f", at=at)
    parent_rows = [i.id for i in await parent.items()]
    for i in range(10):
        await fork.add("user", f"only the fork hears message {i} here")
    assert [i.id for i in await parent.items()] == parent_rows
    assert (await any_store.session_info("p")).version == at + 2
    fork_rows = [i.content for i in await fork.items()]
    for i in range(10):
        await parent.add("assistant", f"only the parent says reply {i} now")
    assert [i.content for i in await fork.items()] == fork_rows
    assert not {i.id for i in await fork.items()} & {i.id for i in await parent.items()}
    await fork.compact()
    await parent.clear()
    assert [i.content for i in await fork.items()]
    assert await any_store.check() == []


async def test_the_fork_inherits_idempotency_keys(any_store: MemoryStore) -> None:
    await conversation(any_store)
    fork = await any_store.fork("p", "f")
    version = (await any_store.session_info("f")).version
    retried = await fork.add(
        "user", "My sister Ingrid moved to Trondheim last spring.", idempotency_key="k1"
    )
    assert retried.seq == 1 and retried.session_id == "f"
    assert (await any_store.session_info("f")).version == version  # nothing appended
    fresh = await fork.add("user", "A new question for the fork.", idempotency_key="k2")
    assert fresh.seq == (await any_store.session_info("f")).items_total


async def test_bad_input_names_the_field_and_writes_nothing(any_store: MemoryStore) -> None:
    await conversation(any_store, turns=4)
    await any_store.session("other", estimator=WordEstimator()).add("user", "hello")
    counts = await table_counts(any_store)
    version = (await any_store.session_info("p")).version
    with pytest.raises(SessionNotFoundError) as missing:
        await any_store.fork("nobody", "f")
    assert missing.value.field == "session_id" and "nobody" in str(missing.value)
    with pytest.raises(SessionExistsError) as exists:
        await any_store.fork("p", "other")
    assert exists.value.field == "new_session_id" and "other" in str(exists.value)
    with pytest.raises(SessionExistsError):
        await any_store.fork("p", "p")
    for at in (0, -1, version + 1, "3", True, 2.0):
        with pytest.raises(ValidationError) as bad:
            await any_store.fork("p", "f", at=at)  # type: ignore[arg-type]
        assert bad.value.field == "at"
    for bad_id, field in (("bad/id", "session_id"), ("", "session_id")):
        with pytest.raises(ValidationError) as bad:
            await any_store.fork(bad_id, "f")
        assert bad.value.field == field
    with pytest.raises(ValidationError) as bad:
        await any_store.fork("p", "no/slash")
    assert bad.value.field == "new_session_id"
    assert await table_counts(any_store) == counts


async def test_purge_lists_forks_and_deletes_them_only_when_asked(any_store: MemoryStore) -> None:
    await conversation(any_store)
    await any_store.fork("p", "f1")
    await any_store.fork("f1", "f2")
    await any_store.fork("p", "f3", at=5)
    await any_store.session("unrelated", estimator=WordEstimator()).add("user", "keep me")
    assert await any_store.forks("p") == ["f1", "f3", "f2"]
    counts = await table_counts(any_store)
    with pytest.raises(ForkedHistoryError) as refused:
        await any_store.purge("p")
    assert refused.value.forks == ("f1", "f3", "f2")
    assert "f1" in str(refused.value) and refused.value.field == "with_forks"
    assert await table_counts(any_store) == counts
    # A fork without forks of its own purges alone.
    assert await any_store.purge("f3") > 0
    deleted = await any_store.purge("p", with_forks=True)
    assert deleted > 0
    assert [info.id for info in await any_store.sessions()] == ["unrelated"]
    remaining = await table_counts(any_store)
    assert remaining["items"] == 1 and remaining["compactions"] == 0
    assert remaining["summaries"] == 0 and remaining["input_counts"] == 0
    assert await any_store.check() == []


async def test_pruning_either_side_keeps_both_verifiable(any_store: MemoryStore) -> None:
    # Room for a summary line beside the two protected turns (the summary fits the room).
    roomy = MemoryLimits(hard=80, target=60, keep_recent=2)
    parent = await conversation(any_store, turns=30, limits=roomy)
    reports = await parent.reports()
    assert len(reports) >= 3
    fork = await any_store.fork("p", "f")
    forked_input = await fork.build_model_input()
    await any_store.prune("p", before_version=reports[-1].committed_version)
    assert await fork.build_model_input() == forked_input
    assert len(await fork.forgotten_items()) > len(await parent.forgotten_items())
    await any_store.prune("f", before_version=reports[1].committed_version)
    assert await any_store.check() == []
    # After a prune, a fork can start no earlier than the history kept.
    base = reports[-2].committed_version
    with pytest.raises(ValidationError) as pruned:
        await any_store.fork("p", "too-early", at=base - 1)
    assert pruned.value.field == "at"
    late = await any_store.fork("p", "late", at=reports[-1].committed_version)
    assert await late.summary() is not None
    assert await any_store.check() == []


async def test_a_search_across_sessions_shows_a_shared_passage_once(
    any_store: MemoryStore,
) -> None:
    parent = await conversation(any_store)
    await any_store.fork("p", "f1")
    await any_store.fork("f1", "f2")
    hits = await any_store.search("Ingrid Trondheim", limit=10)
    ingrid = [hit for hit in hits if hit.source == "item" and "Ingrid" in hit.text]
    assert len(ingrid) == 1
    summaries = [hit for hit in hits if hit.source == "summary"]
    assert len({hit.text for hit in summaries}) == len(summaries)
    # The fork's own copy is found when it is the only one searched.
    only_fork = await any_store.search("Ingrid Trondheim", sessions=["f2"])
    assert any(hit.session_id == "f2" and "Ingrid" in hit.text for hit in only_fork)
    # A passage said after the fork is the fork's own: both are found.
    await parent.add("user", "Ingrid now lives in Bergen instead of Trondheim.")
    fork = await any_store.attach("f1")
    await fork.add("user", "Ingrid now lives in Bergen instead of Trondheim.")
    both = await any_store.search("Bergen", limit=10)
    assert sorted(hit.session_id for hit in both if "Bergen" in hit.text) == ["f1", "p"]
    # Limits still fill up with distinct passages when copies are skipped.
    many = await any_store.search("topic number", limit=8)
    assert len(many) == 8
    assert len({(hit.source, hit.text) for hit in many}) == 8


async def test_recall_in_a_fork_draws_on_the_copied_history(any_store: MemoryStore) -> None:
    roomy = MemoryLimits(hard=200, target=100, keep_recent=2)
    parent = await conversation(any_store, turns=30, limits=roomy)
    fork = await any_store.fork("p", "f")
    question = "Where does Ingrid live?"
    recalled = await fork.build_model_input(recall=question)
    assert recalled == await parent.build_model_input(recall=question)
    text = " ".join(str(message["content"]) for message in recalled)
    assert text.count("Ingrid moved to Trondheim") == 1


async def test_export_and_import_carry_the_parent(any_store: MemoryStore, tmp_path: Path) -> None:
    await conversation(any_store)
    await any_store.fork("p", "f", at=6)
    records = await any_store.export_session("f")
    assert records[0]["parent_id"] == "p" and records[0]["parent_version"] == 6
    assert all(r["origin_id"] for r in records if r["type"] == "item")
    async with MemoryStore.open(tmp_path / "copy.db") as other:
        # A fork names its parent: the parent comes first.
        with pytest.raises(ValidationError) as orphan:
            await other.import_session(records)
        assert orphan.value.field == "record 1.parent_id"
        assert await other.sessions() == []
        assert await other.import_session(await any_store.export_session("p")) == "p"
        assert await other.import_session(records) == "f"
        info = await other.session_info("f")
        assert (info.parent_id, info.parent_version) == ("p", 6)
        assert await other.check() == []
        # The copies are the parent's passages: a search across both lists each once.
        hits = await other.search("sister Ingrid Trondheim", limit=10)
        assert len([h for h in hits if h.source == "item" and "Ingrid" in h.text]) == 1


async def test_forks_taken_while_another_process_writes_are_consistent(backend_url: str) -> None:
    """A worker process appends (and compacts) while forks are taken: each fork is the
    parent's ledger cut at its version, whatever was committed meanwhile."""
    async with MemoryStore.open(backend_url) as store:  # migrated before the worker starts
        worker = subprocess.Popen(
            # Each summarizer call sleeps up to 0.2 s with no transaction open, so the worker
            # runs for seconds and forks land between its commits however busy the machine.
            [sys.executable, str(WORKER), backend_url, "p", "w", "120", "--slow", "0.2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        taken: list[str] = []
        while worker.poll() is None or not taken:
            try:
                await store.fork("p", f"f{len(taken)}")
                taken.append(f"f{len(taken)}")
            except SessionNotFoundError:  # no append committed yet
                pass
            await asyncio.sleep(0.02)
        _out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        parent = await store.history("p")
        assert parent.reports, "the worker compacted"
        for fork_id in taken:
            fork = await store.history(fork_id)
            at = fork.info.parent_version
            assert at is not None and fork.info.version == at
            mine, theirs = state_at(fork, at), state_at(parent, at)
            assert [(i.seq, i.content) for i in mine.items] == [
                (i.seq, i.content) for i in theirs.items
            ]
            assert mine.summary == theirs.summary
        assert len({(await store.session_info(f)).parent_version for f in taken}) > 1
        assert await store.check() == []
