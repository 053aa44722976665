"""Fitting a summary into its room: whole lines go, those that say least per token first.

A summary has room for a few dozen lines out of hundreds of items. A later question can name
anything the conversation touched, so the lines are kept greedily by what they add: a line's
worth is its kind's weight, a share of its content score
(:func:`memstore.extraction.statements.score`) and the words it adds that no line kept before it
holds, per token it costs. What a section heading or a speaker's name costs is paid once,
by the first line that needs it. Among lines alike, the oldest goes first; a model's own
sections (``Actions attempted:``) go before any fact; a line that says nothing (``ok``) is
never kept. The extractive summary and a model's over-long reply are fitted the same way.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memstore.extraction.actions import (
    MAX_LINE_VALUES,
    MENTIONED,
    asked_line,
    label_values,
    parse_action,
)
from memstore.extraction.digest import SAID_SEPARATOR, Digest, parse_summary, speaker_of
from memstore.extraction.fact_list import FACT, KIND_WEIGHT, STATED_WEIGHT, Fact, make_fact
from memstore.extraction.speakers import ROLE_SPEAKERS
from memstore.extraction.specifics import is_exact, specific_phrases
from memstore.extraction.statements import (
    NAME_WORTH,
    SCORE_SHARE,
    Candidate,
    coverage_order,
    new_words,
    score,
)

CountTokens = Callable[[str], int]

#: What being the newest line is worth: among lines alike, the older goes first.
RECENCY_WEIGHT = 0.5
#: What one exact value on a line of values is worth (a tool's output, what a user asked for
#: or mentioned): as much as the content words of a short statement, since the line says
#: nothing else and no paraphrase gives the value back.
VALUE_WORTH = 8
#: What a value of a statement's short form (:func:`_gist`) is worth: a word's, so the short
#: form fills the room the statements leave, never displacing one.
GIST_WORTH = 1.0
#: What the user's own words are worth beside anyone else's: they say what the user has,
#: wants and asked for, which the next turns build on.
USER_FACTOR = 2


@dataclass(eq=False)
class _Line:
    """One line of the digest while it is fitted: what it is and what keeping it is worth."""

    section: str
    entry: Any  # the Fact, or a model section's text
    weight: float
    position: int
    words: Mapping[str, float]  # what it adds to the summary (:func:`new_words`)
    heading: str  # the section it is listed under
    cost: int = 0  # its own tokens
    #: The full line this one is the short form of (a statement's specifics alone).
    gist_of: _Line | None = None
    shares: tuple[str, ...] = ()  # what it shares with others: its heading, its speaker's label
    #: An action's or an ask's values and what each costs: a value a line kept before holds
    #: is left out of this one (:meth:`Digest.render`), and costs nothing here.
    value_costs: Mapping[str, int] | None = None
    #: What its speaker's label costs (``User asked:``): paid by the first line under it,
    #: so a line is ranked with it (a one-word short form is no bargain when its label is
    #: three).
    label_cost: int = 0

    def cost_given(self, said: set[str]) -> int:
        """Its tokens when the values in ``said`` are said by lines kept before it."""
        if not self.value_costs:
            return self.cost
        return max(self.cost - sum(c for v, c in self.value_costs.items() if v in said), 1)


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
    count = _remembered(count)  # values and labels repeat across lines: each counted once
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
        values = getattr(line.entry, "values", ())
        if values and speaker:  # an ask's values, each with its separator: said once
            line.value_costs = {v.casefold(): count(v) + 1 for v in values}
    for key in {key for line in lines for key in line.shares}:
        heading, _, label = key.rpartition("\n")
        shared[key] = count(f"{label}\n") if heading else count(f"{key}:\n")
    for line in lines:
        line.label_cost = shared[line.shares[-1]] if len(line.shares) > 1 else 0
    order = _keep_order(lines)
    gists_of: dict[int, list[_Line]] = {}
    for line in lines:
        if line.gist_of is not None:
            gists_of.setdefault(id(line.gist_of), []).append(line)
    _fit_frame(digest, budget, count)
    room = budget - count(digest.render_frame())
    kept: set[int] = set()
    opened: set[str] = set()
    said: set[str] = set()  # the values of the lines kept so far
    used = 0
    # In order: a less worthy line never displaces a worthier one, but a shorter one may use
    # the room a long one left; a line that says nothing ("ok") uses none.
    spent: dict[int, int] = {}  # what each kept short form cost, its heading and label aside
    for line in order:
        if line.gist_of is not None and id(line.gist_of) in kept:
            continue  # its full line says it all
        joins = len(line.shares) > 1 and line.shares[-1] in opened
        own = line.cost_given(said) + (separator if joins else 0)
        cost = own + sum(shared[key] for key in line.shares if key not in opened)
        short = next((g for g in gists_of.get(id(line), ()) if id(g) in kept), None)
        refund = spent.get(id(short), 0) if short is not None else 0
        if used + cost - refund > room or (line.weight == 0 and not line.words):
            continue
        if short is not None:  # the full line instead of its short form
            kept.discard(id(short))
            used -= refund
        kept.add(id(line))
        spent[id(line)] = own  # its heading stays open for the line that may replace it
        opened.update(line.shares)
        said.update(value.casefold() for value in getattr(line.entry, "values", ()))
        used += cost
    for line in lines:
        if line.gist_of is not None and id(line) in kept:
            digest.facts.swap(line.gist_of.entry, line.entry)
            kept.add(id(line.gist_of))  # it stands in the full line's place
    _remove(digest, [line for line in lines if id(line) not in kept])
    text = digest.render()
    for line in reversed(order):  # the estimate was short: the least worth goes first
        if count(text) <= budget:
            break
        if id(line) in kept:
            kept.discard(id(line))
            _remove(digest, [line])
            text = digest.render()
    if not any(id(line) in kept for line in order if line.weight > -math.inf) and order:
        # Not one whole line fits (a date alone says nothing): the worthiest line's head.
        head = _head(_text(order[0]), budget, count)
        if head:
            return head
    if count(text) > budget:  # only the frame is left (objective, date), and it is too long
        digest.objective = digest.said_on = None
        text = digest.render()
    return text if count(text) <= budget else ""


def _remembered(count: CountTokens) -> CountTokens:
    """``count``, each text counted once per fitting."""
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        found = seen.get(text)
        if found is None:
            found = seen[text] = count(text)
        return found

    return counted


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
        _Line("fact", fact, _worth_alone(fact), i, _adds(fact), digest.heading_of(fact))
        for i, fact in enumerate(digest.facts.facts)
    ]
    gists = []
    for line in lines:
        gist = _gist(line.entry)
        if gist is not None:
            # The full line names the same values: whichever is kept first covers them.
            line.words = {**line.words, **{v.casefold(): LINKED_WORTH for v in gist.values}}
            gists.append(
                _Line("fact", gist, 0.0, line.position, _adds(gist), line.heading, gist_of=line)
            )
    lines += gists
    # A value belongs to the line that says what happened (an action's): an ask that
    # repeats it adds only what the action does not say, and costs that much less once the
    # action is kept (its value costs).
    done = {
        value.casefold()
        for line in lines
        if line.entry.attribute == "call"
        for value in line.entry.values
    }
    for line in lines:
        if line.entry.values and line.entry.attribute != "call":
            line.words = {w: LINKED_WORTH if w in done else v for w, v in line.words.items()}
    offset = len(lines)
    lines += [
        _Line("question", q, _worth_alone(q), offset + i, new_words(q.text), "Open questions")
        for i, q in enumerate(digest.questions)
    ]
    for heading, entries in digest.other.items():
        lines += [_Line(heading, e, -math.inf, i, {}, heading) for i, e in enumerate(entries)]
    return lines


def _adds(fact: Fact) -> Mapping[str, float]:
    """What a line adds: an action's line its values, one by one (a long value is one
    thing a question may name, not many words), other lines their words
    (:func:`new_words`); each worth more when its slot was filled again and again (a
    session keeps coming back to it)."""
    if fact.attribute == "call" or fact.values:
        action = fact.attribute == "call"  # what a tool returned is exact, whatever it is
        words: dict[str, float] = {
            value.casefold(): VALUE_WORTH if action or is_exact(value) else NAME_WORTH
            for value in fact.values
        }
        if fact.speaker.endswith(f" {MENTIONED}"):
            # A statement's short form: what is left when its statement does not fit, worth
            # a word a value (its statement says the same values with their meaning).
            words = {value: GIST_WORTH for value in words}
        label = parse_action(fact.text)
        if label is not None:  # its arguments: values the user gave it, worth a name each
            args = label_values(label[0])
            words.update({v.casefold(): NAME_WORTH for v in args if v.casefold() not in words})
    else:
        words = {word: float(worth) for word, worth in new_words(fact.text).items()}
    # Each fill of its slot is a time the session came back to it (a call made again); and
    # who said it: the user's own words and asks outweigh anyone else's.
    factor = float(fact.repeats)
    if fact.speaker.partition(" ")[0] == ROLE_SPEAKERS["user"]:
        factor *= USER_FACTOR
    if factor == 1:
        return words
    return {word: worth * factor for word, worth in words.items()}


#: What a statement's specific is worth as a word of its full line, beside its words: it
#: only ties the line to its short form (:func:`_gist`), so keeping both adds nothing.
LINKED_WORTH = 0.01


def _gist(fact: Fact) -> Fact | None:
    """A statement's short form: its specifics, when one is an exact value (a number, an id,
    a quoted string) and the statement says more (``User mentioned: 14:05, B32, Frankfurt``),
    for a summary with room for them but not for it. Names alone make no short form: they
    say little without the statement, whose words already weigh them."""
    if fact.kind != FACT or not fact.speaker or fact.values or fact.stated not in ("", "user"):
        return None
    said = fact.text[len(fact.speaker) + 2 :] if fact.text.startswith(fact.speaker) else fact.text
    found = specific_phrases(said)[:MAX_LINE_VALUES]
    if not any(map(is_exact, found)) or len(found) >= len(said.split()):
        return None
    line = asked_line(fact.speaker, found, MENTIONED)
    return make_fact(
        line,
        subject=fact.speaker,
        seqs=fact.seqs,
        said_on=fact.said_on,
        speaker=f"{fact.speaker} {MENTIONED}",
        values=found,
    )


def _worth_alone(fact: Fact) -> float:
    """What a line is worth before the words it adds: its kind's weight (a constraint, a
    decision or a stated preference was set down on purpose) and a share of its content
    score."""
    stated = STATED_WEIGHT if fact.stated in ("preference", "identity") else 0.0
    if fact.values or fact.attribute == "call":
        return KIND_WEIGHT.get(fact.kind, 0.0)  # what it adds is its values
    return KIND_WEIGHT.get(fact.kind, 0.0) + stated + SCORE_SHARE * score(fact.text)


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
                line.cost + line.label_cost,
                line.position,
                line.value_costs,
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


#: A line's head shorter than this says too little to be a summary (a speaker and a word).
MIN_HEAD_TOKENS = 8


def _head(text: str, budget: int, count: CountTokens) -> str:
    """``text`` cut by words to fit ``budget`` as a line marked ``...`` (``""`` when even
    :data:`MIN_HEAD_TOKENS` do not fit)."""
    if budget < MIN_HEAD_TOKENS:
        return ""
    words = text.split()
    low, high = 0, len(words)
    while low < high:  # the most words whose line, marked as cut, fits
        mid = (low + high + 1) // 2
        if count("- " + " ".join(words[:mid]) + " ...") <= budget:
            low = mid
        else:
            high = mid - 1
    if low == len(words):
        return f"- {text}"  # whole: only its heading did not fit
    head = " ".join(words[:low])
    return f"- {head} ..." if low and count(f"- {head} ...") >= MIN_HEAD_TOKENS else ""
