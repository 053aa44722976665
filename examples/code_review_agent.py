"""A code-review agent whose short- and long-term memory live in memstore.

It reviews Python files in a workspace with three tools, ``read_file(path)``,
``patch_file(path, old, new)`` and ``print_review(summary, findings)``, plus memstore's
``remember(key, value)`` and ``recall(key)``. Each run is one session (its working memory:
the request, the tool calls, the reply; bounded and compacted by memstore); preferences the
user states ("from now on, add docstrings to all generated code") are saved in long-term
memory under ``agent:code-reviewer`` and are in the model input of every later run, so a
preference set in one run shapes the next.

Against any OpenAI-compatible endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``OPENAI_MODEL``)::

    python examples/code_review_agent.py --workspace ./src "Review stats.py."

Offline, with a scripted stand-in model and two sample files (no key, no network)::

    python examples/code_review_agent.py --offline --sample --workspace /tmp/review \\
        "Review stats.py. From now on, add docstrings to all generated code."
    python examples/code_review_agent.py --offline --workspace /tmp/review "Review pricing.py."

The second run patches ``pricing.py`` with a docstring because the first run's preference is
in its input ("Relevant memories"); with a fresh ``--db`` it would not. The stand-in is a
rule-based script (it guards divisions by zero), not a reviewer: it shows the memory at work.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from memstore import CompactionReport, MemoryKind, MemoryLimits, MemoryStore, Priority
from memstore.agent import Agent, ModelSettings, Tool, ToolCall, TurnResult, make_client
from memstore.offline_model import (
    MEMORIES_CLOSE,
    MEMORIES_OPEN,
    Reply,
    StandInModel,
    current_turn,
    extractive_brain,
    input_items,
    is_summary_request,
    text_of,
    text_reply,
    tool_call_reply,
)

SCOPE = "agent:code-reviewer"
#: Files larger than this are not read whole into a model's context.
MAX_FILE_BYTES = 100_000
INSTRUCTIONS = """\
You are a careful Python code reviewer working in a workspace.
Read the files the user names with read_file. Fix real bugs with patch_file, replacing an
exact, unique piece of the file (old) with its corrected version (new); keep changes small.
Follow every saved preference under "Relevant memories" in all code you write.
When the user states a lasting preference ("from now on", "always"), save it with
remember(key, value) before you write code. Finish by calling print_review once with a
one-paragraph summary and the list of findings, then answer with one sentence."""

SAMPLES = {
    "stats.py": (
        "def average(values):\n"
        "    return sum(values) / len(values)\n\n\n"
        "def spread(values):\n"
        '    """Largest minus smallest value."""\n'
        "    return max(values) - min(values)\n"
    ),
    "pricing.py": (
        "def unit_price(total, quantity):\n"
        "    return total / quantity\n\n\n"
        "def with_tax(price, rate=0.2):\n"
        "    return round(price * (1 + rate), 2)\n"
    ),
}


# -- the tools ---------------------------------------------------------------------------------


def review_tools(workspace: Path, out: Console) -> list[Tool]:
    """read_file, patch_file and print_review, confined to ``workspace``."""
    root = workspace.resolve()

    def locate(path: str) -> Path:
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise ValueError(f"{path!r} is outside the workspace")
        if not target.is_file():
            raise ValueError(f"no file {path!r} in the workspace")
        return target

    async def read_file(path: str) -> str:
        target = locate(path)
        if target.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path!r} is larger than {MAX_FILE_BYTES} bytes")
        return target.read_text(encoding="utf-8")

    async def patch_file(path: str, old: str, new: str) -> str:
        target = locate(path)
        text = target.read_text(encoding="utf-8")
        found = text.count(old) if old else 0
        if found != 1:
            raise ValueError(f"old must occur exactly once in {path!r}; it occurs {found} times")
        target.write_text(text.replace(old, new), encoding="utf-8")
        return f"patched {path}: {old.count(chr(10)) + 1} lines -> {new.count(chr(10)) + 1} lines"

    async def print_review(summary: str, findings: list[str]) -> str:
        body = Text(summary + "\n")
        for finding in findings:
            body.append(f"\n• {finding}")
        out.print(Panel(body, title="review", title_align="left", border_style="green"))
        return "printed"

    text = {"type": "string"}
    return [
        Tool(
            "read_file",
            "Read a text file of the workspace (path relative to its root).",
            {"type": "object", "properties": {"path": text}, "required": ["path"]},
            read_file,
            priority=Priority.LOW,  # the file is still there: re-reading beats remembering
        ),
        Tool(
            "patch_file",
            "Replace the exact, unique text `old` of a workspace file with `new`.",
            {
                "type": "object",
                "properties": {"path": text, "old": text, "new": text},
                "required": ["path", "old", "new"],
            },
            patch_file,
            record_as=MemoryKind.DECISION,  # a change the agent made: keep it in the summary
        ),
        Tool(
            "print_review",
            "Show the review to the user: a summary and the findings.",
            {
                "type": "object",
                "properties": {"summary": text, "findings": {"type": "array", "items": text}},
                "required": ["summary", "findings"],
            },
            print_review,
        ),
    ]


# -- the offline stand-in model ----------------------------------------------------------------

_DIVISION = re.compile(
    r"^(?P<indent>\s*)return (?P<left>.+?) / (?P<right>len\((?P<seq>\w+)\)|\w+)\s*$"
)
_PREFERENCE = re.compile(r"(?:from now on|always)[,:]?\s*(?P<what>[^.!?]+)", re.IGNORECASE)


def _memories(request: dict[str, Any]) -> list[Any]:
    values = []
    for item in input_items(request):
        text = text_of(item)
        if item.get("role") == "developer" and MEMORIES_OPEN in text:
            block = text.split(MEMORIES_OPEN, 1)[1].split(MEMORIES_CLOSE, 1)[0]
            values += [json.loads(line)["value"] for line in block.splitlines() if line.strip()]
    return values


def _fix(path: str, source: str, docstrings: bool) -> tuple[dict[str, str], str] | None:
    """A guard against division by zero for the first function that needs one."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        old = ast.get_source_segment(source, node) or ""
        lines = old.splitlines()
        for index, line in enumerate(lines):
            match = _DIVISION.match(line)
            if not match:
                continue
            indent, name = match["indent"], match["seq"] or match["right"]
            test = f"not {name}" if match["seq"] else f"{name} == 0"
            why = "empty" if match["seq"] else "zero"
            guard = [
                f"{indent}if {test}:",
                f'{indent}    raise ValueError("{name} must not be {why}")',
            ]
            head = lines[:index]
            if docstrings and ast.get_docstring(node) is None:
                args = ", ".join(a.arg for a in node.args.args)
                head.insert(1, f'{indent}"""Compute {node.name.replace("_", " ")} of {args}; '
                               f'raise ValueError if {name} is {why}."""')  # fmt: skip
            new = "\n".join([*head, *guard, *lines[index:]])
            finding = f"{path}: {node.name}() divides by {name} without checking it is not {why}"
            return {"path": path, "old": old, "new": new}, finding
    return None


