"""Actions as facts: every call and its output become one compact line, whatever the tool.

A tool's output answers with values (ids, names, paths, numbers, statuses, dates), and only
its call says what it was about. A forgotten call and its output become one line::

    get_order(#W123): delivered, 54.3, lamp, credit_card_4424

* **the call**: its name and its identifying arguments (short scalar ones, ids first);
* **the values**: a JSON output's scalar leaves, verbatim, each once (a string longer than
  :data:`MAX_VALUE_CHARS` is prose, left out); a test or build log's summary line,
  failures and expectations (:mod:`memstore.extraction.logs`); any other text's record lines
  (``Status: escalated``), else the clauses that hold specifics.

The values go without their keys. A key costs as many tokens as its value, and most values
name themselves (an id, a name, a path, a status); measured on a public agent benchmark's
sessions, a summary holding every key kept a fifth fewer of the forgotten values in the same
tokens, and one holding the keys of numbers and booleans only (``due_day: 3``) still kept
seven points fewer (docs/compaction.md). The output itself is never lost: recall finds it.

A call's line is its *slot*: a newer output of the same call (same name and arguments)
replaces the older line, so the newest value of a slot wins, and a value said again is
said once, by the newest line that has it (:class:`memstore.extraction.facts.FactList`). A
large output is cut into several lines of the same slot, so a summary may keep the part of
it that says most.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memstore.extraction.language import word_set
from memstore.extraction.logs import is_log, log_values
from memstore.extraction.specifics import has_digit, specifics
from memstore.extraction.statements import sentences

#: Between a call and what it returned.
ARROW = ": "
#: Between two values of a line.
VALUE_SEPARATOR = ", "
#: A string value longer than this is prose, not a value: it is left out of the line (the
#: call's label says what was done, and recall finds the text).
MAX_VALUE_CHARS = 60
#: One line holds at most this many values; a larger output becomes several lines of its
#: slot (a summary can keep the part of a large output that says most).
MAX_LINE_VALUES = 16
#: A call's label shows at most this many arguments, of at most this many characters each:
#: enough to say what it was about (an id, a name), not its payload.
MAX_LABEL_ARGUMENTS = 2
MAX_ARGUMENT_CHARS = 24
#: Keys that name what something is (``order_id``), ranked first among a call's arguments.
_ID_KEY = re.compile(r"(?:^|[_\s-])(?:id|ids|number|num|no|code|ref|key|name|path|file)$", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ACTION = re.compile(
    r"^(?P<label>[\w.:-]+\((?:[^()]|\([^()]*\))*\))(?:" + re.escape(ARROW) + r"(?P<values>.*))?$"
)
_CLAUSE = re.compile(r"\s*[;\n]\s*|,\s+(?=[^\W\d_])")
#: A text output's line up to this many words is one of its record's values.
MAX_RECORD_LINE_WORDS = 12
#: A text output of up to this many words is kept whole.
MAX_TEXT_WORDS = 45


def humanize(key: str) -> str:
    """``order_id`` -> ``order id``, ``etaDate`` -> ``eta date`` (for reading a subject)."""
    return " ".join(_CAMEL.sub(" ", key).replace("_", " ").replace("-", " ").split()).lower()


def scalar_text(value: Any) -> str | None:
    """A JSON scalar as the line writes it (``None`` for a container, a null or prose):
    numbers as Python writes them, booleans as JSON does."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = " ".join(str(value).split())
    if not text:
        return None
    return text if len(text) <= MAX_VALUE_CHARS else None


# -- a call ------------------------------------------------------------------------------------


def call_label(name: str, arguments: str | dict[str, Any]) -> str:
    """``name(key: value, ...)``: the call and its identifying arguments (module docstring);
    just ``name()`` when none is short and scalar."""
    data: Any = arguments
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            data = {"input": arguments}
    pairs = []
    if isinstance(data, dict):
        for key, value in data.items():
            text = scalar_text(value)
            if text is not None and len(text) <= MAX_ARGUMENT_CHARS:
                pairs.append((str(key), text))
            elif isinstance(value, list) and value and all(scalar_text(v) for v in value[:3]):
                listed = "/".join(str(scalar_text(v)) for v in value[:3])
                if len(listed) <= MAX_ARGUMENT_CHARS:
                    pairs.append((str(key), listed))
    ranked = sorted(
        range(len(pairs)),
        key=lambda i: (0 if _ID_KEY.search(pairs[i][0]) or has_digit(pairs[i][1]) else 1, i),
    )
    shown = sorted(ranked[:MAX_LABEL_ARGUMENTS])
    inside = ", ".join(pairs[i][1] for i in shown)
    return f"{name or 'tool'}({inside})"


