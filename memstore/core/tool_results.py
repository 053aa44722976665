"""Tool calls and results as facts: what a call was about, and what it returned.

A tool result answers with values (ids, names, numbers, statuses, dates), often as JSON, and
only its call says what it was about (``lookup_order({"order": 3})``). Both are read here:

* :func:`call_subject` names a call's subject from its arguments (``order 3``, ``Paris``);
* :func:`result_values` reduces a result to its values, compactly (``status shipped,
  carrier DHL, eta 2024-06-14``), keeping from a long text result the clauses that carry
  specifics;
* :func:`attributed` writes the one fact line: the subject, then what answered it.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memstore.core.search_terms import STOPWORDS
from memstore.core.statements import salient_tokens, sentences, tidy

#: A result line holds at most this many words: a digest, not the log.
MAX_RESULT_WORDS = 45
#: Keys that name what something is (``order_id`` -> ``order``), not a value of it.
_ID_SUFFIX = re.compile(r"[_\s-]*(id|ids|number|num|no|code|ref|key)$", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CLAUSE = re.compile(r"\s*[;\n]\s*|,\s+(?=[A-Za-z])")
_MAX_VALUE_WORDS = 12
_MAX_LIST = 6


def humanize(key: str) -> str:
    """``order_id`` -> ``order id``, ``etaDate`` -> ``eta date``."""
    return " ".join(_CAMEL.sub(" ", key).replace("_", " ").replace("-", " ").split()).lower()


def _scalar(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    words = str(value).split()
    return " ".join(words[:_MAX_VALUE_WORDS]) + (" ..." if len(words) > _MAX_VALUE_WORDS else "")


def _pairs(data: dict[str, Any], depth: int = 0) -> list[str]:
    out = []
    for key, value in data.items():
        name = humanize(str(key))
        scalar = _scalar(value)
        if scalar is not None:
            out.append(f"{name} {scalar}")
        elif isinstance(value, dict) and depth < 2:
            out += _pairs(value, depth + 1)
        elif isinstance(value, list) and value:
            parts = [_scalar(v) or _compact(v, depth + 1) for v in value[:_MAX_LIST]]
            more = f" and {len(value) - _MAX_LIST} more" if len(value) > _MAX_LIST else ""
            out.append(f"{name} " + "; ".join(p for p in parts if p) + more)
    return out


def _compact(value: Any, depth: int = 0) -> str:
    if isinstance(value, dict):
        return ", ".join(_pairs(value, depth))
    if isinstance(value, list):
        return "; ".join(_compact(v, depth + 1) for v in value[:_MAX_LIST])
    return _scalar(value) or ""


def _clip(text: str, words: int = MAX_RESULT_WORDS) -> str:
    parts = text.split()
    return " ".join(parts) if len(parts) <= words else " ".join(parts[:words]) + " ..."


def result_values(content: str, subject: str = "") -> str:
    """What a tool result says, as one compact line (``""``: nothing); a field that only
    repeats the ``subject``'s id is left out."""
    text = content.strip()
    if text[:1] in "{[":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and subject:
            named = set(subject.lower().split())
            data = {
                k: v for k, v in data.items() if _scalar(v) is None or str(v).lower() not in named
            }
        if isinstance(data, (dict, list)):
            return _clip(_compact(data))
    if len(text.split()) <= MAX_RESULT_WORDS:
        return _clip("; ".join(tidy(line) for line in text.splitlines() if line.strip()))
    # A long text result: the clauses with specifics, in their order, up to the limit.
    clauses = [c for s in sentences(text) for c in _CLAUSE.split(s) if c.strip()]
    ranked = sorted(range(len(clauses)), key=lambda i: -len(salient_tokens(clauses[i])))
    chosen, used = set(), 0
    for index in ranked:
        size = len(clauses[index].split())
        if used + size > MAX_RESULT_WORDS or not salient_tokens(clauses[index]):
            continue
        chosen.add(index)
        used += size
    picked = [clauses[i].strip(" .") for i in sorted(chosen)]
    return "; ".join(picked) if picked else _clip(text)


def call_subject(name: str, arguments: str) -> str:
    """What a call is about, from its arguments: identifying ones first, at most two."""
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return _clip(arguments, 6) if arguments.strip() else ""
    pairs = [(str(k), v) for k, v in data.items() if _scalar(v) is not None]

    def rank(pair: tuple[str, Any]) -> int:
        key, value = pair
        identifying = bool(_ID_SUFFIX.search(key)) or any(ch.isdigit() for ch in str(value))
        return 0 if identifying else 1

    parts = []
    for key, value in sorted(pairs, key=rank)[:2]:
        shown = _scalar(value) or ""
        if len(shown.split()) > 6:
            continue
        noun = humanize(_ID_SUFFIX.sub("", key)) or humanize(
            re.sub(r"^(get|lookup|find|fetch|check|search)_?", "", name)
        )
        numeric = any(ch.isdigit() for ch in shown) and not any(ch.isalpha() for ch in shown)
        parts.append(f"{noun} {shown}" if numeric or _ID_SUFFIX.search(key) else shown)
    return ", ".join(p.strip() for p in parts if p.strip())


def question_subject(question: str) -> str:
    """What a question is about, when it names it: an id or number with the noun before
    it (``order 3``), else the names in it (``New York``); ``""`` otherwise."""
    tokens = question.rstrip("?").split()
    for index, token in enumerate(tokens):
        bare = token.strip(",.;:!?'\"()")
        if any(ch.isdigit() for ch in bare):
            before = tokens[index - 1].strip(",.;:'\"()").lower() if index else ""
            noun = (
                before if before.isalpha() and len(before) > 2 and before not in STOPWORDS else ""
            )
            return f"{noun} {bare}".strip()
    names = salient_tokens(question)
    return " ".join(names[:3])


def attributed(subject: str, values: str) -> str:
    """One fact line: ``Subject: values``, or just the values when they name the subject."""
    values = values.strip()
    if not subject:
        return values[:1].upper() + values[1:]
    lowered = values.lower()
    if subject.lower() in lowered:
        return values[:1].upper() + values[1:]
    return f"{subject[:1].upper()}{subject[1:]}: {values}"
