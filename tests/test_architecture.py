"""The layers of docs/architecture.md, kept honest: imports point down, and never in a ring.

Every ``import`` counts, the lazy ones inside functions and those under ``TYPE_CHECKING``
included: a ring of lazy imports is still a ring a reader must untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memstore"

#: Top to bottom; a module may import from its own layer or any layer below it. A layer is a
#: folder (or, for the few modules directly in ``memstore/``, a module): the picture of the code
#: is the architecture, and docs/architecture.md draws the same table.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("command line", ("memstore.cli", "memstore.__main__")),
    ("extras' import paths", ("memstore.openai_agents", "memstore.pydantic_ai")),
    ("adapters", ("memstore.adapters",)),
    ("public names", ("memstore.__init__", "memstore.agent", "memstore.offline_model")),
    ("model side", ("memstore.model_side",)),
    ("memory services", ("memstore.memory",)),
    ("database", ("memstore.db",)),
    ("model input", ("memstore.render",)),
    ("extraction", ("memstore.extraction",)),
    ("pure core", ("memstore.core",)),
    ("base", ("memstore.config", "memstore.errors", "memstore.version", "memstore.processes")),
]
#: How many modules may sit directly in ``memstore/``: past this the top level is a flat house
#: again and a newcomer cannot see the layers.
MAX_TOP_LEVEL_MODULES = 12
#: Past this a module holds more than one concern: split it by what it owns.
MAX_MODULE_LINES = 450
#: Third-party packages only the edges may import: the pure core stays testable alone.
EDGE_ONLY = {
    "sqlalchemy": "memstore.db",
    "alembic": "memstore.db",
    "click": "memstore.cli",
    "mcp": "memstore.adapters.mcp",
    "uvicorn": "memstore.adapters.mcp",
    "starlette": "memstore.adapters.mcp",
}
#: Frameworks and clients no layer below the named one may import: a model client is the
#: model side's business, an agent framework an adapter's (each an optional extra).
LOWEST_IMPORTER = {
    "openai": "memstore.model_side",
    "agents": "memstore.adapters",
    "mcp": "memstore.adapters",
    "pydantic_ai": "memstore.adapters",
}
#: The layers that hold state or do I/O: the command line and the adapters reach them only
#: through the public names (``memstore``, ``memstore.agent``, ...), as a user's program does.
#: The pure layers (values and rules: core, extraction, render, the base) they may import.
BEHIND_THE_PUBLIC_NAMES = ("memstore.memory", "memstore.db", "memstore.model_side")
#: Who must use the public names only.
PUBLIC_API_USERS = ("memstore.cli", "memstore.adapters")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from x import y`` counts x and x.y)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}
GRAPH = {
    name: {
        other.removesuffix(".__init__")
        for other in imports_of(path)
        if other in MODULES or f"{other}.__init__" in MODULES
    }
    - {name.removesuffix(".__init__")}
    for name, path in MODULES.items()
}


def layer_of(module: str) -> int:
    if module == "memstore":  # ``from memstore import X``: the package's __init__
        module = "memstore.__init__"
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS (and the docs)")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports_only_its_layer_or_below(module: str) -> None:
    here = layer_of(module)
    upward = sorted(other for other in GRAPH[module] if layer_of(other) < here)
    assert upward == [], f"{module} ({LAYERS[here][0]}) imports a layer above it: {upward}"


def test_no_import_cycles() -> None:
    graph = {name.removesuffix(".__init__"): deps for name, deps in GRAPH.items()}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            ring = [*path[path.index(node) :], node]
            raise AssertionError("import cycle: " + " -> ".join(ring))
        if node in done:
            return
        for other in sorted(graph.get(node, ())):
            visit(other, [*path, node])
        done.add(node)

    for name in sorted(graph):
        visit(name, [])


@pytest.mark.parametrize("package", sorted(EDGE_ONLY))
def test_third_party_edges_stay_at_the_edges(package: str) -> None:
    owner = EDGE_ONLY[package]
    offenders = sorted(
        name
        for name, path in MODULES.items()
        if not (name == owner or name.startswith(owner + "."))
        and any(imp == package or imp.startswith(package + ".") for imp in imports_of(path))
    )
    assert offenders == [], f"only {owner} may import {package}: {offenders}"


@pytest.mark.parametrize("package", sorted(LOWEST_IMPORTER))
def test_frameworks_stay_above_their_layer(package: str) -> None:
    floor = layer_of(LOWEST_IMPORTER[package])
    offenders = sorted(
        name
        for name, path in MODULES.items()
        if layer_of(name) > floor
        and any(imp == package or imp.startswith(package + ".") for imp in imports_of(path))
    )
    assert offenders == [], (
        f"below {LOWEST_IMPORTER[package]}, {package} is imported by {offenders}"
    )


@pytest.mark.parametrize(
    "module", sorted(name for name in MODULES if name.startswith(PUBLIC_API_USERS))
)
def test_the_command_line_and_adapters_use_the_public_names(module: str) -> None:
    behind = sorted(other for other in GRAPH[module] if other.startswith(BEHIND_THE_PUBLIC_NAMES))
    assert behind == [], f"{module} reaches past the public names: {behind}"


def test_the_core_never_imports_a_driver_or_the_model_client() -> None:
    pure = [name for name in MODULES if layer_of(name) >= layer_of("memstore.core")]
    for name in pure:
        outside = {imp.split(".")[0] for imp in imports_of(MODULES[name])}
        assert not outside & {"sqlalchemy", "openai", "click", "httpx"}, name


def test_the_top_level_stays_small() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_outgrows_one_concern(module: str) -> None:
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines: split it by what it owns"


def test_no_two_modules_share_a_name_for_different_jobs() -> None:
    """``tools.py`` beside ``mcp/tools.py`` made a reader guess: every module name (not
    counting ``__init__``) appears once, except the per-command modules of the CLI, each named
    after the other layer's module it renders."""
    seen: dict[str, list[str]] = {}
    for name in MODULES:
        if name.startswith("memstore.cli.") or name.endswith("__init__"):
            continue
        if layer_of(name) in {layer_of("memstore.agent"), layer_of("memstore.pydantic_ai")}:
            continue  # the public import paths re-export the module they are named after
        seen.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    shared = {stem: names for stem, names in seen.items() if len(names) > 1}
    assert shared == {}, shared


def test_every_package_travels_in_the_wheel() -> None:
    """A folder missing from pyproject's package list installs nowhere: ``pip install .``
    would ship a package that fails on its first import."""
    import tomllib

    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    folders = {
        module_name(path.parent / "x")[: -len(".x")] for path in PACKAGE.rglob("__init__.py")
    }
    assert folders - listed == set()