def call_subject(arguments: str | dict[str, Any]) -> str:
    """What a call is about, in words: its identifying argument's value with the noun its key
    names (``order A-1042``), or its first short argument (``Lisbon``)."""
    label = call_label("", arguments)
    inside = label[label.index("(") + 1 : -1]
    if not inside:
        return ""
    key, _, value = inside.split(", ")[0].partition(": ")
    noun = humanize(_ID_KEY.sub("", key))
    return f"{noun} {value}".strip() if noun and has_digit(value) else value


def question_subject(question: str) -> str:
    """What a question is about, when it names it: an id or number with the word before it
    (``order 3``), else its names (``New York``); ``""`` otherwise."""
    parts = question.rstrip("?？").split()
    skip = word_set("function")
    for index, token in enumerate(parts):
        bare = token.strip(",.;:!?'\"()")
        if has_digit(bare):
            before = parts[index - 1].strip(",.;:'\"()").casefold() if index else ""
            noun = before if before.isalpha() and len(before) > 2 and before not in skip else ""
            return f"{noun} {bare}".strip()
    names = [s for s in specifics(question) if not has_digit(s)]
    return " ".join(names[:3])


# -- what it returned ----------------------------------------------------------------------


def _leaves(data: Any, out: list[str]) -> None:
    """The scalar leaves of ``data`` in order, as the line writes them."""
    if isinstance(data, dict):
        for value in data.values():
            _leaves(value, out)
    elif isinstance(data, list):
        for value in data:
            _leaves(value, out)
    else:
        text = scalar_text(data)
        if text is not None:
            out.append(text)


def result_values(content: str) -> list[str]:
    """What an output says, value by value, each once, in order (module docstring)."""
    text = content.strip()
    if text[:1] in "{[":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, (dict, list)):
            values: list[str] = []
            _leaves(data, values)
            return list(dict.fromkeys(values))
    if is_log(text):
        return log_values(text)
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and len(text.split()) <= MAX_TEXT_WORDS:
        return [lines[0]]
    # A record's lines (``Status: escalated``) are its values; of a longer line or text,
    # the clauses that name something.
    values = []
    for line in lines:
        if len(line.split()) <= MAX_RECORD_LINE_WORDS:
            values.append(line.rstrip("."))
            continue
        clauses = [c.strip(" .") for s in sentences(line) for c in _CLAUSE.split(s) if c.strip()]
        values += [c for c in clauses if specifics(c) or has_digit(c)]
    return list(dict.fromkeys(values))


def chunks(values: Sequence[str]) -> list[list[str]]:
    """``values`` cut into lines of at most :data:`MAX_LINE_VALUES` values each."""
    return [list(values[i : i + MAX_LINE_VALUES]) for i in range(0, len(values), MAX_LINE_VALUES)]


def action_line(label: str, values: Sequence[str]) -> str:
    """One action's line: the call's label, then what it returned (the label alone when
    it returned nothing its arguments did not say)."""
    said = VALUE_SEPARATOR.join(values)
    if not said:
        return label
    return f"{label}{ARROW}{said}" if label else said


def label_values(label: str) -> list[str]:
    """The argument values a call's label shows (:func:`call_label`)."""
    inside = label[label.find("(") + 1 : -1] if label.endswith(")") else ""
    return [value for value in inside.split(VALUE_SEPARATOR) if value]


def parse_values(said: str) -> list[str]:
    """The inverse of :func:`action_line`'s values, as near as text allows (a value that
    holds ``, `` is read as two)."""
    return [value for value in said.split(VALUE_SEPARATOR) if value]


#: What a task turn asked for that its calls did not say (``User asked: Jerry, 2024``),
#: and the specifics of a statement a summary had no room for (``User mentioned: B32``).
ASKED, MENTIONED = "asked", "mentioned"
_ASKED = re.compile(r"^(?P<who>[^\W\d_][\w.' -]{0,39}) (?P<verb>asked|mentioned): (?P<values>.+)$")


def asked_line(who: str, values: Sequence[str], verb: str = ASKED) -> str:
    """The line of what ``who`` asked for (or mentioned), value by value."""
    return f"{who} {verb}: {VALUE_SEPARATOR.join(values)}"


def parse_asked(line: str) -> tuple[str, list[str], str] | None:
    """(who, values, verb) of a line :func:`asked_line` wrote, else ``None``."""
    match = _ASKED.match(line)
    if match is None:
        return None
    return match["who"], parse_values(match["values"]), match["verb"]


def parse_action(line: str) -> tuple[str, list[str]] | None:
    """(label, values) of a line :func:`action_line` wrote with a label, else ``None``."""
    match = _ACTION.match(line)
    return None if match is None else (match["label"], parse_values(match["values"] or ""))
