"""``memstore chat`` scripted through a pipe, against a stand-in model on 127.0.0.1.

The command builds its own client from OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL, so
the stand-in runs as a real HTTP server on a free loopback port and every request it gets is
recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memstore.cli import main
from memstore.model_side.stand_in_server import (
    Reply,
    StandInModel,
    current_turn,
    error_reply,
    extractive_brain,
    is_summary_request,
    text_reply,
    tool_call_reply,
)

summaries = extractive_brain()


def brain(request: dict[str, Any]) -> Reply:
    """Summaries like the extractive summarizer; remembers preferences; else echoes."""
    if is_summary_request(request):
        return summaries(request)
    text, in_flight = current_turn(request)
    if text.startswith("Remember") and not in_flight:
        return tool_call_reply(request, ("remember", {"key": "favourite_db", "value": "sqlite"}))
    return text_reply(request, f"echo: {text}")


@pytest.fixture
def standin() -> StandInModel:
    return StandInModel(brain)


@pytest.fixture
def base_url(standin: StandInModel) -> Iterator[str]:
    with standin.serve() as url:
        yield url


def chat(db: Path, lines: str, *args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), "chat", *args], input=lines, env=env)


def model_env(base_url: str, **extra: str) -> dict[str, str | None]:
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url, **extra}


def test_piped_turns_one_per_line(db_path: Path, standin: StandInModel, base_url: str) -> None:
    env = model_env(base_url, OPENAI_MODEL="gpt-from-env")
    result = chat(
        db_path,
        "Hello there.\n\n   \nWhat did I say?\n",
        "s1",
        "--context-window",
        "32000",
        env=env,
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "you › Hello there." in out and "echo: Hello there." in out
    assert "echo: What did I say?" in out
    assert len(standin.requests) == 2  # blank lines are no turns
    first, second = standin.bodies
    assert first["model"] == "gpt-from-env"
    assert first["input"] == [{"role": "user", "content": "Hello there."}]
    user, reply, question = second["input"]
    assert user == {"role": "user", "content": "Hello there."}
    assert reply["role"] == "assistant" and reply["content"][0]["text"] == "echo: Hello there."
    assert question == {"role": "user", "content": "What did I say?"}
    assert [t["name"] for t in first["tools"]] == ["remember", "recall", "search_memory"]
    assert all(r.authorization == "Bearer sk-test" for r in standin.requests)

    # The session is an ordinary memstore session: `show` reads it.
    shown = CliRunner().invoke(main, ["--db", str(db_path), "show", "s1", "--json"])
    items = json.loads(shown.stdout)["items"]
    assert [i["kind"] for i in items] == ["USER_MESSAGE", "ASSISTANT_MESSAGE"] * 2


def test_model_option_and_memories_across_sessions(
    db_path: Path, standin: StandInModel, base_url: str
) -> None:
    env = model_env(base_url)
    result = chat(
        db_path,
        "Remember that I like sqlite.\n",
        "s1",
        "--scope",
        "user:alice",
        "--model",
        "m2",
        "--context-window",
        "32000",
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert "⚙ remember(key=favourite_db, value=sqlite) -> saved 'favourite_db'" in result.stdout
    assert standin.bodies[0]["model"] == "m2"
    got = CliRunner().invoke(
        main, ["--db", str(db_path), "ltm", "get", "favourite_db", "--scope", "user:alice"]
    )
    assert "sqlite" in got.stdout

    again = chat(db_path, "Hi again.\n", "s2", "--scope", "user:alice", env=env)
    assert again.exit_code == 0, again.output
    memories = standin.bodies[-1]["input"][0]
    assert memories["role"] == "developer"
    assert '"key":"favourite_db","value":"sqlite"' in memories["content"]
    other = chat(db_path, "Hi.\n", "s3", "--scope", "user:bob", env=env)
    assert other.exit_code == 0
    assert standin.bodies[-1]["input"] == [{"role": "user", "content": "Hi."}]


def test_compactions_are_shown_as_they_happen(
    db_path: Path, standin: StandInModel, base_url: str
) -> None:
    env = model_env(
        base_url, MEMORY_HARD_LIMIT="120", MEMORY_TARGET_LIMIT="80", MEMORY_KEEP_RECENT="2"
    )
    lines = "".join(
        f"Step {n}: the deploy must never run on Fridays for service-{n} please.\n"
        for n in range(8)
    )
    result = chat(db_path, lines + "/memory\n/exit\nnot a turn\n", "small", env=env)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "⟳ compaction #1:" in out and "summarized" in out
    assert "summarizer used" in out  # the OpenAI summarizer's usage, from the stand-in
    # /memory: the user's rules are what the summary keeps (the room is 24 tokens: a rule,
    # whole, and not always its heading)
    summary = out.split("summary: ", 1)[1]
    assert "Step " in summary and "the deploy must never run on Fridays" in summary
    assert "not a turn" not in out  # /exit ended the input
    summary_requests = [b for b in standin.bodies if is_summary_request(b)]
    assert summary_requests


def test_missing_key_is_one_line_and_exit_1(db_path: Path) -> None:
    result = chat(db_path, "hello\n", "s1", env={"OPENAI_API_KEY": None})
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: OPENAI_API_KEY: is not set")
    assert result.stderr.count("\n") == 1
    assert not db_path.exists()  # nothing was opened


@pytest.mark.parametrize(
    ("reply", "options", "expected"),
    [
        (error_reply(500, "overloaded"), (), "the model server answered HTTP 500: overloaded"),
        (Reply(b"{{{"), (), "malformed reply from the model server"),
        (
            Reply({}, delay=3.0),
            ("--timeout", "0.3", "--max-retries", "0"),
            "the model server did not answer within 0.3s",
        ),
    ],
)
def test_a_failed_turn_in_a_pipe_is_one_line_and_exit_1(
    db_path: Path,
    standin: StandInModel,
    base_url: str,
    reply: Reply,
    options: tuple[str, ...],
    expected: str,
) -> None:
    standin.queue(reply)
    result = chat(db_path, "hello\nnever reached\n", "s1", *options, env=model_env(base_url))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {expected}")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output
    assert len(standin.requests) == 1  # the second line never ran


def test_unreachable_server(db_path: Path) -> None:
    # conftest points OPENAI_BASE_URL at a closed loopback port.
    result = chat(db_path, "hello\n", "s1", "--max-retries", "0", env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot reach the model server at http://127.0.0.1:9/v1")


def test_bad_scope_and_session(db_path: Path) -> None:
    env = {"OPENAI_API_KEY": "k"}
    bad_scope = chat(db_path, "", "s1", "--scope", "nope", env=env)
    assert bad_scope.exit_code == 2 and "Invalid value for '--scope'" in bad_scope.stderr
    bad_session = chat(db_path, "", "bad/id", env=env)
    assert bad_session.exit_code == 1 and "SESSION: 'bad/id'" in bad_session.stderr


async def test_on_a_terminal_a_failed_turn_is_shown_and_the_chat_goes_on(
    db_path: Path, standin: StandInModel, base_url: str
) -> None:
    import io

    from rich.console import Console

    from memstore.cli.chat import ChatUI, run_chat
    from memstore.config import ModelSettings

    class Scripted(ChatUI):
        def turns(self) -> Any:
            yield from ("first", "second")

    out = io.StringIO()
    ui = Scripted(Console(file=out, width=100), io.StringIO(), interactive=True)
    standin.queue(error_reply(503, "warming up"))
    settings = ModelSettings(api_key="sk-test", base_url=base_url, model="m")
    turns = await run_chat(
        str(db_path),
        "tty",
        settings,
        scope="global",
        summarizer_name="extractive",
        max_tool_rounds=3,
        timeout=5,
        max_retries=0,
        ui=ui,
        context_window=16_000,
    )
    assert turns == 1
    text = out.getvalue()
    assert "Error: the model server answered HTTP 503: warming up" in text
    assert "echo: second" in text


def test_the_memory_budget_fits_the_model(
    db_path: Path, standin: StandInModel, base_url: str
) -> None:
    from memstore import MemoryLimits, TiktokenEstimator
    from memstore.agent import DEFAULT_INSTRUCTIONS

    def limits(session: str) -> dict[str, Any]:
        shown = CliRunner().invoke(main, ["--db", str(db_path), "show", session, "--json"])
        return json.loads(shown.stdout)["session"]

    env = model_env(base_url)
    unknown = chat(db_path, "hello\n", "s1", "--model", "my-local-model", env=env)
    assert unknown.exit_code == 2 and "'--context-window'" in unknown.output
    assert "my-local-model" in unknown.output and not standin.requests

    known = chat(db_path, "hello\n", "s1", "--model", "gpt-4o-mini", env=env)
    assert known.exit_code == 0, known.output
    tools = standin.bodies[0]["tools"]
    expected = MemoryLimits.for_model(
        context_window=128_000,
        max_output_tokens=16_384,
        instructions=DEFAULT_INSTRUCTIONS,
        tools=tools,
        estimator=TiktokenEstimator(),
    )
    assert (limits("s1")["hard_limit"], limits("s1")["target_limit"]) == (
        expected.hard, expected.target,
    )  # fmt: skip
    assert f"memory limit {expected.hard} tokens" in known.stdout

    # Stored limits stay, even for a model memstore does not know...
    again = chat(db_path, "again\n", "s1", "--model", "my-local-model", env=env)
    assert again.exit_code == 0, again.output
    assert limits("s1")["hard_limit"] == expected.hard
    # ...unless the user changes them; the answer's reserve is sent with each request.
    changed = chat(
        db_path, "smaller\n", "s1", "--model", "my-local-model", "--context-window", "8000",
        "--max-output-tokens", "1000", env=env,
    )  # fmt: skip
    assert changed.exit_code == 0, changed.output
    assert limits("s1")["hard_limit"] < 7_000 - 1_000
    assert standin.bodies[-1]["max_output_tokens"] == 1000
    no_room = chat(db_path, "x\n", "s2", "--context-window", "500", "--max-output-tokens", "500",
                   env=env)  # fmt: skip
    assert no_room.exit_code == 2 and "'--max-output-tokens'" in no_room.output
    # What the instructions and tools leave of a small window is no room either.
    tiny = chat(db_path, "x\n", "s2", "--context-window", "300", "--max-output-tokens", "100",
                env=env)  # fmt: skip
    assert tiny.exit_code == 1 and "leaves no room for memory" in tiny.output
