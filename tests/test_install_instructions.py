"""Every install instruction installs this project.

On the package index ``memstore`` is an unrelated project: ``pip install 'memstore[mcp]'``
prints "does not provide the extra" in a fresh environment, and replaces this project in one
that has it. So no document, example, script or message may tell a user to install a name
other than this project's: from a checkout ``.`` (with extras this project declares), or the
distribution's own name.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = set(PROJECT["optional-dependencies"])

#: Where a user reads instructions: documents, examples, scripts, and the package's own
#: strings (error messages, docstrings). Tests are scanned too: they assert messages.
SCANNED = [
    ROOT / "README.md",
    ROOT / "pyproject.toml",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "benchmarks").rglob("*.py")),
    *sorted((ROOT / ".ci").glob("*")),
    *sorted((ROOT / "memstore").rglob("*.py")),
    *sorted(p for p in (ROOT / "tests").rglob("*.py") if p != Path(__file__).resolve()),
]
#: ``pip install`` and what follows it on its line (or on the next, when a sentence breaks
#: right after ``install``), up to where a shell command, a code span, a string or a line
#: (a backslash: an escape in a string, a continuation in a shell) ends.
INSTALL = re.compile(r"\bpip3?\s+install\b[ \t]*(\n[ \t]*)?([^\n`\"#;|&)\\]*)")
#: Options whose next word is no requirement (a file, an index, a folder).
TAKES_VALUE = {
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-t", "--target", "--prefix", "--root",
}  # fmt: skip
#: A requirement naming the checkout, with extras or not.
CHECKOUT = re.compile(r"\.(\[([^\]]*)\])?")
#: The old spelling of an install with extras: the import name, bracketed.
OLD_NAME = re.compile(r"\bmemstore\[")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wrong_targets(text: str) -> list[str]:
    """Each requirement a ``pip install`` in ``text`` names that is not this project."""
    wrong = []
    for match in INSTALL.finditer(text):
        words = match.group(2).strip()
        try:
            tokens = shlex.split(words)
        except ValueError:  # a quote the scan cut off: judge the words as they are
            tokens = words.split()
        skip = False
        for token in tokens:
            if skip:
                skip = False
                continue
            if token in TAKES_VALUE:
                skip = True
                continue
            if token.startswith("-"):
                continue  # -q, -U, -e (its value is a requirement like any other)
            if not is_this_project(token):
                wrong.append(token)
    return wrong


def is_this_project(requirement: str) -> bool:
    checkout = CHECKOUT.fullmatch(requirement)
    named = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[([^\]]*)\])?", requirement)
    if checkout is not None:
        extras = checkout.group(2)
    elif named is not None and normalized(named.group(1)) == normalized(PROJECT["name"]):
        extras = named.group(3)
    else:
        return False
    wanted = {extra.strip() for extra in (extras or "").split(",") if extra.strip()}
    return wanted <= EXTRAS


def test_the_distribution_has_a_name_of_its_own() -> None:
    assert normalized(PROJECT["name"]) == "memstore-agents"
    assert PROJECT["scripts"] == {"memstore": "memstore.cli:main"}


@pytest.mark.parametrize("path", SCANNED, ids=[str(p.relative_to(ROOT)) for p in SCANNED])
def test_every_install_instruction_installs_this_project(path: Path) -> None:
    if not path.is_file():
        return
    text = path.read_text()
    assert wrong_targets(text) == [], f"{path.relative_to(ROOT)} installs another project"
    assert OLD_NAME.findall(text) == [], f"{path.relative_to(ROOT)} names memstore[...]"


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("pip install 'memstore[mcp]'", ["memstore[mcp]"]),
        ("`pip install -U 'memstore[agents]'`", ["memstore[agents]"]),
        ("then pip install memstore && memstore demo", ["memstore"]),
        ('INSTALL = "needs the SDK: pip install memstore"', ["memstore"]),
        ("a sentence that ends in pip\ninstall 'memstore[mcp]'` and goes on", ["memstore[mcp]"]),
        ("pip install '.[nosuch]'", [".[nosuch]"]),
        ("python3 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/pytest", []),
        ("pip install -q -e '.[postgres,mcp,otel]'  # extras", []),
        ("pip install 'memstore-agents[mcp]'", []),
        ("the migrations travel in the wheel, so a plain `pip install` creates them", []),
    ],
)
def test_the_scan_tells_this_project_from_another(line: str, wrong: list[str]) -> None:
    assert wrong_targets(line) == wrong
