"""Summarizers: fold the previous summary and the items leaving memory into one new summary.

A summarizer is any async callable ``(previous_summary, items) -> str``. Two ship:

* :class:`ExtractiveSummarizer` (here), the offline default: deterministic, no model.
* :class:`~memstore.model_side.openai_summarizer.OpenAISummarizer`, which asks a model
  through the Responses API.

A summarizer that also takes keyword arguments ``max_tokens`` and ``count_tokens`` is told
the room the compaction's target leaves it and how the session counts tokens
(:func:`memstore.core.policy.summarizer_options`); others are called as before.

Either may fail; the store records the failure in the compaction report and still bounds
memory (phase 3), so a summarizer error never escapes ``add()``. A summarizer that knows
what its call cost returns a :class:`SummaryText` (a ``str`` carrying ``.usage``); the store
copies that usage into the report. One that found nothing worth keeping returns
:meth:`SummaryText.nothing`, which is not an error.

The extractive summary is a fixed layout of facts (:mod:`memstore.core.facts`), most
essential first::

    Current objective: <the newest request>
    Constraints:
    - <the user's musts and nevers>
    Decisions:
    - <DECISION items>
    Facts:
    - <answers, tool results and statements: "Order 3: courier DPD, due day 4">
    On 8 May 2023:
    - <what was said that day: "Caroline: I went to a support group yesterday (7 May 2023).">
    Open questions:
    - <the user's questions nothing answered>

Lines are never paraphrased, so a later compaction reads the summary back
(:func:`parse_summary`) and folds new items in without a fact drifting. Over budget, whole
lines go, the least informative first and, among those alike, the oldest; a model's own
sections (``Actions attempted:``) go before any of these (:func:`fit_summary`, which fits a
model's summary the same way).
"""

from __future__ import annotations

import heapq
import inspect
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstore.core.dates import parse_formatted
from memstore.core.facts import (
    CONSTRAINT,
    DECISION,
    FACT,
    QUESTION,
    Fact,
    FactList,
    extract,
    make_fact,
)
from memstore.core.statements import content_words
from memstore.core.tokens import TokenEstimator, WordEstimator
from memstore.core.values import SUMMARY_OVERHEAD_TOKENS, MemoryItem

Summarizer = Callable[[str | None, Sequence[MemoryItem]], Awaitable[str]]
CountTokens = Callable[[str], int]

OBJECTIVE = "Current objective"
SESSION_DATE = "Session date"
#: Section headings, in the order they are written.
SECTION_OF = {
    CONSTRAINT: "Constraints",
    DECISION: "Decisions",
    FACT: "Facts",
    QUESTION: "Open questions",
}
#: Headings of earlier layouts (and a model's usual words) read as the same sections.
_ALIASES = {"important observations": FACT, "confirmed facts": FACT, "facts": FACT,
            "constraints": CONSTRAINT, "decisions": DECISION, "open questions": QUESTION,
            "unresolved questions": QUESTION}  # fmt: skip
#: A summary of its own that is not asked for a budget: room for ~25 facts while a
#: 900-token target keeps more than half of itself for the recent items.
DEFAULT_MAX_TOKENS = 400
#: What the words a line shares with the rest of the digest are worth beside its own
#: weight (a line's weight is its own content score, 3 to 15).
TOPIC_WEIGHT = 8.0
#: What a topic word is still worth to the next line once a kept line holds it.
COVERED = 0.25
#: A word counts as a topic once this many lines hold it.
TOPIC_MIN_LINES = 3
#: What being the newest line is worth: among lines alike, the older goes first.
RECENCY_WEIGHT = 0.5
_LABEL = re.compile(r"^[^:]{1,40}:\s")
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_DATED = re.compile(r"^On (\d{1,2} [A-Z][a-z]+ \d{4}):$")


