"""A database named wrongly is a usage error that names --db and the forms that work: never
a traceback, never a password."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from clients import memstore_cli

from memstore import MemoryStore, ValidationError
from memstore.cli import main

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
    result = memstore_cli(url, "sessions")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "'--db' / MEMSTORE_DB" in result.stderr and "sqlite:///" in result.stderr
    assert "hunter2secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("url", MALFORMED)
async def test_the_api_names_the_db_field(url: str) -> None:
    with pytest.raises(ValidationError) as info:
        await MemoryStore.open(url)
    assert info.value.field == "db" and "hunter2secret" not in str(info.value)


def test_the_environment_variable_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTORE_DB", "foo://x")
    result = CliRunner().invoke(main, ["sessions"], catch_exceptions=False)
    assert result.exit_code == 2 and "MEMSTORE_DB" in result.stderr


@pytest.mark.parametrize("folder", ["h#a", "q?mark", "pc%41t", "with space"])
def test_a_path_with_url_characters_is_that_file(tmp_path: Path, folder: str) -> None:
    """A path is never read as a URL: ?, # and % open the file they name, read-only too."""
    (tmp_path / folder).mkdir()
    db = tmp_path / folder / "a.db"
    assert memstore_cli(db, "add", "s", "hello", "--estimator", "words").returncode == 0
    shown = memstore_cli(db, "show", "s")  # a read command: opened read-only
    assert shown.returncode == 0 and "hello" in shown.stdout, shown.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # no stray file elsewhere


def test_a_port_that_is_not_a_number_is_a_usage_error() -> None:
    result = memstore_cli("postgresql://h:abc/db", "sessions")
    assert result.returncode == 2 and "Traceback" not in result.stderr
