"""The extractive summary's layout as values: a :class:`Digest`, its text, and back.

A summary is a fixed layout of facts (:mod:`memstore.core.facts`), most essential first::

    Current objective: <the newest request>
    Constraints:
    - <the user's musts and nevers>
    Decisions:
    - <DECISION items>
    Facts:
    - <answers and tool results: "Order 3: courier DPD, due day 4">
    - User: <what the user said> | <more they said>
    On 8 May 2023:
    - Caroline: <what she said that day: "I went to a support group yesterday (7 May 2023).">
    Open questions:
    - <the user's questions nothing answered>

A section lists each speaker's lines once, on one line after their name, separated by
`` | ``: the name is said once, not on every fact. Lines are never paraphrased, so a later
compaction reads the summary back (:func:`parse_summary`) into the same facts and folds new
items in without a fact drifting.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memstore.core.dates import parse_formatted
from memstore.core.facts import CONSTRAINT, DECISION, FACT, QUESTION, Fact, FactList, make_fact
from memstore.core.statements import SPEAKER

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
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_DATED = re.compile(r"^On (\d{1,2} [A-Z][a-z]+ \d{4}):$")
#: Between one speaker's lines in a section (fact texts never hold it: :func:`make_fact`).
SAID_SEPARATOR = " | "


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
        return "\n".join(self._frame_lines())

    def _frame_lines(self) -> list[str]:
        lines = [f"{OBJECTIVE}: {self.objective}"] if self.objective else []
        # The day in force dates the next items. A fact's heading says it; a decision's day
        # is not written with it (it reads back undated), so it does not count.
        days = {f.said_on for f in self.facts.facts if f.kind == FACT}
        if self.said_on and self.said_on not in days:
            lines.append(f"{SESSION_DATE}: {self.said_on}")
        return lines

    def render(self) -> str:
        """The summary text (module docstring)."""
        lines = self._frame_lines()
        groups: dict[str, list[str | tuple[str, list[str]]]] = {}
        said: dict[tuple[str, str], list[str]] = {}  # a speaker's lines in one section
        for fact in self.facts.facts:
            heading, label = heading_of(fact), speaker_of(fact)
            entries = groups.setdefault(heading, [])
            if not label:
                entries.append(fact.text)
            elif (heading, label) in said:  # listed where the speaker first spoke
                said[heading, label].append(fact.text[len(label) + 2 :])
            else:
                said[heading, label] = [fact.text[len(label) + 2 :]]
                entries.append((label, said[heading, label]))
        if self.questions:
            groups["Open questions"] = [*(q.text for q in self.questions)]
        order = ["Constraints", "Decisions", "Facts"]
        dated = [h for h in groups if h.startswith("On ")]
        for heading in [*order, *dated, "Open questions"]:
            if groups.get(heading):
                lines.append(f"{heading}:")
                lines.extend(f"- {_entry_text(entry)}" for entry in groups[heading])
        for heading, texts in self.other.items():
            if texts:
                lines.append(f"{heading}:")
                lines.extend(f"- {text}" for text in texts)
        return "\n".join(lines)


def _entry_text(entry: str | tuple[str, list[str]]) -> str:
    if isinstance(entry, str):
        return entry
    label, parts = entry
    return f"{label}: {SAID_SEPARATOR.join(parts)}"


def heading_of(fact: Fact) -> str:
    """The section a fact is listed under: its kind's, or the day it was said on."""
    if fact.kind == FACT and fact.said_on:
        return f"On {fact.said_on}"
    return SECTION_OF[fact.kind]


def speaker_of(fact: Fact) -> str:
    """The name a fact line opens with (``Caroline: ...``, ``User: ...``), under which a
    section lists all its lines once (``- Caroline: ... | ...``); ``""`` for a line with
    none, or of a kind listed one to a line."""
    match = SPEAKER.match(fact.text) if fact.kind == FACT else None
    return match[1] if match else ""


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
        speaker = SPEAKER.match(entry) if kind == FACT else None
        if speaker is not None:  # one speaker's lines: each its own fact again
            parts = entry[speaker.end() :].split(SAID_SEPARATOR)
            for part in parts:
                fact = make_fact(f"{speaker[1]}: {part}", said_on=said_on)
                digest.facts.add(fact, read_back=True)
        elif kind == QUESTION:
            digest.questions.append(make_fact(entry, kind=QUESTION))
        elif kind is not None:
            digest.facts.add(make_fact(entry, said_on=said_on, kind=kind), read_back=True)
        else:
            digest.other.setdefault(heading, []).append(entry)
    return digest
