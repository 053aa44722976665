"""``memstore mcp``'s options and what it says when it cannot serve, as a process of its own;
and memstore without the MCP SDK installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clients import memstore_cli

#: Runs Python as if the SDK were not installed: ``import mcp`` fails as it does then.
WITHOUT_SDK = "import sys\nsys.modules['mcp'] = None\n"


def run_without_sdk(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_sdk_memstore_mcp_says_how_to_install_it(db_path: Path) -> None:
    cli = "from memstore.cli import main\nmain(prog_name='memstore')"
    result = run_without_sdk(cli, "--db", str(db_path), "mcp")
    assert result.returncode == 1
    assert result.stderr == (
        "Error: memstore mcp needs the MCP SDK: in memstore's checkout, pip install '.[mcp]'\n"
    )
    assert not db_path.exists()


def test_without_the_sdk_memstore_imports_and_lists_its_commands() -> None:
    code = (
        "import memstore, memstore.adapters.mcp.tools, memstore.adapters.mcp.resources\n"
        "from memstore.cli import main\n"
        "main(['--help'], prog_name='memstore')"
    )
    result = run_without_sdk(code)
    assert result.returncode == 0, result.stderr
    assert "mcp " in result.stdout and "Model Context Protocol" in result.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--http", "nowhere"], "Invalid value for '--http': 'nowhere' is not HOST:PORT"),
        (["--http", "127.0.0.1:70000"], "Invalid value for '--http'"),
        (["--scope", "Alice"], "Invalid value for '--scope': 'Alice' is not a valid scope"),
        (["--token-env", "MY_TOKEN"], "--token-env goes with --http"),
    ],
)
def test_bad_options_are_usage_errors(db_path: Path, args: list[str], said: str) -> None:
    result = memstore_cli(db_path, "mcp", *args)
    assert result.returncode == 2
    assert said in result.stderr and "Traceback" not in result.stderr
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "Error: MY_TOKEN: is not set"),
        ("short", "Error: MY_TOKEN: must be at least 16 printable ASCII characters"),
    ],
)
def test_a_token_variable_must_hold_a_usable_token(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None, said: str
) -> None:
    if value is not None:
        monkeypatch.setenv("MY_TOKEN", value)
    result = memstore_cli(db_path, "mcp", "--http", "127.0.0.1:0", "--token-env", "MY_TOKEN")
    assert result.returncode == 1
    assert result.stderr.startswith(said)
    assert value is None or value not in result.stderr  # a token is never echoed


def test_a_read_only_server_needs_an_existing_database(db_path: Path) -> None:
    result = memstore_cli(db_path, "mcp", "--read-only")
    assert result.returncode == 1
    assert result.stderr == f"Error: no database at {db_path}\n"
    assert not db_path.exists()


def test_a_busy_port_is_one_line(db_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = memstore_cli(db_path, "mcp", "--http", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr == f"Error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
