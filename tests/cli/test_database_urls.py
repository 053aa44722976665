"""A database named wrongly is a usage error that names --db and the forms that work: never
a traceback, never a password."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memstore import MemoryStore, ValidationError

MALFORMED = [
    "foo://x",
    "not a url://x",
    "http://alice:hunter2secret@example.com/x",
    "://x",
    "postgresql+nodriver://alice:hunter2secret@db/x",
    "mysql://alice:hunter2secret@db/x",
]


@pytest.mark.parametrize("url", MALFORMED)
def test_the_cli_calls_a_malformed_url_a_usage_error(url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memstore", "--db", url, "sessions"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "'--db' / MEMSTORE_DB" in result.stderr and "sqlite:///" in result.stderr
    assert "hunter2secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("url", MALFORMED)
async def test_the_api_names_the_db_field(url: str) -> None:
    with pytest.raises(ValidationError) as info:
        await MemoryStore.open(url)
    assert info.value.field == "db" and "hunter2secret" not in str(info.value)


def test_the_environment_variable_is_named_too() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memstore", "sessions"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "MEMSTORE_DB": "foo://x"},
    )
    assert result.returncode == 2 and "MEMSTORE_DB" in result.stderr
