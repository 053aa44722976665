"""Every run-time dependency in pyproject.toml is one memstore's code uses: none is dead weight
that every install downloads."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Dependencies that memstore's code does not import by name, and what makes them run.
DRIVEN_BY_SQLALCHEMY = {
    # A user's own SQLite AsyncEngine (MemoryStore.open(engine=...)) runs on it: that store's
    # reads go through it (tests/test_user_engine.py counts them).
    "aiosqlite": "sqlite+aiosqlite",
}


def dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"]:
        match = re.match(r"[A-Za-z0-9_.-]+", requirement)
        assert match is not None, requirement
        names.add(match.group(0).lower().replace("-", "_"))
    return names


def imported_by_memstore() -> set[str]:
    """Top-level packages memstore's modules import, or load by name (``find_spec``,
    ``import_module``, ``importlib.resources.files``)."""
    found: set[str] = set()
    for path in (ROOT / "memstore").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Call) and node.args:
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                first = node.args[0]
                if name in {"files", "import_module", "find_spec"} and isinstance(
                    first, ast.Constant
                ):
                    found.add(str(first.value).split(".")[0])
    return found


def test_every_dependency_is_used() -> None:
    unused = dependencies() - imported_by_memstore() - set(DRIVEN_BY_SQLALCHEMY)
    assert unused == set(), f"dependencies memstore never imports: {sorted(unused)}"


def test_a_dependency_driven_through_sqlalchemy_is_named_in_memstores_code() -> None:
    code = "\n".join(path.read_text() for path in (ROOT / "memstore").rglob("*.py"))
    for dependency, url_form in DRIVEN_BY_SQLALCHEMY.items():
        assert dependency in dependencies()
        assert url_form in code, f"{dependency}: memstore no longer names {url_form}"
