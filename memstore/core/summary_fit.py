"""Fitting a summary into its room: whole lines go, those that say least per token first.

A summary has room for a few dozen lines out of hundreds of items. A later question can name
anything the conversation touched, so the lines are kept greedily by what they add: a line's
worth is its kind's weight, a share of its content score
(:func:`memstore.core.statements.score`) and the words it adds that no line kept before it
holds, per token it costs. What a section heading or a speaker's name costs is paid once,
by the first line that needs it. Among lines alike, the oldest goes first; a model's own
sections (``Actions attempted:``) go before any fact; a line that says nothing (``ok``) is
never kept. The extractive summary and a model's over-long reply are fitted the same way.
When even the room a compaction gave a summary shrinks (phase 3), :func:`trim_to_tokens`
keeps its head, whole lines only.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memstore.core.digest import SAID_SEPARATOR, Digest, heading_of, parse_summary, speaker_of
from memstore.core.facts import KIND_WEIGHT, Fact
from memstore.core.statements import SCORE_SHARE, Candidate, coverage_order, new_words, score

CountTokens = Callable[[str], int]

#: What being the newest line is worth: among lines alike, the older goes first.
RECENCY_WEIGHT = 0.5


@dataclass(eq=False)
class _Line:
    """One line of the digest while it is fitted: what it is and what keeping it is worth."""

    section: str
    entry: Any  # the Fact, or a model section's text
    weight: float
    position: int
    words: Mapping[str, int]  # what it adds to the summary (:func:`new_words`)
    heading: str  # the section it is listed under
    cost: int = 0  # its own tokens
    shares: tuple[str, ...] = ()  # what it shares with others: its heading, its speaker's label


def fit_summary(summary: str | Digest, budget: int, count: CountTokens) -> str:
    """``summary`` (a text, returned as is if it fits, or a :class:`Digest`, fitted in place)
    within ``budget`` tokens by ``count``, whole lines only, the least informative first
    (module docstring); ``""`` when not one line fits."""
    if isinstance(summary, str):
        if count(summary) <= budget:
            return summary
        summary = parse_summary(summary)
    digest = summary
    text = digest.render()
    if count(text) <= budget:
        return text
    lines = _lines(digest)
    shared: dict[str, int] = {}  # a heading's, or a speaker's line's start and end: paid once
    separator = count(SAID_SEPARATOR.strip())
    for line in lines:  # each line counted once: counting the text per drop is quadratic
        speaker = speaker_of(line.entry) if line.section == "fact" else ""
        if speaker:  # its part after the label; a separator too once the line holds another
            line.shares = (line.heading, f"{line.heading}\n- {speaker}:")
            line.cost = count(line.entry.text[len(speaker) + 2 :])
        else:
            line.shares = (line.heading,)
            line.cost = count(f"- {_text(line)}\n")
    for key in {key for line in lines for key in line.shares}:
        heading, _, label = key.rpartition("\n")
        shared[key] = count(f"{label}\n") if heading else count(f"{key}:\n")
    order = _keep_order(lines)
    _fit_frame(digest, budget, count)
    room = budget - count(digest.render_frame())
    kept: set[int] = set()
    opened: set[str] = set()
    used = 0
    # In order: a less worthy line never displaces a worthier one, but a shorter one may use
    # the room a long one left; a line that says nothing ("ok") uses none.
    for line in order:
        joins = len(line.shares) > 1 and line.shares[-1] in opened
        cost = line.cost + (separator if joins else 0)
        cost += sum(shared[key] for key in line.shares if key not in opened)
        if used + cost > room or (line.weight == 0 and not line.words):
            continue
        kept.add(id(line))
        opened.update(line.shares)
        used += cost
    _remove(digest, [line for line in lines if id(line) not in kept])
    text = digest.render()
    for line in reversed(order):  # the estimate was short: the least worth goes first
        if count(text) <= budget:
            break
        if id(line) in kept:
            kept.discard(id(line))
            _remove(digest, [line])
            text = digest.render()
    if count(text) > budget:  # only the frame is left (objective, date), and it is too long
        digest.objective = digest.said_on = None
        text = digest.render()
    return text if count(text) <= budget else ""


def _fit_frame(digest: Digest, budget: int, count: CountTokens) -> None:
    """Leave out what of the frame (objective, date) cannot be kept within ``budget`` even
    alone, before the lines are fitted, so its room goes to them: an objective over the
    budget by itself, then the date if the two still do not fit (the objective says what
    is asked)."""
    if count(digest.render_frame()) <= budget:
        return
    said_on, digest.said_on = digest.said_on, None
    if count(digest.render_frame()) > budget:
        digest.objective, digest.said_on = None, said_on
        if count(digest.render_frame()) > budget:
            digest.said_on = None


def _lines(digest: Digest) -> list[_Line]:
    lines = [
        _Line("fact", fact, _worth_alone(fact), i, new_words(fact.text), heading_of(fact))
        for i, fact in enumerate(digest.facts.facts)
    ]
    offset = len(lines)
    lines += [
        _Line("question", q, _worth_alone(q), offset + i, new_words(q.text), "Open questions")
        for i, q in enumerate(digest.questions)
    ]
    for heading, entries in digest.other.items():
        lines += [_Line(heading, e, -math.inf, i, {}, heading) for i, e in enumerate(entries)]
    return lines


def _worth_alone(fact: Fact) -> float:
    """What a line is worth before the words it adds: its kind's weight (a constraint or a
    decision was set down on purpose) and a share of its content score."""
    return KIND_WEIGHT.get(fact.kind, 0.0) + SCORE_SHARE * score(fact.text)


def _text(line: _Line) -> str:
    return line.entry if isinstance(line.entry, str) else str(line.entry.text)


def _keep_order(lines: list[_Line]) -> list[_Line]:
    """Lines in the order they are worth keeping (:func:`coverage_order`); among lines
    alike, the newer first: the oldest goes first. A model's own sections come last."""
    newest = max((line.position for line in lines), default=0) or 1
    ranked = [line for line in lines if line.weight > -math.inf]
    order = coverage_order(
        [
            Candidate(
                line.words,
                line.weight + RECENCY_WEIGHT * line.position / newest,
                line.cost,
                line.position,
            )
            for line in ranked
        ]
    )
    others = [line for line in lines if line.weight == -math.inf]  # the newest of them first
    return [ranked[n] for n in order] + sorted(others, key=lambda line: -line.position)


