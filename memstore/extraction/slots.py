"""Consolidation's rules: which long-term entry a fact belongs to, and what happens to it.

A fact an extractor finds (:class:`memstore.extraction.facts.Fact`) names a *slot*: its subject and
attribute ("user" + "home city"). The slot is the entry's key, ``fact:<subject>:<attribute>``
(:func:`slot_key`), in the scope of the session it came from; the entry's value is the fact's
text as it was said. Consolidation writes only keys under :data:`FACT_PREFIX`, so the keys an
application chooses are never touched.

What happens to each proposed fact is decided here, before any write, from what the slot
holds now (:class:`SlotState`), in this order:

1. **one per slot.** Of two facts of one run about the same slot, the one said later wins;
   the other is skipped (``later in the same run``).
2. **people win.** A slot whose live entry a person or the application wrote (it has no
   ``source``: ``ltm set``, ``remember``, the MCP tools) is never overwritten: skipped
   (``written by a person or the application``).
3. **idempotent on the fact.** A fact whose text the slot holds now, or held at any version
   before, writes nothing and bumps no version (``already known`` / ``already recorded``):
   consolidating the same items twice, or an imported copy of them, is a no-op; so is an
   older fact that a newer one already superseded. So is a fact an earlier run left out for
   its budget, or wrote and a person deleted since (``already considered``).
4. **newer supersedes older.** A fact said before the live entry's fact is skipped
   (``older than the entry``); otherwise it replaces the entry as a new version, and the
   entry's history keeps the old one.
5. **what a person would note first.** What the user *stated* (a preference, who they are,
   a rule, a decision; :attr:`memstore.extraction.facts.Fact.stated`) is always written, and
   so is every other statement of the user's in a conversation of at most
   :data:`SHORT_CONVERSATION_TOKENS`: a short chat's few facts are the whole point of it.
6. **compact.** The rest the session's runs write holds at most :func:`budget_for` the
   tokens of the items they consumed (counted over all its runs, so a small batch's unspent
   budget goes to the next); the facts that add most per token are taken first, by the rule
   the summary keeps its lines by (:func:`memstore.extraction.statements.coverage_order`: a
   share of the extractor's weight and the words no fact taken before holds, over the
   entry's tokens; ``over the budget`` for the rest).

Pure code: the reads and the transaction are :mod:`memstore.db.consolidation_runs`, the run
:mod:`memstore.memory.consolidation`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from memstore.core.consolidation_report import OVER_BUDGET, SKIP, SUPERSEDE, WRITE, Decision
from memstore.core.dates import parse_formatted
from memstore.extraction.protocols import FactLike
from memstore.extraction.specifics import has_digit
from memstore.extraction.statements import (
    SCORE_SHARE,
    Candidate,
    content_units,
    coverage_order,
    new_words,
)

#: Every key consolidation writes starts with this: the rest of the key space is the
#: application's.
FACT_PREFIX = "fact:"
#: A long conversation's entries may hold at most this share of its tokens: a digest, not a
#: second transcript (a quarter: room for its stated facts and the telling rest).
ENTRY_SHARE = 0.25
#: A conversation up to this long is a short one: everything its user stated is written,
#: and its entries may hold this many tokens (past it, the budget stays this until the
#: share of a longer conversation is more).
SHORT_CONVERSATION_TOKENS = 2000
#: What the user stated on purpose, written whatever the budget.
ALWAYS_WRITTEN = frozenset({"preference", "identity", "decision", "constraint"})
#: Keys are read by people in listings; a longer slot name is clipped and made unique by a
#: short hash of the whole.
MAX_SLOT_CHARS = 120
#: Content words that name a slot without an attribute: enough to recognise it in a listing.
SLUG_WORDS = 2
#: Hex digits of the hash that tells facts with the same first words apart (24 bits): keys
#: cost tokens in every listing and model input, so no more than that.
DIGEST_CHARS = 6


PERSON_WROTE = "written by a person or the application"
ALREADY_KNOWN = "already known"
ALREADY_RECORDED = "already recorded in the entry's history"
ALREADY_CONSIDERED = "already considered by an earlier run"
OLDER = "older than the entry"
LATER_IN_RUN = "a later fact of this run fills the slot"

CountTokens = Callable[[str], int]


_UNSAFE = re.compile(r"[^\w.@+-]+")
#: The speaker's label a statement's text opens with, left out of its slot's words.
_SPEAKER = re.compile(r"^[^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}:\s+(?=\S)")


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", " ".join(text.split()).casefold()).strip("-") or "_"


@functools.lru_cache(maxsize=16384)
def slot_key(subject: str, attribute: str, text: str = "", identity: bool = False) -> str:
    """The entry key of a fact's slot, lowercase, white space and punctuation as ``-``.

    ``fact:<subject>:<attribute>`` when the extractor named an attribute (a newer fact about
    it supersedes the older); otherwise the fact is its own slot, named by its first content
    words and a short hash of all of them (``fact:user:sister-maria~3f2a9c``),
    so the same fact said again, in any punctuation, lands on the same key. An ``identity``
    fact (``my passport number is ...``) is named without the words that hold a digit: what
    it is about is its slot, its value what a newer statement replaces. Past
    :data:`MAX_SLOT_CHARS` the slot is clipped and made unique by a hash of the whole.
    """
    if attribute.strip():
        slot = f"{_slug(subject)}:{_slug(attribute)}"
    else:
        words = content_units(_SPEAKER.sub("", text, count=1))
        if identity:
            words = tuple(word for word in words if not has_digit(word))
        digest = hashlib.sha256(" ".join(sorted(set(words))).encode()).hexdigest()
        digest = digest[:DIGEST_CHARS]
        slot = f"{_slug(subject)}:{_slug(' '.join(words[:SLUG_WORDS]))}~{digest}"
    if len(slot) > MAX_SLOT_CHARS:
        digest = hashlib.sha256(slot.encode()).hexdigest()[:10]
        slot = f"{slot[: MAX_SLOT_CHARS - 11]}~{digest}"
    return FACT_PREFIX + slot


def fact_slot(fact: FactLike) -> str:
    """The entry key of ``fact`` (:func:`slot_key`)."""
    identity = getattr(fact, "stated", "") == "identity"
    return slot_key(fact.subject, fact.attribute, fact.text, identity)


def normalized_text(text: str) -> str:
    """A fact's text for comparisons: white space and case aside."""
    return " ".join(str(text).split()).casefold()


