"""Credentials out of error text, before it is stored, logged or shown.

A model server may quote the key it was given (``401 Incorrect API key provided: sk-...``),
and a summarizer's error becomes a compaction report's ``summary_error``: stored forever,
printed by ``memstore reports``. Every model error passes through :func:`redact` first.

What counts as a credential: the client's own key (given explicitly), anything shaped like an
OpenAI-style key (``sk-...``), an ``Authorization: Bearer`` value, ``key=``/``token=``/
``password=``/``secret=`` assignments, and the user-info part of a URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI-style keys (sk-..., sk-proj-...), however the server clipped or starred them.
    (re.compile(r"\bsk-[A-Za-z0-9_*\-]{4,}"), f"sk-{REDACTED}"),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=*\-]+", re.IGNORECASE), rf"\1 {REDACTED}"),
    (
        re.compile(
            r"\b(api[_-]?key|access[_-]?token|token|password|passwd|secret)"
            r"(\"?\s*[:=]\s*\"?)[^\s\"',;&]+",
            re.IGNORECASE,
        ),
        rf"\1\2{REDACTED}",
    ),
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), rf"\1{REDACTED}@"),  # https://user:pass@host
)
#: Explicit secrets shorter than this are not replaced: they would match ordinary words.
_MIN_SECRET = 8


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every credential in it replaced by ``[redacted]``.

    Args:
        text: An error message (or any text about to be stored or shown).
        secrets: Values known to be secret (a client's API key); each is removed wherever it
            appears, whatever its shape.
    """
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
