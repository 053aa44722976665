"""Exit codes mean one thing each: 0 ok, 1 a domain failure, 2 a usage error, whatever layer
found the bad value (click's own parsing, or a check deeper down). Driven through the
installed executable, as a script would."""

from __future__ import annotations

from pathlib import Path

import pytest
from clients import memstore_cli
from conftest import write_worked_example


@pytest.fixture(scope="module")
def worked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exit-codes") / "worked.db"
    write_worked_example(path)
    return path


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["replay", "incident-42", "--hard-limit", "abc"], "--hard-limit"),
        (["replay", "incident-42", "--hard-limit", "0"], "--hard-limit"),
        (["replay", "incident-42", "--keep-recent", "-1"], "--keep-recent"),
        (["replay", "incident-42", "--hard-limit", "40"], "--target-limit"),
        (["replay", "incident-42", "--at", "999"], "--at"),
        (["replay", "incident-42", "--at", "2", "--hard-limit", "90"], "--at"),
        (["input", "incident-42", "--scope", "Bad"], "--scope"),
        (["ltm", "get", "k", "--scope", "Bad"], "--scope"),
    ],
)
def test_a_bad_option_value_is_a_usage_error_naming_the_option(
    worked: Path, args: list[str], option: str
) -> None:
    result = memstore_cli(worked, *args)
    assert result.returncode == 2, result.stderr
    assert option in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [["show", "no-such-session"], ["ltm", "get", "missing"], ["reports", "nope"], ["show", "a/b"]],
)
def test_a_domain_failure_is_exit_1(worked: Path, args: list[str]) -> None:
    result = memstore_cli(worked, *args)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1


def test_a_what_if_with_both_limits_runs(worked: Path) -> None:
    result = memstore_cli(
        worked, "replay", "incident-42", "--hard-limit", "60", "--target-limit", "40"
    )
    assert result.returncode == 0 and "what-if: hard 60, target 40" in result.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["fork", "incident-42", "bad id"], "NEW"),
        (["fork", "incident-42", "incident-42"], "NEW"),
        (["show", "bad/id"], "SESSION"),
        (["chat", "bad id"], "SESSION"),
        (["demo", "--session", "bad id"], "--session"),
        (["ltm", "set", "k", "v", "--expect-version", "5"], "--expect-version"),
        (["replay", "incident-42", "--at", "999"], "'--at'"),
    ],
)
def test_errors_name_options_and_arguments_as_typed(
    worked: Path, args: list[str], named: str
) -> None:
    result = memstore_cli(worked, *args)
    assert result.returncode in (1, 2), result.stderr
    assert named in result.stderr and len(result.stderr.splitlines()) == 1
    python_names = ("new_session_id", "session_id", "expected_version", "at_version")
    assert not any(name in result.stderr for name in python_names), result.stderr


def test_a_purge_refused_for_its_forks_names_the_option(tmp_path: Path) -> None:
    db = tmp_path / "forked.db"
    write_worked_example(db)
    assert memstore_cli(db, "fork", "incident-42", "retry").returncode == 0
    result = memstore_cli(db, "purge", "incident-42", "--yes")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: --with-forks: session 'incident-42' has forks")
    assert "with_forks" not in result.stderr
