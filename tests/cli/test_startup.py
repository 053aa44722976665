"""Start-up: what a CLI command loads, and the lazily loaded names and commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from clients import memstore_cli


def modules_loaded_by(args: list[str]) -> tuple[str, set[str]]:
    """What ``memstore ARGS`` prints, and every module it loaded, in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from memstore.cli import main\n"
        "try:\n"
        f"    main({args!r}, prog_name='memstore')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    )
    return result.stdout, set(result.stderr.split())


def test_the_cli_show_path_loads_neither_the_orm_nor_other_backends(tmp_path: Path) -> None:
    """Start-up cost is measured in benchmarks/suite.py; what it depends on is checked here."""
    db = tmp_path / "cli.db"
    assert memstore_cli(db, "add", "s", "hi", "--estimator", "words").returncode == 0
    printed, loaded = modules_loaded_by(["--db", str(db), "show", "s"])
    assert "hi" in printed
    for heavy in (
        "sqlalchemy.orm",
        "sqlalchemy.ext.asyncio",
        "sqlalchemy.dialects.postgresql",
        "aiosqlite",
        "alembic",
        "openai",
        "tiktoken",
        "rich.progress",
        "memstore.cli.chat",
        "memstore.core.replay",
        "memstore.memory.long_term",
    ):
        assert heavy not in loaded, heavy


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_import_nothing_they_do_not_print(args: list[str]) -> None:
    _, loaded = modules_loaded_by(args)
    assert not {m for m in loaded if m.split(".")[0] in {"sqlalchemy", "rich", "openai"}}
    assert not {m for m in loaded if m.startswith("memstore.") and m.count(".") > 1} - {
        "memstore.cli.__main__"
    }


def test_the_listed_summaries_are_the_commands_own() -> None:
    from memstore.cli import COMMANDS, SUMMARIES, main

    context = click.Context(main)
    assert set(SUMMARIES) == set(COMMANDS)
    for name, summary in SUMMARIES.items():
        command = main.get_command(context, name)
        assert command is not None and command.get_short_help_str(limit=200) == summary, name


def test_every_public_name_and_every_command_resolves() -> None:
    """Both are loaded lazily, so a wrong entry would fail only when first used."""
    import memstore
    from memstore.cli import COMMANDS, main

    assert set(memstore._EXPORTS) | {"__version__"} == set(memstore.__all__)
    for name in memstore.__all__:
        assert getattr(memstore, name) is not None, name
    context = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(context, name)
        assert command is not None and command.name == name, name
    assert main.list_commands(context) == sorted(COMMANDS)
