"""Summarizers: fold the previous summary and the items leaving memory into one new summary.

A summarizer is any async callable ``(previous_summary, items) -> str``. Two ship:

* :class:`ExtractiveSummarizer` (here), the offline default: deterministic, no model.
* :class:`~memstore.model_side.openai_summarizer.OpenAISummarizer`, which asks a model through the
  Responses API (its own module, so that this one never loads ``openai``).

Either may fail; the store records the failure in the compaction report and still bounds
memory (phase 3), so a summarizer error never escapes ``add()``. A summarizer that knows
what its call cost returns a :class:`SummaryText` (a ``str`` carrying ``.usage``); the store
copies that usage into the report.

The extractive summary is a fixed layout, most essential first::

    Current objective: <the newest user request>
    Constraints:
    - <user sentences with must / never / only / prefer / ...>
    Decisions:
    - <DECISION items>
    Important observations:
    - <HIGH-priority observations>
    Open questions:
    - <questions the user asked>

Facts are never paraphrased: each line is a sentence or an item as it was written (white
space flattened, clipped at :data:`MAX_LINE_WORDS`), so a later compaction parses the summary
back into its sections and folds new items in without a fact drifting. Over budget, the least
essential line goes first (an unknown section's lines, open questions, observations,
decisions, constraints; oldest first within each); the head is what phase 3 would keep too.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstore.core.tokens import TokenEstimator, WordEstimator
from memstore.core.values import MemoryItem, MemoryKind, Priority

Summarizer = Callable[[str | None, Sequence[MemoryItem]], Awaitable[str]]

#: Section headings of the extractive summary, in the order a reader (or model) needs them.
OBJECTIVE = "Current objective"
SECTIONS = ("Constraints", "Decisions", "Important observations", "Open questions")
#: When the summary is over budget, the least essential section loses its oldest line first.
#: Sections the extractive summarizer does not write (a model's summary may have them, e.g.
#: "Actions attempted") are sacrificed before any of these.
SACRIFICE_ORDER = ("Open questions", "Important observations", "Decisions", "Constraints")
#: 400 tokens: room for ~25 one-sentence facts, while a 900-token target keeps more than half
#: of itself for the recent items the model is working with.
DEFAULT_MAX_TOKENS = 400
#: Summary lines longer than this are cut: a summary is a digest, not a transcript.
MAX_LINE_WORDS = 60

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_GREETING = re.compile(
    r"^(hi|hello|hey|thanks|thank you|thx|cheers|good (morning|afternoon|evening)|ok(ay)?|"
    r"sure|great|cool|got it|sounds good|you're welcome|perfect|nice|awesome)\b[\s!.,:)]*"
    r"(there|all|team|again|a lot|so much)?[\s!.,:)]*$",
    re.IGNORECASE,
)
#: An acknowledgement: starts like a greeting and says little else ("Thanks, that helps.").
_ACK_START = re.compile(
    r"^(thanks|thank you|thx|ok(ay)?|great|cool|nice|perfect|sure|got it|sounds good)\b",
    re.IGNORECASE,
)
_ACK_MAX_WORDS = 4
_CONSTRAINT = re.compile(
    r"\b(must|never|always|don't|do not|only|prefer|remember|should|make sure|avoid|"
    r"required?|constraint|no more than|at most|at least|deadline)\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")


class SummaryText(str):
    """A summary (a ``str``) that carries the token usage of the call that produced it.

    Attributes:
        usage: ``{"input_tokens": .., "output_tokens": .., "total_tokens": ..}`` or ``None``.
    """

    usage: dict[str, Any] | None

    def __new__(cls, text: str, usage: Mapping[str, Any] | None = None) -> SummaryText:
        obj = super().__new__(cls, text)
        obj.usage = None if usage is None else dict(usage)
        return obj


def summarizer_name(summarizer: object) -> str:
    """The name recorded in reports: a ``name`` attribute, else the class or function name."""
    name = getattr(summarizer, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(summarizer, "__name__", type(summarizer).__name__)


def _normalize(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


def _clip(text: str) -> str:
    words = text.split()  # also flattens line breaks: one fact is one summary line
    return (
        " ".join(words)
        if len(words) <= MAX_LINE_WORDS
        else " ".join(words[:MAX_LINE_WORDS]) + " ..."
    )


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def _is_chatter(sentence: str) -> bool:
    if _GREETING.match(sentence):
        return True
    return bool(_ACK_START.match(sentence)) and len(sentence.split()) <= _ACK_MAX_WORDS


@dataclass
class _Digest:
    objective: str | None = None
    sections: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    _seen: set[str] = field(default_factory=set)

    def add(self, section: str, line: str) -> None:
        line = _clip(line)
        key = _normalize(line)
        if not key or key in self._seen:
            return  # repetition: it is already in the summary
        self._seen.add(key)
        self.sections.setdefault(section, []).append(line)

    def render(self) -> str:
        lines = [f"{OBJECTIVE}: {self.objective}"] if self.objective else []
        for section, entries in self._ordered():
            if entries:
                lines.append(f"{section}:")
                lines.extend(f"- {entry}" for entry in entries)
        return "\n".join(lines)

    def _ordered(self) -> list[tuple[str, list[str]]]:
        known = [(s, self.sections[s]) for s in SECTIONS]
        return known + [(s, e) for s, e in self.sections.items() if s not in SECTIONS]

    def drop_one(self) -> bool:
        """Remove the least essential line; ``False`` when only the objective is left."""
        extras = [s for s in self.sections if s not in SECTIONS]
        for section in (*extras, *SACRIFICE_ORDER):
            if self.sections[section]:
                self.sections[section].pop(0)
                return True
        return False


def parse_summary(text: str | None) -> _Digest:
    """Read a summary back into sections.

    The extractive layout round-trips exactly. Any other ``Heading:`` line (from a model's
    summary) opens a section of its own; lines before any heading count as observations.
    """
    digest = _Digest()
    current = "Important observations"
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(f"{OBJECTIVE}:"):
            digest.objective = _clip(line.split(":", 1)[1]) or None
            continue
        bullet = _BULLET.match(line)
        if bullet is None and line.endswith(":") and len(line.split()) <= 6:
            current = line[:-1].strip()
            digest.sections.setdefault(current, [])
            continue
        digest.add(current, line[bullet.end() :] if bullet else line)
    return digest


class ExtractiveSummarizer:
    """The offline default summarizer: deterministic, no model, no network.

    What it keeps, from the previous summary and the items:

    * the **current objective**: the newest user request (a user message's sentences that
      are neither chatter, constraints nor questions);
    * **constraints**: user sentences with must / never / only / prefer / ...;
    * **decisions**: DECISION items;
    * **important observations**: HIGH-priority tool observations and HIGH-priority
      sentences of messages;
    * **open questions**: questions the user asked (and HIGH-priority assistant questions).

    It drops greetings and acknowledgements, repeated lines, NORMAL and LOW tool output
    (verbose logs) and the assistant's narration. It fits ``max_tokens`` by dropping whole
    lines, least essential first (module docstring), never cutting one in half.

    Args:
        max_tokens: Budget of the summary text.
        estimator: Counts the budget; :class:`~memstore.WordEstimator` by default.
    """

    name = "extractive"

    def __init__(
        self, max_tokens: int = DEFAULT_MAX_TOKENS, estimator: TokenEstimator | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.estimator: TokenEstimator = estimator or WordEstimator()

    async def __call__(self, previous_summary: str | None, items: Sequence[MemoryItem]) -> str:
        """Return the new summary (the same inputs always give the same text)."""
        return self.summarize(previous_summary, items)

    def summarize(self, previous_summary: str | None, items: Sequence[MemoryItem]) -> str:
        """The synchronous core, used by replay's what-if simulation."""
        digest = parse_summary(previous_summary)
        for item in items:
            self._absorb(digest, item)
        text = digest.render()
        while self.estimator.count(text) > self.max_tokens and digest.drop_one():
            text = digest.render()
        if self.estimator.count(text) > self.max_tokens and digest.objective:
            digest.objective = None  # only the objective is left and it alone is too long
            text = digest.render()
        return text

    def _absorb(self, digest: _Digest, item: MemoryItem) -> None:
        if item.kind is MemoryKind.DECISION:
            digest.add("Decisions", item.content)
            return
        if item.kind is MemoryKind.TOOL_OBSERVATION:
            if item.priority is Priority.HIGH:
                digest.add("Important observations", item.content)
            return
        from_user = item.kind is MemoryKind.USER_MESSAGE
        high = item.priority is Priority.HIGH
        request: list[str] = []
        for sentence in _sentences(item.content):
            if _is_chatter(sentence):
                continue
            if sentence.endswith("?"):
                if from_user or high:
                    digest.add("Open questions", sentence)
            elif from_user and _CONSTRAINT.search(sentence):
                digest.add("Constraints", sentence)
                request.append(sentence)
            elif high:
                digest.add("Important observations", sentence)
            elif from_user:
                request.append(sentence)
        if from_user and request:
            digest.objective = _clip(" ".join(request))
