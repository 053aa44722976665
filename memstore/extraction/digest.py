"""The extractive summary's layout as values: a :class:`Digest`, its text, and back.

A summary is a fixed layout of facts (:mod:`memstore.extraction.facts`), most essential
first::

    Current objective: <the newest request>
    Constraints:
    - <the user's musts and nevers>
    Decisions:
    - <DECISION items, decisions the user stated>
    Facts:
    - get_order(order_id: W1) → status: delivered, total: 54.3
    - User: <what the user said> | <more they said>
    Date: 8 May 2023

When the session spans several days (or date lines set its days), facts are listed under
the day they were said on instead of under ``Facts:``::

    On 8 May 2023:
    - Caroline: I went to a support group yesterday (7 May 2023).

The day in force is written ``Date:`` when the items' timestamps set it, and ``Session
date:`` when date lines did, unless a heading already says it (so a dated summary without
either line was dated by date lines). The day is what lets the next fold date what it
reads: a new day turns an undated summary into a dated one.

A section lists each speaker's lines once, on one line after their name, separated by
`` | ``: the name is said once, not on every fact. Lines are never paraphrased, so a later
compaction reads the summary back (:func:`parse_summary`) into the same facts and folds new
items in without a fact drifting.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from memstore.core.dates import parse_formatted
from memstore.extraction.actions import (
    ASKED,
    MENTIONED,
    VALUE_SEPARATOR,
    label_values,
    parse_action,
    parse_asked,
    parse_values,
)
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

OBJECTIVE = "Current objective"
#: The day in force when date lines set the days, and when the items' timestamps did.
SESSION_DATE, LAST_DATE = "Session date", "Date"
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
    """A summary as values: the objective, the facts in order, and a model's other sections.

    Attributes:
        objective: The current objective.
        said_on: The day in force (``8 May 2023``).
        marked: Date lines set the days (else the items' timestamps did).
        spans_days: The facts carry their days (several days, or marked).
        facts: The facts, oldest first.
        questions: The open questions.
        other: A model's own sections, by heading.
        speakers: The transcript speakers the summary names.
    """

    objective: str | None = None
    said_on: str | None = None
    marked: bool = False
    spans_days: bool = False
    facts: FactList = field(default_factory=FactList)
    questions: list[Fact] = field(default_factory=list)
    other: dict[str, list[str]] = field(default_factory=dict)
    speakers: set[str] = field(default_factory=set)

    def render_frame(self) -> str:
        """What the digest costs without its droppable lines: the objective and the date
        (headings are left to the exact count, since one whose lines all go costs nothing)."""
        return "\n".join(self._frame_lines())

    def _frame_lines(self) -> list[str]:
        lines = [f"{OBJECTIVE}: {self.objective}"] if self.objective else []
        if not self.said_on:
            return lines
        if not self.marked:
            lines.append(f"{LAST_DATE}: {self.said_on}")
            return lines
        # Date lines set the days: the day in force dates the next items. A fact's heading
        # says it; a decision's day is not written with it (it reads back undated).
        days = {f.said_on for f in self.facts.facts if f.kind == FACT} if self.spans_days else ()
        if self.said_on not in days:
            lines.append(f"{SESSION_DATE}: {self.said_on}")
        return lines

    def heading_of(self, fact: Fact) -> str:
        """The section a fact is listed under: its kind's, or the day it was said on."""
        if fact.kind == FACT and fact.said_on and self.spans_days:
            return f"On {fact.said_on}"
        return SECTION_OF[fact.kind]

    def render(self) -> str:
        """The summary text (module docstring)."""
        lines = [line for line in self._frame_lines() if not line.startswith(OBJECTIVE)]
        head = [line for line in self._frame_lines() if line.startswith(OBJECTIVE)]
        groups: dict[str, list[str | tuple[str, list[str]]]] = {}
        said: dict[tuple[str, str], list[str]] = {}  # a speaker's lines in one section
        # What someone asked for or mentioned is said once, and not where an action's line
        # says it (an action's line keeps all its values: they belong to its call).
        values = {
            value.casefold()
            for fact in self.facts.facts
            if fact.values and not speaker_of(fact)
            for value in (*fact.values, *action_arguments(fact.text))
        }
        for fact in self.facts.facts:
            heading, label = self.heading_of(fact), speaker_of(fact)
            entries = groups.setdefault(heading, [])
            if fact.values and not label:
                entries.append(line_text(fact))
                continue
            part = fact.text[len(label) + 2 :] if label else line_text(fact)
            if fact.values:
                fresh = [v for v in fact.values if v.casefold() not in values]
                values.update(v.casefold() for v in fresh)
                part = VALUE_SEPARATOR.join(fresh)
                if not part:
                    continue
            if not label:
                entries.append(part)
            elif (heading, label) in said:  # listed where the speaker first spoke
                said[heading, label].append(part)
            else:
                said[heading, label] = [part]
                entries.append((label, said[heading, label]))
        if self.questions:
            groups["Open questions"] = [*(q.text for q in self.questions)]
        body: list[str] = []
        order = ["Constraints", "Decisions", "Facts"]
        dated = [h for h in groups if h.startswith("On ")]
        for heading in [*order, *dated, "Open questions"]:
            if groups.get(heading):
                body.append(f"{heading}:")
                body.extend(f"- {_entry_text(entry)}" for entry in groups[heading])
        for heading, texts in self.other.items():
            if texts:
                body.append(f"{heading}:")
                body.extend(f"- {text}" for text in texts)
        return "\n".join([*head, *body, *lines])


#: After a line whose slot was filled more than once: how many times (`` (×8)``).
_REPEATS = re.compile(r" \(×(\d+)\)$")


def line_text(fact: Fact) -> str:
    """A fact's line: its text, and how many times its slot was filled when more than once."""
    return fact.text if fact.repeats < 2 else f"{fact.text} (×{fact.repeats})"


def action_arguments(text: str) -> list[str]:
    """The argument values an action's line shows (none for another line)."""
    action = parse_action(text)
    return [] if action is None else label_values(action[0])


def _entry_text(entry: str | tuple[str, list[str]]) -> str:
    if isinstance(entry, str):
        return entry
    label, parts = entry
    return f"{label}: {SAID_SEPARATOR.join(parts)}"


def speaker_of(fact: Fact) -> str:
    """The name a statement's line opens with (``Caroline: ...``, ``User: ...``), under which
    a section lists all its lines once (``- Caroline: ... | ...``); ``""`` for a line with
    none, or of a kind listed one to a line."""
    if fact.kind != FACT or not fact.speaker or not fact.text.startswith(f"{fact.speaker}: "):
        return ""
    return fact.speaker


def parse_summary(text: str | None) -> Digest:
    """Read a summary back into a :class:`Digest`.

    The extractive layout round-trips exactly. A model's other ``Heading:`` lines open
    sections of their own; lines before any heading count as facts.
    """
    digest = Digest()
    kind: str | None = FACT
    heading, said_on = "Facts", None
    labels: dict[str, int] = {}
    stamped = False  # a Date: line: the items' timestamps set the days
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(f"{OBJECTIVE}:"):
            digest.objective = line.split(":", 1)[1].strip() or None
            continue
        if line.startswith((f"{SESSION_DATE}:", f"{LAST_DATE}:")):
            day = line.split(":", 1)[1].strip()
            digest.said_on = day if parse_formatted(day) else None
            digest.marked = line.startswith(SESSION_DATE)
            stamped = not digest.marked
            continue
        bullet = _BULLET.match(line)
        if bullet is None and line.endswith(":") and len(line.split()) <= 6:
            heading = line[:-1].strip()
            dated = _DATED.match(line)
            said_on = dated[1] if dated and parse_formatted(dated[1]) else None
            digest.spans_days |= said_on is not None
            kind = FACT if said_on else _ALIASES.get(heading.lower())
            continue
        entry = line[bullet.end() :] if bullet else line
        _read_entry(digest, entry, kind, heading, said_on, labels)
    digest.marked = digest.marked or (digest.spans_days and not stamped)
    digest.speakers = {
        name for name, count in labels.items() if count > 1 or name in ROLE_SPEAKERS.values()
    }
    _date_undated(digest)
    return digest


def _read_entry(
    digest: Digest,
    entry: str,
    kind: str | None,
    heading: str,
    said_on: str | None,
    labels: dict[str, int],
) -> None:
    repeats = _REPEATS.search(entry)
    if repeats is not None:
        entry = entry[: repeats.start()]
    action = parse_action(entry) if kind in (FACT, DECISION) else None
    asked = parse_asked(entry) if kind == FACT and action is None else None
    speaker = SPEAKER.match(entry) if kind == FACT and action is None and asked is None else None
    if asked is not None:
        read = make_fact(entry, subject=asked[0], said_on=said_on, values=tuple(asked[1]))
        digest.facts.add(read, read_back=True)
    elif action is not None:
        read = make_fact(
            entry,
            subject=action[0],
            attribute="call",
            said_on=said_on,
            kind=kind or FACT,
            values=tuple(action[1]),
        )
        digest.facts.add(replace(read, repeats=int(repeats[1]) if repeats else 1), read_back=True)
    elif speaker is not None:  # one speaker's lines: each its own fact again
        name = speaker[1]
        parts = entry[speaker.end() :].split(SAID_SEPARATOR)
        who, _, verb = name.rpartition(" ")
        listed = who if verb in (ASKED, MENTIONED) else ""  # what they asked for, mentioned
        if not listed:
            labels[name] = labels.get(name, 0) + (len(parts) > 1) + 1
        for part in parts:
            values = tuple(parse_values(part)) if listed else ()
            fact = make_fact(
                f"{name}: {part}",
                subject=listed or name,
                said_on=said_on,
                speaker=name,
                values=values,
            )
            digest.facts.add(fact, read_back=True)
    elif kind == QUESTION:
        digest.questions.append(make_fact(entry, kind=QUESTION))
    elif kind is not None:
        digest.facts.add(make_fact(entry, said_on=said_on, kind=kind), read_back=True)
    else:
        digest.other.setdefault(heading, []).append(entry)


def _date_undated(digest: Digest) -> None:
    """An undated summary was said on its one day: its facts carry that day, so a fold that
    brings a new day can list them under it."""
    if digest.spans_days or not digest.said_on:
        return
    day = digest.said_on
    digest.facts.update(lambda f: replace(f, said_on=f.said_on or day) if f.kind == FACT else f)
