"""Facts: what a run of items established, each as one short line that says whose it is.

Reading the items oldest first:

* **A question and its answer become one fact.** A question is answered by what follows it
  from someone else: a tool result (its values, attributed to what the call was about) or a
  reply (its statements, in the replier's words). The fact is the subject and what answered
  it (``Order 3: courier DPD, due day 4``), never the question's wording. A user's question
  that the conversation moved on from unanswered is an *open question*; the user's last
  question, with nothing after it yet, is the current objective (its answer may be on its
  way).
* **Tool results keep their values** (:mod:`memstore.core.tool_results`); LOW-priority
  results are noise and left out.
* **Statements keep their own words**: the sentences of a turn that say something
  (:func:`memstore.core.statements.score`), with the speaker (a ``Name:`` the text starts
  with, else ``User`` / ``Assistant``) and the day they were said.
* **Dates.** A developer note that only states a date (``New conversation session on 8 May
  2023.``) dates the items after it and is not itself a fact; relative dates in a dated
  statement are pinned (``yesterday (7 May 2023)``).
* **Decisions** (DECISION items) and the user's **constraints** (must, never, only, ...) are
  facts of their own kinds; reasoning items are the model's thinking, not facts.
* A fact said again is kept once; a fact with an ``attribute`` replaces an older one with
  the same subject and attribute (a newer status of the same order: a tool result's slot is
  its subject and its tool, or its fields when no call named a tool). A line read back from
  a summary no longer knows its slot: a JSON result's new line replaces it when it has the
  same subject and the same fields (:func:`memstore.core.tool_results.same_shape`), so a
  newer value replaces an older one across compactions too. Statements, answers in the
  replier's words, constraints and decisions never replace one another.

Pure: no I/O. The extractive summarizer builds its lines from these, and long-term memory
consolidation reads them too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from memstore.core.dates import format_date, parse_formatted, pin_relative, session_date
from memstore.core.slots import slot_key
from memstore.core.statements import (
    SPEAKER,
    best_of,
    content_words,
    is_chatter,
    is_constraint,
    is_question,
    is_request,
    salient_tokens,
    score,
    sentences,
    tidy,
)
from memstore.core.tool_results import (
    attributed,
    call_subject,
    question_subject,
    result_values,
    same_shape,
    value_keys,
)
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority

FACT, DECISION, CONSTRAINT, QUESTION = "fact", "decision", "constraint", "question"
#: Added to a line's content score: what the user or the application set down explicitly
#: outweighs what was said in passing.
KIND_WEIGHT = {FACT: 0.0, DECISION: 8.0, CONSTRAINT: 8.0, QUESTION: 1.0}
#: A repeat is looked for among this many newest facts (it is usually near; looking at
#: all of them would make a long fold quadratic).
REPEAT_WINDOW = 60
#: A statement scoring below this says too little to keep (a bare "I agree", "that's cool").
MIN_STATEMENT_SCORE = 3.0
#: A reply that answers a question needs less: the question made it matter.
MIN_ANSWER_SCORE = 1.5
#: One fact line holds at most this many words.
MAX_FACT_WORDS = 45


_RUNS = re.compile(r"[A-Za-z]+|\d+")
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_CALL_TYPES = ("function_call", "custom_tool_call")


@dataclass(frozen=True)
class Fact:
    """One thing a session established, as a self-contained line.

    Attributes:
        subject: What it is about: an id, a name, ``user``, ...
        attribute: The slot about that subject (``""``: none); subject and attribute
            together are the supersession key.
        text: One readable, self-contained line (``Flight BA117: gate B32, boards 14:05``).
        seqs: The seqs of the items it came from (empty when read back from a summary).
        said_on: The day it was said (``8 May 2023``) when known.
        weight: How informative it is; the least informative line goes first over budget.
        kind: ``fact``, ``decision``, ``constraint`` or ``question`` (an open one).
        shape: The fields of a JSON tool result's line (``("status", "carrier")``); its
            older line with the same subject and fields is the same slot.
    """

    subject: str
    attribute: str
    text: str
    seqs: tuple[int, ...]
    said_on: str | None
    weight: float
    kind: str = FACT
    shape: tuple[str, ...] = ()


@dataclass(frozen=True)
class Extraction:
    """Everything :func:`extract` read from the items.

    Attributes:
        facts: Facts, decisions and constraints, oldest first, each once.
        open_questions: The user's questions nothing answered, oldest first.
        objective: The newest request (an instruction, or a last question not yet
            answered), or ``None`` when the items hold none.
        objective_answered: The objective given to :func:`extract` was a question that
            the items answered.
        said_on: The date in force after the items (for the next run).
    """

    facts: tuple[Fact, ...]
    open_questions: tuple[Fact, ...]
    objective: str | None
    objective_answered: bool = False
    said_on: str | None = None


def line_weight(text: str, kind: str = FACT) -> float:
    """A line's weight: its content score plus its kind's (the same from items or a summary)."""
    return KIND_WEIGHT.get(kind, 0.0) + score(text)


def make_fact(
    text: str,
    *,
    subject: str = "",
    attribute: str = "",
    seqs: tuple[int, ...] = (),
    said_on: str | None = None,
    kind: str = FACT,
    shape: tuple[str, ...] = (),
) -> Fact:
    """A :class:`Fact` with its text clipped to one line and its weight computed (a ``|``
    standing alone, which a summary puts between one speaker's facts, becomes ``/``)."""
    words = ["/" if word == "|" else word for word in text.split()]
    line = " ".join(words[:MAX_FACT_WORDS]) + (" ..." if len(words) > MAX_FACT_WORDS else "")
    return Fact(subject, attribute, line, seqs, said_on, line_weight(line, kind), kind, shape)


def fact_key(fact: Fact) -> frozenset[str]:
    """The words and numbers that make a fact the same fact, whatever its punctuation."""
    specifics = {token.lower() for token in salient_tokens(fact.text)}
    return frozenset(content_words(fact.text)) | specifics or frozenset(fact.text.lower().split())


@dataclass
class FactList:
    """Facts in order, each once: a repeat is skipped, a newer value of a slot replaces it."""

    facts: list[Fact] = field(default_factory=list)
    _keys: list[frozenset[str]] = field(default_factory=list)  # one per fact, in order
    _known: set[frozenset[str]] = field(default_factory=set)
    _slots: dict[str, Fact] = field(default_factory=dict)  # slot key -> its newest fact

    def add(self, fact: Fact, *, read_back: bool = False) -> bool:
        """Add ``fact`` unless it is already known; ``False`` when it was a repeat.

        A fact ``read_back`` from a summary was checked when it was first added, and a
        summary lists it by section and speaker, not in the order it was said: only the same
        fact again is a repeat then, not one that a fact listed before it happens to contain.
        """
        key = fact_key(fact)
        repeats = () if read_back else self._keys[-REPEAT_WINDOW:]
        if key in self._known or any(key <= other for other in repeats):
            return False
        if fact.attribute:
            slot = slot_key(fact.subject, fact.attribute)  # the key consolidation writes
            older = self._slots.get(slot)
            if older is not None:
                self.discard({id(older)})
            self._slots[slot] = fact
        if fact.shape:  # an older line of the same fields whose tool is no longer known
            label = fact.text.partition(": ")[0]
            stale = [f for f in self.facts if not f.attribute and f.kind == fact.kind]
            gone = {id(f) for f in stale if same_shape(f.text, label, fact.shape)}
            if gone:
                self.discard(gone)
        self.facts.append(fact)
        self._keys.append(key)
        self._known.add(key)
        return True

    def discard(self, gone: set[int]) -> None:
        """Remove the facts whose ``id()`` is in ``gone``."""
        pairs = [(f, k) for f, k in zip(self.facts, self._keys, strict=True) if id(f) not in gone]
        self._known -= {k for f, k in zip(self.facts, self._keys, strict=True) if id(f) in gone}
        self.facts = [f for f, _ in pairs]
        self._keys = [k for _, k in pairs]


@dataclass
class _Question:
    text: str
    subject: str
    speaker: str
    from_user: bool
    seq: int
    said_on: str | None
    answered: bool = False


class _Reader:
    """Reads items in order (module docstring); one per :func:`extract` call."""

    def __init__(self, said_on: str | None, objective: str | None) -> None:
        self.day: date | None = parse_formatted(said_on) if said_on else None
        self.facts = FactList()
        self.open: list[Fact] = []
        self.calls: dict[str, tuple[str, str]] = {}
        self.asked: list[_Question] = []
        self.request: str | None = None
        #: The user's newest question in the current exchange: what a result answers.
        self.last_question: _Question | None = None
        #: Names and numbers the tool results of the current exchange said.
        self.results: set[str] = set()
        self.carried = None
        if objective and is_question(objective):
            self.carried = _Question(
                objective, question_subject(objective), "User", True, 0, said_on
            )
            self.asked.append(self.carried)
            self.last_question = self.carried

    @property
    def said_on(self) -> str | None:
        return format_date(self.day) if self.day else None

    def read(self, item: MemoryItem) -> None:
        kind = item.kind
        if kind is MemoryKind.DECISION:
            self._decision(item)
        elif kind is MemoryKind.TOOL_OBSERVATION:
            if item.priority is not Priority.LOW:
                self._result(item, FACT)
        elif item.payload is not None and item.item_type in _CALL_TYPES:
            self._call(item)
        elif item.payload is None or item.item_type == "message":
            self._message(item)

    def _decision(self, item: MemoryItem) -> None:
        if item.role is MemoryRole.DEVELOPER and (day := session_date(item.content)):
            self.day = day
            return
        if item.item_type == "reasoning":
            return  # the model's thinking on the way to an action, not a fact
        if item.item_type in _OUTPUT_TYPES:
            self._result(item, DECISION)
            return
        self.facts.add(
            make_fact(tidy(item.content), seqs=(item.seq,), said_on=self.said_on, kind=DECISION)
        )

    def _call(self, item: MemoryItem) -> None:
        payload = item.payload or {}
        name = str(payload.get("name", ""))
        arguments = payload.get("arguments", payload.get("input", ""))
        subject = call_subject(name, arguments if isinstance(arguments, str) else "")
        if item.call_id:
            self.calls[item.call_id] = (subject, name)

    def _result(self, item: MemoryItem, kind: str) -> None:
        subject, tool = self.calls.get(item.call_id or "", ("", ""))
        waiting = [q for q in self.asked if not q.answered]
        if not subject and self.last_question is not None:
            subject = self.last_question.subject
        values = result_values(item.content, subject)
        if not values:
            return
        text = attributed(subject, values)
        shape = value_keys(item.content, subject)
        self.results |= {run.lower() for run in _RUNS.findall(text)}
        self.facts.add(
            make_fact(
                text,
                subject=subject or tool,
                # Its tool names its slot, or its fields for a result added without a call;
                # a result about no known subject (a listing by date) has none.
                attribute=(tool or " ".join(sorted(shape))) if subject else "",
                seqs=(item.seq,),
                said_on=self.said_on,
                kind=kind,
                shape=shape if subject else (),
            )
        )
        for question in waiting:
            question.answered = True

    def _message(self, item: MemoryItem) -> None:
        from_user = item.kind is MemoryKind.USER_MESSAGE
        match = SPEAKER.match(item.content)
        speaker = match[1] if match else ("User" if from_user else "Assistant")
        body = item.content[match.end() :] if match else item.content
        said = [tidy(s) for s in sentences(body)]
        said = [s for s in said if s]
        questions = [s for s in said if is_question(s) and not is_chatter(s)]
        statements = [s for s in said if not is_question(s)]
        if self.day is not None:
            statements = [pin_relative(s, self.day) for s in statements]
        answering = [q for q in self.asked if q.speaker != speaker and not q.answered]
        if answering and statements:
            self._answer(item, speaker, answering, statements)
            statements = []
        for question in [q for q in self.asked if q.speaker == speaker and not q.answered]:
            # The asker spoke again with nothing answering: the conversation moved on.
            if question.from_user:
                self.open.append(
                    make_fact(
                        question.text,
                        subject=question.subject,
                        seqs=(question.seq,),
                        said_on=question.said_on,
                        kind=QUESTION,
                    )
                )
            question.answered = True
        self.asked = [q for q in self.asked if not q.answered]
        kept = []
        for sentence in statements:
            if from_user and is_constraint(sentence):
                self.facts.add(
                    make_fact(sentence, seqs=(item.seq,), said_on=self.said_on, kind=CONSTRAINT)
                )
            elif from_user and is_request(sentence):
                continue  # an instruction is the objective, not a fact
            elif score(sentence) >= MIN_STATEMENT_SCORE and not self._restates(sentence):
                kept.append(sentence)
        if kept:
            self.facts.add(
                make_fact(
                    f"{speaker}: {best_of(kept)}",
                    subject=speaker,
                    seqs=(item.seq,),
                    said_on=self.said_on,
                )
            )
        if from_user:
            requests = [s for s in said if not is_question(s) and is_request(s)]
            if requests:
                self.request = " ".join(requests)
        if from_user:
            self.last_question = None
            self.results = set()
        for text in questions:
            asked = _Question(
                text, question_subject(text), speaker, from_user, item.seq, self.said_on
            )
            self.asked.append(asked)
            if from_user:
                self.last_question = asked

    def _restates(self, sentence: str) -> bool:
        """A reply that only repeats what this exchange's tool results said: its names and
        numbers are all in them."""
        said = {run.lower() for token in salient_tokens(sentence) for run in _RUNS.findall(token)}
        return bool(self.results) and said <= self.results

    def _answer(
        self, item: MemoryItem, speaker: str, answering: list[_Question], statements: list[str]
    ) -> None:
        for question in answering:  # even a bare "yes" answers: the asker got a reply
            question.answered = True
        useful = [s for s in statements if score(s) >= MIN_ANSWER_SCORE and not self._restates(s)]
        if not useful:
            return
        subject = next((q.subject for q in reversed(answering) if q.subject), "")
        body = best_of(useful)
        text = attributed(subject, body) if subject else f"{speaker}: {body}"
        self.facts.add(
            make_fact(text, subject=subject or speaker, seqs=(item.seq,), said_on=self.said_on)
        )

    def finish(self, objective: str | None) -> Extraction:
        waiting = [q for q in self.asked if not q.answered and q.from_user]
        answered = self.carried is not None and self.carried.answered
        if waiting:
            objective = (
                " ".join(q.text for q in waiting if q.seq == waiting[-1].seq) or waiting[-1].text
            )
        elif self.request is not None:
            objective = self.request
        elif answered:
            objective = None
        return Extraction(
            tuple(self.facts.facts), tuple(self.open), objective, answered, self.said_on
        )


def extract(
    items: Sequence[MemoryItem], *, said_on: str | None = None, objective: str | None = None
) -> Extraction:
    """Read ``items`` (oldest first) into facts, open questions and the objective.

    Args:
        items: The items, oldest first.
        said_on: The date in force before the first item (a previous run's ``said_on``).
        objective: The objective so far; a question here may be answered by the items.
    """
    reader = _Reader(said_on, objective)
    for item in items:
        reader.read(item)
    return reader.finish(objective)


def extract_facts(items: Sequence[MemoryItem]) -> list[Fact]:
    """The facts, decisions and constraints ``items`` established, oldest first, each once."""
    return list(extract(items).facts)
