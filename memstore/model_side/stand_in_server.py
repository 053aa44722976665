"""An offline stand-in for OpenAI-compatible ``POST /v1/responses`` and ``/v1/embeddings``
endpoints (tests, demos).

The model side (summaries, the agent, ``memstore chat``, the code-review example) must be
testable and demonstrable without a key or a network. :class:`StandInModel` answers
Responses API requests with a *brain* (a function from the request's JSON to a
:class:`Reply`) or a queue of scripted replies, and records every request it receives. It is
reached either way the real client can be:

* :meth:`StandInModel.serve`: a small HTTP server on ``127.0.0.1`` and a free port (a
  thread), for code that builds its own client from ``OPENAI_BASE_URL`` (``memstore chat``);
* :meth:`StandInModel.client`: an ``openai.AsyncOpenAI`` whose HTTP transport calls the brain
  directly (no socket), for code that takes a client.

Replies are plain Responses API JSON built with :func:`text_reply` and
:func:`tool_call_reply`; a :class:`Reply` can also be an HTTP error, a delay (timeouts) or a
raw body (malformed replies). :func:`extractive_brain` is a stand-in summarization model: it
decodes the data an :class:`~memstore.OpenAISummarizer` sent and answers what the extractive
summarizer would, so a run through the real client can be compared with the offline one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from memstore.core.values import DEFAULT_KIND, MemoryItem, MemoryKind, Priority, parse_kind
from memstore.extraction.summarizer import ExtractiveSummarizer
from memstore.model_side.openai_summarizer import (
    SUMMARY_INSTRUCTIONS,
    parse_summary_request,
    room_of,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

#: The model name a stand-in reports when the request names none.
STANDIN_MODEL = "stand-in"
_ids = itertools.count(1)
_SUMMARY_HEAD = SUMMARY_INSTRUCTIONS.splitlines()[0]


@dataclass
class Reply:
    """What the stand-in answers to one request.

    Attributes:
        body: A JSON-able value (normally a Responses API response), or ``bytes`` sent as is.
        status: The HTTP status.
        delay: Seconds to wait before answering (to provoke client timeouts).
        headers: Extra response headers (``x-should-retry: false`` stops client retries).
    """

    body: Any
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        """The body as bytes."""
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


Brain = Callable[[dict[str, Any]], Reply]


def _usage(request: dict[str, Any], text: str) -> dict[str, Any]:
    # Words stand in for tokens: deterministic, and enough to see usage flow into reports.
    seen = len(json.dumps(request.get("input", "")).split()) + len(
        str(request.get("instructions") or "").split()
    )
    wrote = len(text.split())
    return {
        "input_tokens": seen,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": wrote,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": seen + wrote,
    }


def response_json(
    request: dict[str, Any], output: list[dict[str, Any]], *, status: str = "completed"
) -> dict[str, Any]:
    """A Responses API response object around ``output`` items."""
    text = " ".join(
        part.get("text", "") for item in output for part in item.get("content", []) or []
    ) + " ".join(item.get("arguments", "") for item in output)
    return {
        "id": f"resp_{next(_ids)}",
        "object": "response",
        "created_at": int(time.time()),
        "model": request.get("model") or STANDIN_MODEL,
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
        "usage": _usage(request, text),
    }


def text_reply(request: dict[str, Any], text: str, *, status: str = "completed") -> Reply:
    """An assistant message saying ``text``."""
    message = {
        "type": "message",
        "id": f"msg_{next(_ids)}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return Reply(response_json(request, [message], status=status))


def tool_call_reply(request: dict[str, Any], *calls: tuple[str, dict[str, Any]]) -> Reply:
    """The model asks for function tools: ``(name, arguments)`` pairs, in order."""
    output = [
        {
            "type": "function_call",
            "id": f"fc_{next(_ids)}",
            "call_id": f"call_{uuid.uuid4().hex[:12]}",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
        for name, arguments in calls
    ]
    return Reply(response_json(request, output))


def error_reply(status: int, message: str = "stand-in failure", *, retry: bool = False) -> Reply:
    """An HTTP error in the API's error format (``retry=False`` tells clients not to retry)."""
    body = {"error": {"message": message, "type": "server_error", "code": None}}
    return Reply(body, status=status, headers={"x-should-retry": "true" if retry else "false"})


#: Vector size of the stand-in's embeddings when the request names none.
STANDIN_DIMENSIONS = 64


