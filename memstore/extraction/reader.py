"""The reader behind :func:`memstore.extraction.facts.extract`: items in order, one at a time,
into facts, open questions and the objective, by the rules :mod:`memstore.extraction.facts`
states (actions, questions and answers, statements, stated preferences and rules, days).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from memstore.core.values import MemoryItem, MemoryKind, Priority
from memstore.core.words import word_units
from memstore.extraction.actions import (
    ASKED,
    MENTIONED,
    VALUE_SEPARATOR,
    action_line,
    asked_line,
    call_label,
    chunks,
    label_values,
    question_subject,
    result_values,
)
from memstore.extraction.dating import Calendar, pin_days, said_on
from memstore.extraction.fact_list import (
    CONSTRAINT,
    DECISION,
    FACT,
    QUESTION,
    Fact,
    FactList,
    make_fact,
)
from memstore.extraction.speakers import ROLE_SPEAKERS, SPEAKER
from memstore.extraction.specifics import is_exact, specific_phrases, specifics
from memstore.extraction.statements import (
    MIN_ANSWER_SCORE,
    MIN_STATEMENT_SCORE,
    best_of,
    is_chatter,
    is_constraint,
    is_question,
    is_request,
    score,
    sentences,
    statement_cue,
    tidy,
)

#: The objective holds at most this many words of the request: what is asked, not its
#: whole turn.
MAX_OBJECTIVE_WORDS = 20
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_CALL_TYPES = ("function_call", "custom_tool_call")


@dataclass(frozen=True)
class Extraction:
    """Everything :func:`extract` read from the items.

    Attributes:
        facts: Facts, decisions and constraints, oldest first, each once.
        open_questions: The user's questions nothing answered, oldest first.
        objective: The newest request (an instruction, or a last question not yet
            answered), or ``None`` when the items hold none.
        said_on: The day in force after the items (for the next fold).
        marked: Date lines set the days (for the next fold).
        spans_days: The facts must carry their days.
    """

    facts: tuple[Fact, ...]
    open_questions: tuple[Fact, ...]
    objective: str | None
    said_on: str | None = None
    marked: bool = False
    spans_days: bool = False


@dataclass
class _Turn:
    """A user turn waiting to be read as a statement or a task (:meth:`_Reader._flush`)."""

    item: MemoryItem
    speaker: str
    statements: list[str]
    day: date | None
    acted: bool = False
    labels: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # its sentences as said (days not pinned)


@dataclass
class _Question:
    text: str
    subject: str
    speaker: str
    from_user: bool
    seq: int
    said_on: str | None
    answered: bool = False


class Reader:
    """Reads items in order (the rules of :mod:`memstore.extraction.facts`); one per
    :func:`~memstore.extraction.facts.extract` call."""

    def __init__(
        self,
        calendar: Calendar,
        objective: str | None,
        speakers: set[str],
        every_statement: bool = False,
    ) -> None:
        self.calendar = calendar
        self.every_statement = every_statement
        self.speakers = speakers
        self.facts = FactList()
        self.open: list[Fact] = []
        self.calls: dict[str, str] = {}  # call id -> its label
        self.asked: list[_Question] = []
        self.request: str | None = None
        #: The user's newest question in the current exchange: what a result answers.
        self.last_question: _Question | None = None
        #: Units the tool results of the current exchange said.
        self.results: set[str] = set()
        self.carried = None
        self.pending: _Turn | None = None
        self.day: date | None = calendar.day
        if objective and is_question(objective):
            self.carried = _Question(
                objective, question_subject(objective), "User", True, 0, said_on(self.day)
            )
            self.asked.append(self.carried)
            self.last_question = self.carried

    def read(self, item: MemoryItem) -> None:
        if self.calendar.marker(item) is not None:
            self.day = self.calendar.day
            return
        self.day = self.calendar.read(item)
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

    @property
    def said_on(self) -> str | None:
        return said_on(self.day)

    def _decision(self, item: MemoryItem) -> None:
        if item.item_type == "reasoning":
            return  # the model's thinking on the way to an action, not a fact
        if item.item_type in _OUTPUT_TYPES:
            self._result(item, DECISION)
            return
        text = tidy(pin_days(item.content, self.day))
        self.facts.add(
            make_fact(text, seqs=(item.seq,), said_on=self.said_on, kind=DECISION, stated=DECISION)
        )

    def _call(self, item: MemoryItem) -> None:
        payload = item.payload or {}
        name = str(payload.get("name", ""))
        arguments = payload.get("arguments", payload.get("input", ""))
        label = call_label(name, arguments)
        if item.call_id:
            self.calls[item.call_id] = label
        if self.pending is not None:
            self.pending.acted = True
            self.pending.labels.append(label)

    def _result(self, item: MemoryItem, kind: str) -> None:
        label = self.calls.get(item.call_id or "", "")
        waiting = [q for q in self.asked if not q.answered]
        subject = label
        if not label and self.last_question is not None and self.last_question.subject:
            subject = self.last_question.subject
            label = subject[:1].upper() + subject[1:] + ":"
        # A value the call's own arguments say (``cd(workspace): workspace``) is said once;
        # the exchange said it all the same (a reply repeating it restates the result).
        said = {value.casefold() for value in label_values(label)}
        self.results |= {unit for value in said for unit in word_units(value)}
        values = [value for value in result_values(item.content) if value.casefold() not in said]
        if not values and not label.endswith(")"):
            return
        for part in chunks(values) or [[]]:
            if label.endswith(")"):
                text = action_line(label, part)
            else:  # an output that opens with its subject is not labelled twice
                listed = VALUE_SEPARATOR.join(part)
                if label and listed.casefold().startswith(label.rstrip(":").casefold()):
                    text = label[:1] + listed[1:]
                else:
                    text = f"{label} {listed}" if label else listed
            self.results |= {unit for value in part for unit in word_units(value)}
            self.facts.add(
                make_fact(
                    text,
                    subject=subject,
                    attribute="call" if subject else "",
                    seqs=(item.seq,),
                    said_on=self.said_on,
                    kind=kind,
                    values=tuple(part),
                )
            )
        for question in waiting:
            question.answered = True

    def _speaker(self, item: MemoryItem) -> tuple[str, str]:
        """(speaker, the text after a transcript's ``Name:``)."""
        match = SPEAKER.match(item.content)
        if match and match[1] in self.speakers:
            return match[1], item.content[match.end() :]
        return ROLE_SPEAKERS.get(item.role.value, item.role.value.title()), item.content

    def _message(self, item: MemoryItem) -> None:
        from_user = item.kind is MemoryKind.USER_MESSAGE
        # A reply comes after the turn's calls and results: the turn is read by then, so its
        # own words come before any restatement of them.
        self._flush()
        speaker, body = self._speaker(item)
        said = [s for s in (tidy(s) for s in sentences(body)) if s]
        questions = [s for s in said if is_question(s) and not is_chatter(s)]
        statements = [pin_days(s, self.day) for s in said if not is_question(s)]
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
        if from_user:
            # Whether it was a task is known once what follows it is: calls (flushed then).
            self.pending = _Turn(item, speaker, statements, self.day, said=said)
            requests = [s for s in said if not is_question(s) and is_request(s)]
            self.request = " ".join(requests) if requests else self.request
            self.last_question = None
            self.results = set()
        else:
            self._statements(item, speaker, False, statements)
        for text in questions:
            asked = _Question(
                text, question_subject(text), speaker, from_user, item.seq, self.said_on
            )
            self.asked.append(asked)
            if from_user:
                self.last_question = asked

    def _flush(self, last: bool = False) -> None:
        """The newest user turn's facts, now that what followed it is known. A turn that led
        to calls was a task: what it stated with a cue stays a fact, and it is no longer the
        objective. Any other turn's statements are facts as said. The specifics of what no
        fact keeps (a task's or a request's words, a question's, a statement that says too
        little) are kept as what the user asked for or mentioned, those the calls' lines
        and this exchange's results do not already say. What was asked for keeps its names
        (the booking's ``Ortega``); what was only mentioned is kept when it holds an exact
        value (a number, an id, a quoted string: what no paraphrase gives back), with the
        names beside it."""
        turn, self.pending = self.pending, None
        if turn is None:
            return
        day, self.day = self.day, turn.day
        if turn.acted:  # a task: what it stated with a cue stays a fact
            stated = [s for s in turn.statements if statement_cue(s) or is_constraint(s)]
            self.request = None  # done: its calls followed
        else:
            stated = turn.statements
        kept = self._statements(turn.item, turn.speaker, True, stated)
        objective = last and not turn.acted  # the last request is the objective: it says it
        rest = [  # a question's values are its open question's, or its answer's subject
            sentence
            for sentence in turn.said
            if pin_days(sentence, turn.day) not in kept
            and not is_chatter(sentence)
            and not is_question(sentence)
            and not (objective and is_request(sentence))
        ]
        done = self.results
        values = tuple(
            dict.fromkeys(
                found
                for sentence in rest
                for found in specific_phrases(sentence)
                if not _units_of_specifics(found) <= done
            )
        )
        asking = turn.acted or any(is_request(s) for s in rest)
        verb = ASKED if asking else MENTIONED
        if not asking and not any(is_exact(value) for value in values):
            values = ()  # names said in passing: alone they say little
        for part in chunks(values) if not self.every_statement else []:
            self.facts.add(
                make_fact(
                    asked_line(turn.speaker, part, verb),
                    subject=turn.speaker,
                    seqs=(turn.item.seq,),
                    said_on=self.said_on,
                    speaker=f"{turn.speaker} {verb}",
                    values=tuple(part),
                )
            )
        self.day = day

    def _statements(
        self, item: MemoryItem, speaker: str, from_user: bool, statements: list[str]
    ) -> set[str]:
        """Add the facts ``statements`` make; the sentences they hold whole."""
        kept: list[tuple[str, str]] = []  # (sentence, what it states)
        constraints: set[str] = set()
        for sentence in statements:
            cue = statement_cue(sentence) if from_user else ""
            if from_user and is_constraint(sentence):
                constraints.add(sentence)
                self.facts.add(
                    make_fact(
                        sentence,
                        seqs=(item.seq,),
                        said_on=self.said_on,
                        kind=CONSTRAINT,
                        stated=CONSTRAINT,
                    )
                )
            elif from_user and is_request(sentence) and not cue:
                continue  # an instruction is the objective, not a fact
            elif self._worth_keeping(sentence, from_user, cue):
                kept.append((sentence, cue or ("user" if from_user else "")))
        # Each its own fact when every one is to become an entry; else one line a turn.
        groups = [[pair] for pair in kept] if self.every_statement else [kept] if kept else []
        written = set(constraints)
        for group in groups:
            said = [sentence for sentence, _ in group]
            stated = next((cue for _, cue in group if cue and cue != "user"), group[0][1])
            text = best_of(said) if len(said) > 1 else said[0]
            written.update(sentence for sentence in said if sentence in text)
            self.facts.add(
                make_fact(
                    f"{speaker}: {text}",
                    subject=speaker,
                    seqs=(item.seq,),
                    said_on=self.said_on,
                    stated=stated,
                    speaker=speaker,
                )
            )
        return written

    def _worth_keeping(self, sentence: str, from_user: bool, cue: str) -> bool:
        """A statement worth a fact: it says enough, or the user stated something with a cue
        (``I prefer pytest.``), or it is the user's and every statement is wanted; never one
        that only repeats this exchange's tool results, or chatter."""
        value = score(sentence)
        if value <= 0 or self._restates(sentence):
            return False
        if cue or (from_user and self.every_statement):
            return True
        if self.every_statement and not specifics(sentence):
            return False  # for long-term memory, another's words count when they name things
        return value >= MIN_STATEMENT_SCORE

    def _restates(self, sentence: str) -> bool:
        """A reply that only repeats what this exchange's tool results said: its specifics
        are all in them."""
        said = {unit for s in specifics(sentence) for unit in word_units(s)}
        return bool(self.results) and bool(said) and said <= self.results

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
        if subject:
            text, who = f"{subject[:1].upper()}{subject[1:]}: {body}", ""
        else:
            text, who = f"{speaker}: {body}", speaker
        self.facts.add(
            make_fact(
                text, subject=subject or speaker, seqs=(item.seq,), said_on=self.said_on,
                speaker=who,
            )
        )  # fmt: skip

    def finish(self, objective: str | None) -> Extraction:
        self._flush(last=True)
        waiting = [q for q in self.asked if not q.answered and q.from_user]
        answered = self.carried is not None and self.carried.answered
        if waiting:  # the last question: what the user wants to know
            objective = best_of([waiting[-1].text], MAX_OBJECTIVE_WORDS)
        elif self.request is not None:
            objective = best_of(sentences(self.request), MAX_OBJECTIVE_WORDS)
        elif answered:
            objective = None
        # A user turn's facts are read once what followed it is known: in the order said.
        facts = sorted(self.facts.facts, key=lambda fact: min(fact.seqs, default=0))
        return Extraction(
            tuple(facts),
            tuple(self.open),
            objective,
            said_on(self.calendar.day),
            self.calendar.marked,
            self.calendar.spans_days,
        )


def _units_of_specifics(phrase: str) -> set[str]:
    """The units of a phrase's specifics (``is order 1000``: ``1000``), else of its words:
    what says the phrase was already said."""
    return {u for found in specifics(phrase) for u in word_units(found)} or set(word_units(phrase))