def fact_digest(text: str) -> str:
    """A fact's text as a short fixed digest (white space and case aside)."""
    return hashlib.sha256(normalized_text(text).encode()).hexdigest()[:32]


def said_on_text(said_on: Any) -> str | None:
    """A fact's date as ISO 8601 text, which sorts in time order (``8 May 2023`` becomes
    ``2023-05-08``; ``None`` when unknown)."""
    if said_on is None:
        return None
    if isinstance(said_on, (datetime, date)):
        return said_on.isoformat()
    day = parse_formatted(str(said_on))
    return str(said_on) if day is None else day.isoformat()


@dataclass(frozen=True)
class SlotState:
    """What a slot holds when a run plans.

    Attributes:
        version: The live entry's version (0: no live entry).
        value: The live entry's value (``None``: no live entry).
        source: The live entry's provenance; ``None`` when a person or the application wrote
            it (or there is no live entry).
        seen: Every text the slot ever held (normalized), the live one included.
        considered: The digests (:func:`fact_digest`) of the facts earlier runs decided on
            for this slot: written, or left out for their budget.
    """

    version: int = 0
    value: Any = None
    source: Mapping[str, Any] | None = None
    seen: frozenset[str] = frozenset()
    considered: frozenset[str] = frozenset()

    @property
    def live(self) -> bool:
        """Whether the slot has a live entry."""
        return self.version > 0 and self.value is not None


def budget_for(source_tokens: int) -> int:
    """The tokens the entries of a conversation of ``source_tokens`` may hold, beside what
    is always written: all of a short one, :data:`SHORT_CONVERSATION_TOKENS` of a middling
    one, :data:`ENTRY_SHARE` of a long one."""
    return int(max(min(source_tokens, SHORT_CONVERSATION_TOKENS), source_tokens * ENTRY_SHARE))


def always_written(fact: FactLike, short: bool) -> bool:
    """Whether ``fact`` is written whatever the budget (module docstring, rule 5)."""
    stated = str(getattr(fact, "stated", "") or "")
    return stated in ALWAYS_WRITTEN or (short and stated == "user")


def entry_cost(key: str, text: str, count: CountTokens) -> int:
    """What an entry weighs: its key and its text."""
    return count(f"{key} {text}")