def offline_brain() -> Any:
    """A scripted reviewer: remember a stated preference, read the named files, guard
    divisions by zero (with docstrings if a saved preference asks for them), print the
    review, answer. Summary requests get the extractive stand-in."""
    summaries = extractive_brain()

    def brain(request: dict[str, Any]) -> Reply:
        if is_summary_request(request):
            return summaries(request)
        text, in_flight = current_turn(request)
        done = {i["name"] for i in in_flight if i.get("type") == "function_call"}
        outputs = {i["call_id"]: i["output"] for i in in_flight if "output" in i}
        reads = {
            json.loads(i["arguments"])["path"]: outputs.get(i["call_id"], "")
            for i in in_flight
            if i.get("type") == "function_call" and i["name"] == "read_file"
        }
        preference = _PREFERENCE.search(text)
        if preference and "remember" not in done:
            what = preference["what"].strip()
            key = "docstrings" if "docstring" in what.lower() else "code_preference"
            return tool_call_reply(request, ("remember", {"key": key, "value": what}))
        wanted = [p for p in re.findall(r"[\w./-]+\.py\b", text) if p not in reads]
        if wanted:
            return tool_call_reply(request, *(("read_file", {"path": p}) for p in wanted))
        docstrings = any("docstring" in str(value).lower() for value in _memories(request))
        fixes = [
            _fix(p, src, docstrings) for p, src in reads.items() if not src.startswith("error")
        ]
        findings = [f for _, f in filter(None, fixes)]
        if "patch_file" not in done and any(fixes):
            return tool_call_reply(request, *(("patch_file", a) for a, _ in filter(None, fixes)))
        if "print_review" not in done:
            summary = f"Reviewed {', '.join(reads) or 'nothing'}: {len(findings)} finding(s)."
            if docstrings:
                summary += " Generated code follows the saved docstring preference."
            return tool_call_reply(
                request, ("print_review", {"summary": summary, "findings": findings})
            )
        return text_reply(
            request, f"Done: {len(findings)} finding(s) fixed in {len(reads)} file(s)."
        )

    return brain


