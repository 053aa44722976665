"""A fact as values: one line a session established, and the list that keeps each once.

A :class:`Fact` says whose it is, when it was said, how much it says and what slot it fills
(an action's slot is its call). A :class:`FactList` keeps facts in order, each once: a fact
said again is skipped, a newer fill of a slot replaces the older (the newest value of a slot
wins, and the slot counts how often it was filled). The reader that makes facts from items
is :mod:`memstore.extraction.facts`; the summary's layout, :mod:`memstore.extraction.digest`.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from memstore.core.words import word_units
from memstore.extraction.slots import slot_key
from memstore.extraction.specifics import specifics
from memstore.extraction.statements import content_units, score

FACT, DECISION, CONSTRAINT, QUESTION = "fact", "decision", "constraint", "question"
#: Added to a line's content score: what the user or the application set down explicitly
#: outweighs what was said in passing.
KIND_WEIGHT = {FACT: 0.0, DECISION: 8.0, CONSTRAINT: 8.0, QUESTION: 1.0}
#: What a stated preference or identity fact adds to its weight: set down on purpose, like a
#: decision, but said in passing more often.
STATED_WEIGHT = 4.0
#: A repeat is looked for among this many newest facts (it is usually near; looking at
#: all of them would make a long fold quadratic).
REPEAT_WINDOW = 60
#: One fact line holds at most this many words.
MAX_FACT_WORDS = 45


@dataclass(frozen=True)
class Fact:
    """One thing a session established, as a self-contained line.

    Attributes:
        subject: What it is about: an id, a name, ``User``, a call's name.
        attribute: The slot about that subject (``""``: none); subject and attribute
            together are the supersession key (an action's slot is its call).
        text: One readable, self-contained line.
        seqs: The seqs of the items it came from (empty when read back from a summary).
        said_on: The day it was said (``8 May 2023``) when known.
        weight: How informative it is; the least informative line goes first over budget.
        kind: ``fact``, ``decision``, ``constraint`` or ``question`` (an open one).
        stated: What the user stated: ``preference``, ``identity``, ``decision`` or
            ``constraint`` when a cue says so, ``user`` for another statement of the
            user's (``""``: someone else's statement, an answer, a result).
        speaker: Who said it: ``User``, ``Assistant``, a transcript's name (``""``: an
            action, an answer about a subject).
        repeats: How many times its slot was filled (a call made again and again): what a
            session keeps coming back to.
        values: An action's values: what its line says after the call's label (each value
            is said by one line only: the newest that has it).
    """

    subject: str
    attribute: str
    text: str
    seqs: tuple[int, ...]
    said_on: str | None
    weight: float
    kind: str = FACT
    stated: str = ""
    speaker: str = ""
    repeats: int = 1
    values: tuple[str, ...] = ()


def line_weight(text: str, kind: str = FACT, stated: str = "") -> float:
    """A line's weight: its content score plus its kind's (the same from items or a
    summary), plus :data:`STATED_WEIGHT` for a stated preference or identity fact."""
    bonus = STATED_WEIGHT if stated in ("preference", "identity") else 0.0
    return KIND_WEIGHT.get(kind, 0.0) + score(text) + bonus


def make_fact(
    text: str,
    *,
    subject: str = "",
    attribute: str = "",
    seqs: tuple[int, ...] = (),
    said_on: str | None = None,
    kind: str = FACT,
    stated: str = "",
    speaker: str = "",
    values: tuple[str, ...] = (),
) -> Fact:
    """A :class:`Fact` with its text on one line and its weight computed (a ``|`` standing
    alone, which a summary puts between one speaker's facts, becomes ``/``). Statements are
    clipped to :data:`MAX_FACT_WORDS`; a line of values (an action's, an ask's) is cut by
    values where it is made, never by words."""
    words = ["/" if word == "|" else word for word in text.split()]
    if speaker and not values and len(words) > MAX_FACT_WORDS:
        words = [*words[:MAX_FACT_WORDS], "..."]
    line = " ".join(words)
    weight = line_weight(line, kind, stated)
    return Fact(
        subject, attribute, line, seqs, said_on, weight, kind, stated, speaker, values=values
    )


def fact_key(fact: Fact) -> frozenset[str]:
    """The units and specifics that make a fact the same fact, whatever its punctuation."""
    found = {unit for specific in specifics(fact.text) for unit in word_units(specific)}
    return frozenset(content_units(fact.text)) | found or frozenset(fact.text.lower().split())


@dataclass
class FactList:
    """Facts in order, each once: a repeat is skipped, a newer value of a slot replaces it."""

    facts: list[Fact] = field(default_factory=list)
    _keys: list[frozenset[str]] = field(default_factory=list)  # one per fact, in order
    _known: set[frozenset[str]] = field(default_factory=set)
    _slots: dict[str, list[Fact]] = field(default_factory=dict)  # slot -> the facts filling it

    def add(self, fact: Fact, *, read_back: bool = False) -> bool:
        """Add ``fact`` unless it is already known; ``False`` when it was a repeat.

        A fact with a slot replaces the facts of that slot from other items (a call's older
        output); the lines one output was cut into stay together. A fact ``read_back`` from
        a summary was checked when it was first added, and a summary lists it by section and
        speaker, not in the order it was said: only the same fact again is a repeat then.
        """
        key = fact_key(fact)
        if fact.attribute and not read_back:  # a slot: the newest fills it, its count goes on
            filling = self._slots.get(_slot(fact), [])
            older = [f for f in filling if f.seqs != fact.seqs]
            if older:
                fact = replace(fact, repeats=fact.repeats + max(f.repeats for f in older))
                self.discard({id(f) for f in older})
        repeats = () if read_back else self._keys[-REPEAT_WINDOW:]
        if not fact.values and (key in self._known or any(key <= other for other in repeats)):
            return False
        self.facts.append(fact)
        self._keys.append(key)
        self._known.add(key)
        if fact.attribute:
            self._slots.setdefault(_slot(fact), []).append(fact)
        return True

    def update(self, change: Callable[[Fact], Fact]) -> None:
        """Replace every fact by ``change(fact)`` (its place, key and slot kept)."""
        changed = [change(fact) for fact in self.facts]
        self.facts = changed
        self._slots = {}
        for fact in changed:
            if fact.attribute:
                self._slots.setdefault(_slot(fact), []).append(fact)

    def swap(self, old: Fact, new: Fact) -> None:
        """Put ``new`` where ``old`` is (a summary keeping a line's short form instead)."""
        for index, fact in enumerate(self.facts):
            if fact is old:
                self._known.discard(self._keys[index])
                self.facts[index], self._keys[index] = new, fact_key(new)
                self._known.add(self._keys[index])
                if old.attribute:
                    self._slots[_slot(old)].remove(old)
                if new.attribute:
                    self._slots.setdefault(_slot(new), []).append(new)
                return

    def discard(self, gone: set[int]) -> None:
        """Remove the facts whose ``id()`` is in ``gone``."""
        pairs = [(f, k) for f, k in zip(self.facts, self._keys, strict=True) if id(f) not in gone]
        self._known -= {k for f, k in zip(self.facts, self._keys, strict=True) if id(f) in gone}
        for fact in self.facts:
            if id(fact) in gone and fact.attribute:
                self._slots[_slot(fact)].remove(fact)
        self.facts = [f for f, _ in pairs]
        self._keys = [k for _, k in pairs]


def _slot(fact: Fact) -> str:
    return slot_key(fact.subject, fact.attribute)