class SummaryText(str):
    """A summary (a ``str``) that carries the token usage of the call that produced it.

    Attributes:
        usage: ``{"input_tokens": .., "output_tokens": .., "total_tokens": ..}`` or ``None``.
        kept_nothing: The summarizer read the items and found nothing worth keeping (an
            empty text that is an answer, not a failure).
    """

    usage: dict[str, Any] | None
    kept_nothing: bool

    def __new__(cls, text: str, usage: Mapping[str, Any] | None = None) -> SummaryText:
        obj = super().__new__(cls, text)
        obj.usage = None if usage is None else dict(usage)
        obj.kept_nothing = False
        return obj

    @classmethod
    def nothing(cls) -> SummaryText:
        """The answer of a summarizer that found nothing worth keeping."""
        obj = cls("")
        obj.kept_nothing = True
        return obj


def summarizer_name(summarizer: object) -> str:
    """The name recorded in reports: a ``name`` attribute, else the class or function name."""
    name = getattr(summarizer, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(summarizer, "__name__", type(summarizer).__name__)


def summary_room(
    budget: int, remaining: Sequence[MemoryItem], leaving: Sequence[MemoryItem]
) -> int:
    """Tokens a new summary may take: the compaction's ``budget`` less the ``remaining``
    items that stay (those not ``leaving``: protected and pending ones) and the summary's
    framing; never below 0."""
    gone = {item.id for item in leaving}
    staying = sum(item.cost for item in remaining if item.id not in gone)
    return max(budget - staying - SUMMARY_OVERHEAD_TOKENS, 0)


def summarizer_options(
    summarizer: Callable[..., Any], room: int, count_tokens: CountTokens
) -> dict[str, Any]:
    """The keyword arguments ``summarizer`` accepts among ``max_tokens`` (``room``: what
    the compaction's target leaves the summary) and ``count_tokens`` (the session's
    estimator); ``{}`` for a summarizer that takes only the summary and the items."""
    try:
        parameters = inspect.signature(summarizer).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: call it the plain way
        return {}
    names = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        names |= {"max_tokens", "count_tokens"}
    options: dict[str, Any] = {}
    if "max_tokens" in names:
        options["max_tokens"] = room
    if "count_tokens" in names:
        options["count_tokens"] = count_tokens
    return options


@dataclass
class Digest:
    """A summary as values: the objective, the facts in order, and a model's other sections."""

    objective: str | None = None
    said_on: str | None = None
    facts: FactList = field(default_factory=FactList)
    questions: list[Fact] = field(default_factory=list)
    other: dict[str, list[str]] = field(default_factory=dict)

    def render_frame(self) -> str:
        """What the digest costs without its droppable lines: the objective and the date
        (headings are left to the exact count, since one whose lines all go costs nothing)."""
        frame = [f"{OBJECTIVE}: {self.objective}"] if self.objective else []
        frame += [f"{SESSION_DATE}: {self.said_on}"] if self.said_on else []
        return "\n".join(frame)

    def render(self) -> str:
        """The summary text (module docstring)."""
        lines = [f"{OBJECTIVE}: {self.objective}"] if self.objective else []
        if self.said_on and not any(f.said_on == self.said_on for f in self.facts.facts):
            lines.append(f"{SESSION_DATE}: {self.said_on}")  # it dates the next items
        groups: dict[str, list[str]] = {}
        for fact in self.facts.facts:
            heading = SECTION_OF[fact.kind]
            if fact.kind == FACT and fact.said_on:
                heading = f"On {fact.said_on}"
            groups.setdefault(heading, []).append(fact.text)
        if self.questions:
            groups["Open questions"] = [q.text for q in self.questions]
        order = ["Constraints", "Decisions", "Facts"]
        dated = [h for h in groups if h.startswith("On ")]
        for heading in [*order, *dated, "Open questions"]:
            if groups.get(heading):
                lines.append(f"{heading}:")
                lines.extend(f"- {text}" for text in groups[heading])
        for heading, entries in self.other.items():
            if entries:
                lines.append(f"{heading}:")
                lines.extend(f"- {text}" for text in entries)
        return "\n".join(lines)


def parse_summary(text: str | None) -> Digest:
    """Read a summary back into a :class:`Digest`.

    The extractive layout round-trips exactly. A model's other ``Heading:`` lines open
    sections of their own; lines before any heading count as facts.
    """
    digest = Digest()
    kind: str | None = FACT
    heading, said_on = "Facts", None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(f"{OBJECTIVE}:"):
            digest.objective = line.split(":", 1)[1].strip() or None
            continue
        if line.startswith(f"{SESSION_DATE}:"):
            day = line.split(":", 1)[1].strip()
            digest.said_on = day if parse_formatted(day) else None
            continue
        bullet = _BULLET.match(line)
        if bullet is None and line.endswith(":") and len(line.split()) <= 6:
            heading = line[:-1].strip()
            dated = _DATED.match(line)
            said_on = dated[1] if dated and parse_formatted(dated[1]) else None
            kind = FACT if said_on else _ALIASES.get(heading.lower())
            continue
        entry = line[bullet.end() :] if bullet else line
        if kind == QUESTION:
            digest.questions.append(make_fact(entry, kind=QUESTION))
        elif kind is not None:
            digest.facts.add(make_fact(entry, said_on=said_on, kind=kind))
        else:
            digest.other.setdefault(heading, []).append(entry)
    return digest


class ExtractiveSummarizer:
    """The offline default summarizer: deterministic, no model, no network.

    It keeps what happened (:mod:`memstore.core.facts`): the newest request, the user's
    constraints, decisions, answered questions and tool results as attributed facts,
    statements about people, places, dates, numbers, plans and preferences in their own
    words with the day they were said, and the questions nothing answered. It drops
    greetings, acknowledgements, repetition and LOW tool output, and fits its budget by
    dropping whole lines, least informative and oldest first.

    Args:
        max_tokens: A cap on the summary. A compaction gives the summarizer the room its
            target leaves (in the session's tokens), and the summary fills at most that
            room, and at most this cap when one is set; called without a room, the
            summary fits this cap, else :data:`DEFAULT_MAX_TOKENS`.
        estimator: Counts the cap when the compaction does not pass the session's own
            count; :class:`~memstore.WordEstimator` by default.
    """

    name = "extractive"

    def __init__(
        self, max_tokens: int | None = None, estimator: TokenEstimator | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.estimator: TokenEstimator = estimator or WordEstimator()

    async def __call__(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
    ) -> str:
        """Return the new summary (the same inputs always give the same text)."""
        return self.summarize(
            previous_summary, items, max_tokens=max_tokens, count_tokens=count_tokens
        )

    def summarize(
        self,
        previous_summary: str | None,
        items: Sequence[MemoryItem],
        *,
        max_tokens: int | None = None,
        count_tokens: CountTokens | None = None,
    ) -> str:
        """The synchronous core, used by replay's what-if simulation.

        Args:
            previous_summary: The summary so far, folded in.
            items: The items leaving working memory, oldest first.
            max_tokens: The room the compaction leaves the summary (capped by the
                summarizer's own ``max_tokens`` when it has one).
            count_tokens: How that room is counted (default: the summarizer's estimator).
        """
        digest = parse_summary(previous_summary)
        said_on = digest.said_on or next(
            (f.said_on for f in reversed(digest.facts.facts) if f.said_on), None
        )
        found = extract(items, said_on=said_on, objective=digest.objective)
        for fact in found.facts:
            digest.facts.add(fact)
        known = {q.text.lower() for q in digest.questions}
        digest.questions += [q for q in found.open_questions if q.text.lower() not in known]
        digest.objective = found.objective
        digest.said_on = found.said_on
        if not digest.render().strip():
            return SummaryText.nothing()  # nothing worth keeping: an answer, not a failure
        budget = self.max_tokens if max_tokens is None else max_tokens
        if self.max_tokens is not None:
            budget = min(budget if budget is not None else self.max_tokens, self.max_tokens)
        text = fit_summary(
            digest,
            DEFAULT_MAX_TOKENS if budget is None else budget,
            count_tokens or self.estimator.count,
        )
        # "" when not one line fits the room: the compaction records that it had no summary.
        return text


@dataclass(eq=False)
class _Line:
    """One line of the digest while it is fitted: what it is and what keeping it is worth."""

    section: str
    entry: Any  # the Fact, or a model section's text
    weight: float
    position: int
    words: frozenset[str]
    cost: int = 0


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
    for line in lines:  # each line counted once: counting the text per drop is quadratic
        line.cost = count(f"- {_text(line)}") + 1
    order = _keep_order(lines)
    room = budget - count(digest.render_frame())
    kept, used = set(), 0
    for line in order:  # in order: a less worthy line never displaces a worthier one, but a
        if used + line.cost > room:  # shorter one may use the room a long one left
            continue
        kept.add(id(line))
        used += line.cost
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


def _lines(digest: Digest) -> list[_Line]:
    lines = [
        _Line("fact", fact, fact.weight, i, _topic_words(fact.text))
        for i, fact in enumerate(digest.facts.facts)
    ]
    offset = len(lines)
    lines += [
        _Line("question", q, q.weight, offset + i, _topic_words(q.text))
        for i, q in enumerate(digest.questions)
    ]
    for heading, entries in digest.other.items():
        lines += [_Line(heading, e, -math.inf, i, frozenset()) for i, e in enumerate(entries)]
    return lines


def _topic_words(text: str) -> frozenset[str]:
    """A line's content words, its speaker or subject label left out (every line has one)."""
    return frozenset(content_words(_LABEL.sub("", text, count=1)))


def _text(line: _Line) -> str:
    return line.entry if isinstance(line.entry, str) else str(line.entry.text)


def _keep_order(lines: list[_Line]) -> list[_Line]:
    """Lines in the order they are worth keeping: greedily, the most said per token, where
    what a line says is its own weight plus the words it shares with the rest of the
    digest that no line kept before it holds (what a conversation keeps coming back to is
    what later questions ask about; a second line on the same words adds little). Among
    lines alike, the newer first: the oldest goes first."""
    frequency: dict[str, int] = {}
    for line in lines:
        for word in line.words:
            frequency[word] = frequency.get(word, 0) + 1
    top = max(frequency.values(), default=1)
    share = {word: n / top for word, n in frequency.items() if n >= TOPIC_MIN_LINES}
    newest = max((line.position for line in lines), default=0) or 1

    def worth(line: _Line) -> float:
        topical = sum(share.get(word, 0.0) for word in line.words)
        recency = RECENCY_WEIGHT * line.position / newest
        return (line.weight + TOPIC_WEIGHT * topical + recency) / max(line.cost, 1)

    # Lazy greedy: a line's worth only falls as its words are covered, so a line whose
    # fresh worth still tops the heap is the best one (no need to re-rate all of them).
    ranked = [line for line in lines if line.weight > -math.inf]
    heap = [(-worth(line), -line.position, n) for n, line in enumerate(ranked)]
    heapq.heapify(heap)
    order: list[_Line] = []
    while heap:
        _, newer, n = heapq.heappop(heap)
        fresh = worth(ranked[n])
        if heap and fresh < -heap[0][0]:
            heapq.heappush(heap, (-fresh, newer, n))
            continue
        order.append(ranked[n])
        for word in ranked[n].words:  # covered: the next line on these words says less
            if word in share:
                share[word] *= COVERED
    # A model's own sections last, the newest of them first.
    others = [line for line in lines if line.weight == -math.inf]
    return order + sorted(others, key=lambda line: -line.position)


def _remove(digest: Digest, gone: list[_Line]) -> None:
    facts = {id(line.entry) for line in gone if line.section == "fact"}
    questions = {id(line.entry) for line in gone if line.section == "question"}
    digest.facts.discard(facts)
    digest.questions = [q for q in digest.questions if id(q) not in questions]
    for heading, entries in digest.other.items():
        dropped = {line.position for line in gone if line.section == heading}
        digest.other[heading] = [e for i, e in enumerate(entries) if i not in dropped]
