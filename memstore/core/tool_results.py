"""Tool calls and results as facts: what a call was about, and what it returned.

A tool result answers with values (ids, names, numbers, statuses, dates), often as JSON, and
only its call says what it was about (``lookup_order({"order": 3})``). Both are read here:

* :func:`call_subject` names a call's subject from its arguments (``order 3``, ``Paris``);
* :func:`result_values` reduces a result to its values, compactly (``status shipped,
  carrier DHL, eta 2024-06-14``), keeping from a long text result the clauses that carry
  specifics;
* :func:`attributed` writes the one fact line: the subject, then what answered it;
* :func:`value_keys` names the fields a JSON result's line holds, and :func:`same_shape`
  tells whether an older line (one a summary kept, whose tool is no longer known) holds the
  same fields about the same subject: the older value of what the new line says.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from memstore.core.search_terms import STOPWORDS
from memstore.core.statements import salient_tokens, sentences

#: A result line holds at most this many words: a digest, not the log.
MAX_RESULT_WORDS = 45
#: Keys that name what something is (``order_id`` -> ``order``), not a value of it.
_ID_SUFFIX = re.compile(r"[_\s-]*(id|ids|number|num|no|code|ref|key)$", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CLAUSE = re.compile(r"\s*[;\n]\s*|,\s+(?=[A-Za-z])")
_MAX_VALUE_WORDS = 12
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
#: Argument names that say nothing about what the value is.
_GENERIC = frozenset(("", "value", "query", "q", "input", "text", "key", "arg"))
_VERB = re.compile(r"^(get|lookup|find|fetch|check|search)_?")
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
    repeats the ``subject``'s id is left out, and so is prose beside short values (a
    ticket's history next to its status)."""
    text = content.strip()
    if text[:1] in "{[":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            named = set(subject.lower().split())
            data = {k: v for k, v in data.items() if _keep_field(v, named)} or data
        if isinstance(data, (dict, list)):
            return _clip(_compact(data))
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    short = [i for i, line in enumerate(lines) if len(line.split()) <= _MAX_VALUE_WORDS]
    if len(lines) > 1 and short:
        # Lines of a record ("Status: escalated"): the short ones are its values.
        return _clip("; ".join(lines[i].rstrip(".") for i in short))
    if len(text.split()) <= MAX_RESULT_WORDS:
        return _clip("; ".join(lines))
    # One long text: the clauses with specifics, in their order, up to the limit.
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


def _keep_field(value: Any, subject_words: set[str]) -> bool:
    """A field worth a place on the line: not the subject's own id, not a paragraph."""
    if isinstance(value, str) and len(value.split()) > _MAX_VALUE_WORDS:
        return False
    return _scalar(value) is None or str(value).lower() not in subject_words


def call_subject(name: str, arguments: str) -> str:
    """What a call is about, from its arguments: its identifier (``order A-1042``), else
    the names it was given (``Lisbon``), else its short free text (``design review``)."""
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return _clip(arguments, 6) if arguments.strip() else ""
    pairs = [(str(k), _scalar(v) or "") for k, v in data.items() if _scalar(v) is not None]
    pairs = [(k, v) for k, v in pairs if 0 < len(v.split()) <= 6 and not _ISO_DATE.match(v)]

    def rank(pair: tuple[str, str]) -> int:
        key, value = pair
        if _ID_SUFFIX.search(key) or any(ch.isdigit() for ch in value):
            return 0  # an identifier
        return 1 if value[:1].isupper() else 2  # a name, then a word

    ranked = sorted(pairs, key=rank)
    if not ranked:
        return ""
    best = rank(ranked[0])
    parts = []
    for key, value in ranked[: 1 if best == 0 else 2]:
        if rank((key, value)) != best:
            break
        noun = humanize(_ID_SUFFIX.sub("", key)) or humanize(_VERB.sub("", name))
        parts.append(f"{noun} {value}" if best == 0 and noun not in _GENERIC else value)
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
    named = subject.lower().split(" ", 1)[-1]  # "order A-1042": the id is enough
    if subject.lower() in lowered or named in lowered:
        return values[:1].upper() + values[1:]
    return f"{subject[:1].upper()}{subject[1:]}: {values}"


def value_keys(content: str, subject: str = "") -> tuple[str, ...]:
    """The fields (humanized keys) of a JSON object result, in the order its line lists
    them (:func:`result_values`); ``()`` for any other result. Only a flat object's fields
    count: nested values make no ``key value`` pair of their own, and an empty value (null,
    ``""``, ``[]``, ``{}``) none at all, as the line leaves it out."""
    try:
        data = json.loads(content) if content.strip()[:1] == "{" else None
    except ValueError:
        return ()
    if not isinstance(data, dict):
        return ()
    named = set(subject.lower().split())
    kept = {k: v for k, v in data.items() if _keep_field(v, named)} or data
    shown = {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if any(_scalar(value) is None for value in shown.values()):
        return ()
    return tuple(humanize(str(key)) for key in shown)


def same_shape(line: str, label: str, keys: Sequence[str]) -> bool:
    """Whether ``line`` reads ``<label>: <key> <value>, <key> <value>, ...`` with exactly
    ``keys`` in that order: a line :func:`attributed` wrote from a result with those fields
    about that subject. Nothing else matches: a sentence, a speaker's statement, a result
    with other fields or about another subject."""
    if not keys or not label or not line.startswith(f"{label}: "):
        return False
    return _shape(label, tuple(keys)).fullmatch(line) is not None


@functools.lru_cache(maxsize=1024)
def _shape(label: str, keys: tuple[str, ...]) -> re.Pattern[str]:
    """One fold compares one result's shape with many lines: compiled once."""
    pattern = ", ".join(re.escape(key) + r" [^,]+" for key in keys)
    return re.compile(re.escape(label) + r": " + pattern)
