"""Calling the Responses API: the one place the model side talks to ``openai``.

:func:`create_response` wraps ``client.responses.create`` so that every way a call can fail
becomes one :class:`~memstore.errors.ModelCallError` with a one-line message: an HTTP error
(with its status), a timeout, an unreachable server, or a reply that is not a Responses API
response (not JSON, the wrong shape, ``status: failed``). Credentials are redacted from every
such message (:mod:`memstore.core.redaction`): a server may echo the key it was sent. Callers (the
summarizer, the agent) then decide: a summarizer lets the store record the error, the agent
raises it to its caller.

:class:`ResponsesCaller` is the base of the model's summarizer and extractor: a client, a
model, a timeout and an output cap, and one request whose data is one ``user`` message.

``openai`` is imported inside the functions, never at module import, so the parts of memstore
that need no model (``memstore show``, the policy, replay) do not pay for loading it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from memstore.config import ModelSettings
from memstore.core.redaction import redact
from memstore.errors import ModelCallError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

#: Server messages are quoted in errors, clipped: enough to act on, never a wall of text.
MAX_SERVER_MESSAGE_CHARS = 200
#: The usage fields a report keeps (plain ints; details such as cached tokens are dropped).
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


def one_line(text: object, limit: int = MAX_SERVER_MESSAGE_CHARS) -> str:
    """``text`` on one line, clipped to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def make_client(settings: ModelSettings, *, max_retries: int = 2) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client for ``settings`` (the key stays in memory only).

    Args:
        settings: Key, base URL and model, usually :meth:`ModelSettings.from_env`.
        max_retries: Retries of a failed request (connection errors, 408/409/429/5xx), with
            the client's backoff; each one is bounded by the call's timeout.
    """
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        api_key=settings.api_key, base_url=settings.base_url, max_retries=max_retries
    )


def _server_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return one_line(inner["message"])
    return one_line(getattr(error, "message", "") or error)


async def create_response(client: AsyncOpenAI, *, timeout: float, **request: Any) -> Any:
    """``client.responses.create(**request)``, with every failure as :class:`ModelCallError`.

    Args:
        client: The client (``openai.AsyncOpenAI`` or a compatible object).
        timeout: Seconds for each HTTP attempt.
        request: The Responses API parameters (``model``, ``instructions``, ``input``, ...).

    Returns:
        The ``openai.types.responses.Response``; its ``output`` is a list of typed items.
        A response with ``status: incomplete`` is returned (the caller decides).

    Raises:
        ModelCallError: HTTP error, timeout, unreachable server, malformed or failed reply.
    """
    try:
        return await _create_response(client, timeout=timeout, **request)
    except ModelCallError as error:  # a server may quote the key it was given
        secrets = [getattr(client, "api_key", None)]
        raise ModelCallError(redact(str(error), secrets), status_code=error.status_code) from None


async def _create_response(client: AsyncOpenAI, *, timeout: float, **request: Any) -> Any:
    import openai
    from openai.types.responses import Response

    try:
        response = await client.responses.create(timeout=timeout, **request)
    except openai.APITimeoutError:
        raise ModelCallError(f"the model server did not answer within {timeout:g}s") from None
    except openai.APIConnectionError as error:
        raise ModelCallError(
            f"cannot reach the model server at {getattr(client, 'base_url', '?')} "
            f"({one_line(error)})"
        ) from None
    except openai.APIStatusError as error:
        raise ModelCallError(
            f"the model server answered HTTP {error.status_code}: {_server_message(error)}",
            status_code=error.status_code,
        ) from None
    except openai.OpenAIError as error:
        raise ModelCallError(f"the model call failed: {one_line(error)}") from None
    except (ValueError, TypeError, AttributeError, KeyError) as error:
        # The client could not decode the body (not JSON) or build a Response from it.
        raise ModelCallError(
            f"malformed reply from the model server ({type(error).__name__}: {one_line(error)})"
        ) from None
    if not isinstance(response, Response) or not isinstance(response.output, list):
        raise ModelCallError(
            f"malformed reply from the model server (expected a response object, "
            f"got {type(response).__name__})"
        )
    if response.error is not None or response.status == "failed":
        detail = one_line(response.error.message) if response.error else "status failed"
        raise ModelCallError(f"the model failed to answer: {detail}")
    for output in response.output:
        if not isinstance(getattr(output, "type", None), str):
            raise ModelCallError(
                "malformed reply from the model server (an output item has no type)"
            )
    return response


def usage_of(response: Any) -> dict[str, int] | None:
    """The response's token usage as a plain dict (``input_tokens``, ``output_tokens``,
    ``total_tokens``), or ``None`` when the server reported none."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    out: dict[str, int] = {}
    for name in USAGE_FIELDS:
        value = getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    if out and "total_tokens" not in out:
        out["total_tokens"] = out.get("input_tokens", 0) + out.get("output_tokens", 0)
    return out or None


def add_usage(total: dict[str, int] | None, more: dict[str, int] | None) -> dict[str, int] | None:
    """Sum two usage dicts field by field (``None`` is nothing)."""
    if more is None:
        return total
    if total is None:
        return dict(more)
    return {name: total.get(name, 0) + more.get(name, 0) for name in {*total, *more}}


def output_text(response: Any) -> str:
    """The text of the response's assistant messages (``response.output_text``), stripped."""
    try:
        text = response.output_text
    except (AttributeError, TypeError):
        raise ModelCallError("malformed reply from the model server (unreadable text)") from None
    return text.strip() if isinstance(text, str) else ""


class ResponsesCaller:
    """What a model's summarizer and extractor share: one Responses API request per call.

    Args:
        client: An ``openai.AsyncOpenAI`` (or a client pointed at any compatible server).
        model: The model name; the caller's ``name`` is ``openai:MODEL``.
        timeout: Seconds for each HTTP attempt (the client's retries come on top); the
            class's :attr:`default_timeout` by default.
        max_output_tokens: Upper bound of what the model may write; the class's
            :attr:`default_max_output_tokens` by default.
    """

    #: Each subclass says its own: what one of its calls needs.
    default_timeout: ClassVar[float] = 30.0
    default_max_output_tokens: ClassVar[int] = 1500

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.timeout = self.default_timeout if timeout is None else timeout
        self.max_output_tokens = max_output_tokens or self.default_max_output_tokens
        self.name = f"openai:{model}"

    async def ask(
        self, instructions: str, data: str, *, max_output_tokens: int | None = None, **request: Any
    ) -> Any:
        """One request: ``instructions``, and ``data`` as the one ``user`` message.

        Args:
            instructions: The request's instructions.
            data: The user message (fenced data).
            max_output_tokens: This request's cap (default: the caller's).
            request: More request fields (``text`` for structured output).

        Returns:
            The Responses API response.

        Raises:
            ModelCallError: as :func:`create_response`.
        """
        return await create_response(
            self.client,
            timeout=self.timeout,
            model=self.model,
            instructions=instructions,
            input=[{"role": "user", "content": data}],
            max_output_tokens=max_output_tokens or self.max_output_tokens,
            **request,
        )