def stand_in_vector(text: str, dimensions: int = STANDIN_DIMENSIONS) -> list[float]:
    """A deterministic embedding: each word adds +-1 to a dimension chosen by its hash, so
    texts sharing words point alike (a stand-in for a model's meaning, not one)."""
    vector = [0.0] * dimensions
    for word in text.casefold().split():
        digest = hashlib.sha256(word.strip(".,;:!?\"'()").encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    if not any(vector):
        vector[0] = 1.0  # a text of no word still gets a usable vector
    return vector


def embeddings_reply(request: dict[str, Any]) -> Reply:
    """What ``POST /v1/embeddings`` answers: :func:`stand_in_vector` per input, in order."""
    raw = request.get("input", [])
    texts = [raw] if isinstance(raw, str) else [str(text) for text in raw]
    dimensions = int(request.get("dimensions") or STANDIN_DIMENSIONS)
    data = [
        {"object": "embedding", "index": i, "embedding": stand_in_vector(text, dimensions)}
        for i, text in enumerate(texts)
    ]
    tokens = sum(len(text.split()) for text in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    body = {"object": "list", "data": data, "model": request.get("model"), "usage": usage}
    return Reply(body)


# -- reading a request ---------------------------------------------------------------------


def input_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` as a list of items (a string input is one user message)."""
    value = request.get("input", [])
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [item for item in value if isinstance(item, dict)]


def text_of(item: dict[str, Any]) -> str:
    """A message item's text (string content, or its text parts joined)."""
    content = item.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def current_turn(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The last user message's text and the items after it (this turn's tool calls/results)."""
    items = input_items(request)
    for index in range(len(items) - 1, -1, -1):
        if items[index].get("role") == "user":
            return text_of(items[index]), items[index + 1 :]
    return "", items


def is_summary_request(request: dict[str, Any]) -> bool:
    """Whether this is an :class:`~memstore.OpenAISummarizer` request."""
    return str(request.get("instructions") or "").startswith(_SUMMARY_HEAD)


def extractive_brain(max_tokens: int = 400) -> Brain:
    """A stand-in summarization model that answers what :class:`ExtractiveSummarizer` would.

    It decodes the fenced JSON lines the summarizer sent (so escaping must round-trip), runs
    the extractive summarizer on them within the room the instructions say (as a model that
    heeds them would), and replies with the text and a usage count.
    """
    summarizer = ExtractiveSummarizer(max_tokens=max_tokens)

    def brain(request: dict[str, Any]) -> Reply:
        previous, raw_items = parse_summary_request(text_of(input_items(request)[-1]))
        items = []
        for raw in raw_items:
            kind = parse_kind(raw["kind"])
            role = next(r for r, k in DEFAULT_KIND.items() if k is kind)
            items.append(
                MemoryItem(
                    id=str(raw["seq"]),
                    session_id="stand-in",
                    seq=int(raw["seq"]),
                    role=role,
                    kind=MemoryKind(kind),
                    priority=Priority[raw["priority"]],
                    content=raw["content"],
                    timestamp=datetime.now(UTC),
                    estimated_tokens=0,
                )
            )
        room = room_of(str(request.get("instructions") or ""))
        summary = summarizer.summarize("\n".join(previous) or None, items, max_tokens=room)
        return text_reply(request, summary)

    return brain


# -- the stand-in ----------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request the stand-in received: its path and JSON body."""

    path: str
    body: dict[str, Any]
    authorization: str | None = None


class StandInModel:
    """A scripted ``/v1/responses``: queued replies first, then the brain.

    Args:
        brain: Answers requests when no scripted reply is queued; without one an empty
            queue is an HTTP 500 (a test asked more than it scripted).
    """

    def __init__(self, brain: Brain | None = None) -> None:
        self.brain = brain
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()
        self._lock = threading.Lock()

    def queue(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        """Answer the next requests with these, in order (a callable gets the request)."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, oldest first."""
        return [r.body for r in self.requests]

    def answer(self, path: str, body: bytes, authorization: str | None = None) -> Reply:
        """Record one request and choose its reply (queued replies serve both endpoints;
        unscripted, ``/v1/embeddings`` answers :func:`embeddings_reply`)."""
        embeddings = path.rstrip("/").endswith("/embeddings")
        if not embeddings and not path.rstrip("/").endswith("/responses"):
            return error_reply(
                404, f"the stand-in serves /v1/responses and /v1/embeddings only, not {path}"
            )
        try:
            request = json.loads(body)
        except ValueError:
            return error_reply(400, "the request body is not JSON")
        with self._lock:
            self.requests.append(RecordedRequest(path, request, authorization))
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted if isinstance(scripted, Reply) else scripted(request)
        if embeddings:
            return embeddings_reply(request)
        if self.brain is None:
            return error_reply(500, "the stand-in has no reply scripted for this request")
        return self.brain(request)

    # -- as an HTTP server ---------------------------------------------------------------

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on ``127.0.0.1`` (a free port) in a thread; yield the base URL (``.../v1``)."""
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                reply = standin.answer(
                    self.path, self.rfile.read(length), self.headers.get("authorization")
                )
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.encoded()
                with contextlib.suppress(OSError):  # the client may have given up (timeout)
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: tests and demos print their own story

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="standin-model", daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    # -- as a client transport -------------------------------------------------------------

    def client(self, *, max_retries: int = 0, api_key: str = "stand-in") -> AsyncOpenAI:
        """An ``AsyncOpenAI`` whose requests go straight to this stand-in (no socket)."""
        from openai import AsyncOpenAI

        httpx = _httpx_module()

        async def handle(request: Any) -> Any:
            reply = self.answer(
                request.url.path, request.content, request.headers.get("authorization")
            )
            if reply.delay:
                # A transport enforces the client's timeout; this one has no socket to do it.
                read_timeout = (request.extensions.get("timeout") or {}).get("read")
                if read_timeout is not None and reply.delay > read_timeout:
                    await asyncio.sleep(read_timeout)
                    raise httpx.ReadTimeout("stand-in: no answer in time", request=request)
                await asyncio.sleep(reply.delay)
            headers = {"content-type": "application/json", **reply.headers}
            return httpx.Response(reply.status, content=reply.encoded(), headers=headers)

        return AsyncOpenAI(
            api_key=api_key,
            base_url="http://stand-in.invalid/v1",
            max_retries=max_retries,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)),
        )


def _httpx_module() -> Any:
    # openai 3.x talks through httpx2; earlier releases through httpx.
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - depends on the installed openai
        import httpx  # type: ignore[import-not-found, unused-ignore]

        return httpx
