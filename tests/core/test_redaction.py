"""Credentials never reach the audit trail: model errors are redacted before they are stored,
logged or shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clients import memstore_cli
from conftest import WORKED_FIFTH, WORKED_ITEMS, WORKED_LIMITS

from memstore import MemoryStore, OpenAISummarizer, WordEstimator
from memstore.core.redaction import REDACTED, redact
from memstore.model_side.stand_in_server import StandInModel, error_reply

KEY = "sk-proj-Abc123def456GHI789jkl012MNO345"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Incorrect API key provided: {KEY}.", KEY),
        ("Incorrect API key provided: sk-abc12***************************wxyz", "sk-abc12"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig failed", "eyJhbGci"),
        ("bad request: api_key=hunter2hunter2 rejected", "hunter2"),
        ('{"password": "correct horse battery"}', "correct"),
        ("cannot reach https://alice:s3cretpass@llm.internal/v1", "s3cretpass"),
    ],
)
def test_credentials_of_every_shape_are_redacted(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned and REDACTED in cleaned


def test_a_known_secret_is_redacted_whatever_its_shape() -> None:
    assert redact("the key local-dev-key-42 is not valid", ["local-dev-key-42"]) == (
        f"the key {REDACTED} is not valid"
    )
    assert (
        redact("nothing secret here, 401 unauthorized") == "nothing secret here, 401 unauthorized"
    )


async def compact_with_failing_model(db: Path, reply_text: str, api_key: str) -> str | None:
    standin = StandInModel()
    standin.queue(error_reply(401, reply_text))
    summarize = OpenAISummarizer(standin.client(api_key=api_key), "gpt-test")
    async with MemoryStore.open(db) as store:
        memory = store.session(
            "incident-42", limits=WORKED_LIMITS, estimator=WordEstimator(), summarizer=summarize
        )
        for role, kind, priority, content in [*WORKED_ITEMS, WORKED_FIFTH]:
            await memory.add(role, content, kind=kind, priority=priority)
        (report,) = await memory.reports()
    return report.summary_error


@pytest.mark.parametrize(
    ("api_key", "echoed"),
    [
        (KEY, f"Incorrect API key provided: {KEY}. You can find your API key at ..."),
        ("local-dev-key-42", "key local-dev-key-42 unknown to this server"),
    ],
)
async def test_a_server_that_echoes_the_key_leaves_none_in_reports(
    db_path: Path, api_key: str, echoed: str
) -> None:
    error = await compact_with_failing_model(db_path, echoed, api_key)
    assert error is not None and "HTTP 401" in error
    assert api_key not in error and REDACTED in error
    shown = memstore_cli(db_path, "reports", "incident-42")
    as_json = memstore_cli(db_path, "reports", "incident-42", "--json")
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    assert api_key not in shown.stdout + shown.stderr + as_json.stdout
    assert json.loads(as_json.stdout)[0]["summary_error"] == error
    files = [db_path, db_path.with_name(db_path.name + "-wal")]
    assert all(api_key.encode() not in f.read_bytes() for f in files if f.exists())