def _remove(digest: Digest, gone: list[_Line]) -> None:
    facts = {id(line.entry) for line in gone if line.section == "fact"}
    questions = {id(line.entry) for line in gone if line.section == "question"}
    digest.facts.discard(facts)
    digest.questions = [q for q in digest.questions if id(q) not in questions]
    for heading, entries in digest.other.items():
        dropped = {line.position for line in gone if line.section == heading}
        digest.other[heading] = [e for i, e in enumerate(entries) if i not in dropped]


_PIECES = re.compile(r"\S+\s*")
_LINES = re.compile(r"[^\n]*\n*")


def trim_to_tokens(text: str, budget: int, count_tokens: CountTokens) -> str:
    """The longest prefix of ``text`` counting at most ``budget`` tokens: whole lines when
    ``text`` has several (half a line can invert a fact; a stub such as ``Current`` says
    nothing), else words. The head is kept because both shipped summarizers put the
    objective and the constraints first; a heading left with no line under it goes too.
    """
    if "\n" in text.strip():
        lines = [line for line in _LINES.findall(text) if line]
        kept = _longest_prefix(lines, budget, count_tokens)
        while kept.endswith(":") and "\n" in kept:  # a heading whose lines did not fit
            kept = kept.rsplit("\n", 1)[0].rstrip()
        return "" if kept.endswith(":") else kept
    return _longest_prefix(_PIECES.findall(text), budget, count_tokens)


def _longest_prefix(pieces: list[str], budget: int, count_tokens: CountTokens) -> str:
    low, high = 0, len(pieces)
    while low < high:  # binary search: O(log n) token counts instead of n
        mid = (low + high + 1) // 2
        if count_tokens("".join(pieces[:mid]).strip()) <= budget:
            low = mid
        else:
            high = mid - 1
    return "".join(pieces[:low]).strip()