# -- running it --------------------------------------------------------------------------------


def tool_line(call: ToolCall) -> Text:
    """One executed tool call (shown as data, never as markup)."""
    args = ", ".join(f"{key}={str(value)[:60]}" for key, value in call.arguments.items())
    return Text(f"  ⚙ {call.name}({args}) -> {call.output[:80]}", style="dim" if call.ok else "red")


def compaction_line(report: CompactionReport) -> Text:
    """One compaction, the moment it commits."""
    return Text(
        f"⟳ compaction #{report.compaction_count}: {report.before_tokens} -> "
        f"{report.after_tokens} tokens · dropped {report.items_dropped} · summarized "
        f"{report.items_summarized} · evicted {report.items_evicted}",
        style="yellow",
    )


async def _free_session_id(store: MemoryStore, base: str) -> str:
    taken = {info.id for info in await store.sessions()}
    n = 1
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


async def review(args: argparse.Namespace, out: Console) -> tuple[TurnResult, StandInModel | None]:
    """One review run: one session, the scope's long-term memories, one user turn."""
    workspace = Path(args.workspace)
    if args.sample:  # the samples as they ship, whatever an earlier run left there
        workspace.mkdir(parents=True, exist_ok=True)
        for name, source in SAMPLES.items():
            (workspace / name).write_text(source, encoding="utf-8")
    standin = StandInModel(offline_brain()) if args.offline else None
    if standin is not None:
        client, model = standin.client(), "offline-stand-in"
    else:
        settings = ModelSettings.from_env(model=args.model)
        client, model = make_client(settings), settings.model
    async with MemoryStore.open(args.db) as store:
        session_id = args.session or await _free_session_id(store, "review")
        agent = await Agent.open(
            store,
            session_id,
            client=client,
            model=model,
            scope=args.scope,
            # The stand-in has no context window to fit: the default limits show compaction.
            limits=MemoryLimits.from_env() if standin is not None else None,
            instructions=INSTRUCTIONS,
            tools=review_tools(workspace, out),
            on_tool_call=lambda call: out.print(tool_line(call), soft_wrap=True),
            on_compaction=lambda report: out.print(compaction_line(report)),
        )
        out.print(
            Text(f"session {session_id} · memories {args.scope} · model {model}", style="dim")
        )
        try:
            result = await agent.run_turn(args.request)
        finally:
            await client.close()
        out.print(Text(result.reply, style="bold"))
        for entry in await store.ltm.list(scope=args.scope):
            out.print(
                Text(f"long-term: {entry.key} = {entry.value!r} (v{entry.version})", style="dim")
            )
        out.print(f"Inspect it: memstore --db {args.db} show {session_id} --all", highlight=False)
    return result, standin


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A code-review agent with memstore memory.")
    parser.add_argument("request", help='what to do, e.g. "Review stats.py."')
    parser.add_argument("--workspace", default=".", help="the files the agent may read and patch")
    parser.add_argument("--db", default="code-review.db", help="memstore database (path or URL)")
    parser.add_argument("--session", default=None, help="continue this session (default: new)")
    parser.add_argument("--scope", default=SCOPE, help="long-term memory scope")
    parser.add_argument("--model", default=None, help="model (default: $OPENAI_MODEL)")
    parser.add_argument("--offline", action="store_true", help="use the scripted stand-in model")
    parser.add_argument("--sample", action="store_true", help="write sample files to the workspace")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from memstore import MemstoreError

    args = parse_args(argv)
    out = Console(highlight=False)
    try:
        asyncio.run(review(args, out))
    except MemstoreError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