def _newest_first(facts: Iterable[FactLike]) -> list[FactLike]:
    return sorted(facts, key=lambda f: (said_on_text(f.said_on) or "", max(f.seqs, default=0)))[
        ::-1
    ]


def decide(
    facts: Sequence[FactLike],
    slots: Mapping[str, SlotState],
    *,
    budget: int,
    count: CountTokens,
    short: bool = False,
) -> list[Decision]:
    """Decide each fact's fate (module docstring): what is always written first, then the
    rest most said per token first, within ``budget``.

    Args:
        facts: What the extractor proposed.
        slots: The state of every slot those facts name (a missing key: an empty slot).
        budget: Tokens the entries not always written may hold together.
        count: The session's token estimator.
        short: The conversation is a short one (rule 5: every statement of the user's is
            written).

    Returns:
        One decision per fact: those that write first (in the order chosen), then the
        skipped.
    """
    chosen: dict[str, FactLike] = {}
    decisions: list[Decision] = []
    for fact in _newest_first(facts):
        key = fact_slot(fact)
        if key in chosen:
            decisions.append(_decision(key, fact, SKIP, LATER_IN_RUN, count))
        else:
            chosen[key] = fact
    pairs = list(chosen.items())
    first = [n for n, (_, fact) in enumerate(pairs) if always_written(fact, short)]
    exempt = set(first)
    rest = [n for n in range(len(pairs)) if n not in exempt]
    # What adds most per token first (:func:`coverage_order`): a budget holds more of what
    # a later question asks for as many short facts on different things than as a few long
    # ones, or several on the same thing.
    costs = [entry_cost(key, fact.text, count) for key, fact in pairs]
    candidates = [
        Candidate(
            new_words(pairs[n][1].text),
            SCORE_SHARE * pairs[n][1].weight,
            costs[n],
            -min(pairs[n][1].seqs, default=0),
        )
        for n in rest
    ]
    ranked = first + [rest[i] for i in coverage_order(candidates)]
    used = 0
    writes: list[Decision] = []
    for n in ranked:
        key, fact = pairs[n]
        state = slots.get(key, SlotState())
        action, reason = _verdict(fact, state)
        if action != SKIP and n not in exempt and used + costs[n] > budget:
            action, reason = SKIP, OVER_BUDGET
        if action != SKIP and n not in exempt:
            used += costs[n]
        made = _decision(key, fact, action, reason, count, state)
        (writes if made.writes else decisions).append(made)
    return writes + decisions


def _verdict(fact: FactLike, state: SlotState) -> tuple[str, str | None]:
    text = normalized_text(fact.text)
    if state.live and state.source is None:
        return SKIP, PERSON_WROTE
    if state.live and normalized_text(str(state.value)) == text:
        return SKIP, ALREADY_KNOWN
    if text in state.seen:
        return SKIP, ALREADY_RECORDED
    if fact_digest(fact.text) in state.considered:
        return SKIP, ALREADY_CONSIDERED
    if not state.live:
        return WRITE, None
    said = said_on_text(fact.said_on)
    theirs = None if state.source is None else state.source.get("said_on")
    if said is not None and isinstance(theirs, str) and said < theirs:
        return SKIP, OLDER
    return SUPERSEDE, None


def _decision(
    key: str,
    fact: FactLike,
    action: str,
    reason: str | None,
    count: CountTokens,
    state: SlotState | None = None,
) -> Decision:
    state = state or SlotState()
    return Decision(
        key=key,
        text=" ".join(fact.text.split()),
        action=action,
        reason=reason,
        seqs=tuple(sorted(set(fact.seqs))),
        said_on=said_on_text(fact.said_on),
        weight=float(fact.weight),
        expected_version=state.version if state.live else 0,
        tokens=entry_cost(key, fact.text, count),
        replaced=state.value if action == SUPERSEDE else None,
    )


def provenance(
    session_id: str,
    decision: Decision,
    *,
    run: int | None,
    compaction: int | None,
    extractor: str,
) -> dict[str, Any]:
    """The ``source`` an entry written by consolidation carries."""
    return {
        "session": session_id,
        "seqs": list(decision.seqs),
        "compaction": compaction,
        "extractor": extractor,
        "run": run,
        "said_on": decision.said_on,
    }
