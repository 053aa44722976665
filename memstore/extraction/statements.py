"""Sentences and what they are worth: the rules behind what a summary and consolidation keep.

A summary has room for a few dozen lines out of hundreds of turns, so every sentence is
weighed by its structure, never by its topic, in any language:

* **specifics** (:mod:`memstore.extraction.specifics`): names, ids, numbers, amounts,
  quoted strings, dates, code identifiers, paths: what a later question names;
* **what kind of statement it is** (:mod:`memstore.extraction.language`): a person speaking
  of themselves, a stated preference, who they are, a choice made, a rule set;
* **substance**: the distinct content words (units, for Chinese and Japanese) that are not
  function words, with diminishing returns, so a long ramble does not outweigh a short
  sentence full of specifics.

Greetings, acknowledgements and one-word replies are worth nothing.

**What to keep, by what it adds** (:func:`coverage_order`, the rule both a summary and
consolidation follow). A later question can name anything the conversation touched: so each
candidate is worth what it is on its own plus the words it adds that nothing kept before it
holds, per token it costs. A second line on the same words adds little; a line with new
names, numbers and things adds much. This is the greedy rule for maximum coverage within a
budget.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from memstore.core.dates import find_date
from memstore.core.words import has_unspaced, units, word_units, words
from memstore.extraction.language import (
    has_cue,
    is_chatter_text,
    opens_with,
    relative_days,
    word_set,
)
from memstore.extraction.specifics import exact_units, has_digit, specific_units, specifics, tokens

#: Where one sentence ends: terminal punctuation of any script before white space (or a
#: Chinese or Japanese stop, which needs none), or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)|(?<=[。！？])\s*(?=\S)|\n+")
_LAUGHTER = re.compile(
    r"(?<!\w)(?:(?:ha|he|hi){2,}h?|a?ha+|lo+l+|lmao+|rofl|xd+|omg|хаха+|ахах+|哈哈+|www+|jaja+)"
    r"(?!\w)[!.,]*\s*",
    re.I,
)
_REPEATED_PUNCT = re.compile(r"([!?.。！？])\1+")
_QUESTION = re.compile(r"[?？]\s*$")
#: "must have" with a past participle: a guess about the past ("you must have been tired").
_GUESS = re.compile(r"\bmust(n't| not)? have (been|[a-z]+ed|[a-z]+en)\b", re.I)

#: A statement scoring below this says too little to keep alone (a bare "I agree"): one
#: content word and a first-person pronoun fall short, a name and a number do not.
MIN_STATEMENT_SCORE = 3.0
#: A reply that answers a question needs less: the question made it matter.
MIN_ANSWER_SCORE = 1.5
#: A request shorter than this is a sign-off ("catch you later"), not an objective.
MIN_REQUEST_WORDS = 3
#: A statement line holds at most this many of the speaker's words: the telling sentences
#: of a long turn, not all of it.
MAX_STATEMENT_WORDS = 20
#: A single sentence up to this long is kept whole rather than cut at the line's length:
#: half a sentence loses its point (the clause after the cut is often the answer).
MAX_WHOLE_SENTENCE_WORDS = 32
#: Chinese and Japanese characters per "word" when a line's length is counted in words: a
#: word of those scripts is about two characters long.
CHARS_PER_UNSPACED_WORD = 2


def sentences(text: str) -> list[str]:
    """``text`` split into sentences (any script's stops, line breaks), space flattened."""
    return [" ".join(part.split()) for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def tidy(sentence: str) -> str:
    """A sentence without laughter, fillers and repeated punctuation (its words unchanged)."""
    cleaned = _REPEATED_PUNCT.sub(r"\1", _LAUGHTER.sub("", sentence))
    cleaned = " ".join(cleaned.split()).strip(" ,;")
    return cleaned[:1].upper() + cleaned[1:] if cleaned else ""


def length(text: str) -> int:
    """How many words ``text`` holds, a run of Chinese or Japanese counted by
    :data:`CHARS_PER_UNSPACED_WORD`."""
    count = 0
    for word in text.split():
        if has_unspaced(word):
            count += max(1, len(word) // CHARS_PER_UNSPACED_WORD)
        else:
            count += 1
    return count


def is_question(sentence: str) -> bool:
    """Ends with a question mark (of any script), or a question particle that ends a
    question without one (``吗``)."""
    if _QUESTION.search(sentence):
        return True
    stripped = sentence.rstrip(" .。!！")
    return (
        bool(stripped) and has_unspaced(stripped[-1]) and stripped[-1] in word_set("question_end")
    )


def is_chatter(sentence: str) -> bool:
    """A greeting, an acknowledgement or a reply of a word or two that says nothing."""
    if not word_units(sentence):
        return True
    if is_chatter_text(sentence):
        return True
    return length(sentence) <= 2 and not specifics(sentence)


@functools.cache
def _not_content() -> frozenset[str]:
    return word_set("function") | word_set("first_person") | word_set("chatter")


@functools.lru_cache(maxsize=16384)
def content_units(sentence: str) -> tuple[str, ...]:
    """The units of a sentence that are not function words or chatter, in order: words of
    three letters or more, or the character pairs of a Chinese or Japanese run."""
    skip = _not_content()
    out: list[str] = []
    for word in words(sentence):
        if word in skip:
            continue
        if has_unspaced(word):
            out += [unit for unit in units(word) if unit not in skip]
        elif len(word) > 2 and not word.isdigit():
            out.append(word)
    return tuple(out)


def is_first_person(sentence: str) -> bool:
    """Whether the speaker speaks of themselves (a first-person pronoun, any language)."""
    return has_cue("first_person", sentence)


def statement_cue(sentence: str) -> str:
    """What a sentence states, if a closed-class cue says so: ``"preference"``,
    ``"identity"`` or ``"decision"`` (``""``: none)."""
    for cue in ("preference", "identity", "decision"):
        if has_cue(cue, sentence):
            return cue
    return ""


def is_constraint(sentence: str) -> bool:
    """A rule: it opens with a limit (``Never ...``, ``Only ...``, ``Всегда ...``, ``不要
    ...``) or states an obligation (``you must``, ``нельзя``, ``必须``). ``must have`` with a
    past participle is a guess about the past, and an obligation the speaker states about
    themselves (``I must say``) sets no rule."""
    if is_question(sentence) or _GUESS.search(sentence):
        return False
    if opens_with("constraint_opener", sentence):
        return length(sentence) >= 3
    return has_cue("obligation", sentence) and not opens_with("first_person", sentence)


def is_request(sentence: str) -> bool:
    """An instruction: it asks for something with a closed-class request cue (``please``,
    ``can you``, ``пожалуйста``, ``请``), says enough to be a task, and is no constraint."""
    return (
        length(sentence) >= MIN_REQUEST_WORDS
        and has_cue("request", sentence)
        and not is_constraint(sentence)
    )


def has_date(sentence: str) -> bool:
    """Whether a sentence names a day: a calendar date or a relative one (``yesterday``)."""
    return find_date(sentence) is not None or bool(relative_days(sentence))


@functools.lru_cache(maxsize=8192)
def score(sentence: str) -> float:
    """How much a sentence says (module docstring); 0 for chatter. Cached: a fold scores
    the same lines again (a previous summary's, a fact's text)."""
    if is_chatter(sentence):
        return 0.0
    content = set(content_units(sentence))
    found = specifics(sentence)
    value = 0.5 * min(len(content), 10) + 1.2 * min(len(found), 4)
    value += 1.0 if has_digit(sentence) else 0.0
    value += 1.0 if has_date(sentence) else 0.0
    if is_first_person(sentence):
        value += 1.0
        value += 2.0 if statement_cue(sentence) else 0.0
    if length(sentence) < 4:
        value -= 1.5
    return max(value, 0.0)


def best_of(said: list[str], limit: int = MAX_STATEMENT_WORDS) -> str:
    """The highest-scoring sentences of a turn that fit ``limit`` words, in the order said
    (one sentence longer than that is kept whole up to :data:`MAX_WHOLE_SENTENCE_WORDS`,
    else cut, marked with ``...``)."""
    ranked = sorted(range(len(said)), key=lambda i: -score(said[i]))
    chosen: list[int] = []
    used = 0
    for index in ranked:
        size = length(said[index])
        if chosen and used + size > limit:
            continue
        chosen.append(index)
        used += size
    text = " ".join(said[i] for i in sorted(chosen))
    if length(text) <= max(limit, MAX_WHOLE_SENTENCE_WORDS if len(chosen) == 1 else 0):
        return text
    return _clip_words(text, limit)


def _clip_words(text: str, limit: int) -> str:
    """The first ``limit`` words of ``text`` (counted as :func:`length` does) and ``...``."""
    kept: list[str] = []
    used = 0
    for word in text.split():
        size = length(word)
        if used + size > limit:
            if has_unspaced(word) and used < limit:  # a long run: its first characters
                kept.append(word[: (limit - used) * CHARS_PER_UNSPACED_WORD])
            break
        kept.append(word)
        used += size
    return " ".join(kept) + " ..."


# -- what to keep, by what it adds (module docstring) -----------------------------------------

#: What a candidate's own content score (3 to 15: names, numbers, dates, a stated
#: preference) counts beside the words it adds: a few words' worth, so a sentence with
#: specifics goes before one of ordinary words, but one that adds nothing new does not
#: outrank one that does.
SCORE_SHARE = 0.3
#: What a unit that is part of a name (or any specific: an id, a number) is worth in what a
#: line adds, against 1 for any other word: a fact cannot lose it.
NAME_WORTH = 2
#: What a unit of an exact value (a number, an id, a path, a quoted string) is worth in a
#: statement's words: a name's worth and a word's more, since no paraphrase gives it back.
EXACT_WORTH = 3
#: A line's label (``Caroline: ...``, ``Order 3: ...``): a short name and a colon.
_LABEL = re.compile(r"^[\w .#'-]{1,24}:\s+(?=\S)")


@dataclass(frozen=True)
class Candidate:
    """Something that may be kept.

    Attributes:
        words: What it would add (:func:`new_words`): each word and what it is worth.
        worth: What it is worth on its own, in words' worth.
        cost: Its tokens (at least 1 counts).
        rank: Among candidates alike, the higher goes first (the newer line, the older fact).
    """

    words: Mapping[str, float]
    worth: float
    cost: int
    rank: float = 0.0
    #: What each of its words costs, for a line that leaves out a word a line kept before
    #: it holds (an action's values are said once); the rest of ``cost`` is paid anyway.
    word_costs: Mapping[str, int] | None = None

    def cost_given(self, covered: set[str]) -> int:
        """Its tokens when the words in ``covered`` are said elsewhere."""
        if not self.word_costs:
            return self.cost
        saved = sum(cost for word, cost in self.word_costs.items() if word in covered)
        return max(self.cost - saved, 1)


@functools.lru_cache(maxsize=8192)
def new_words(text: str) -> Mapping[str, float]:
    """The units ``text`` could add, its label's too (a subject's id says what a line is
    about), each worth 1, or :data:`NAME_WORTH` for part of a specific. A single letter
    or digit says little on its own (``day 4``), a function word nothing, and chatter
    (``ok``) nothing."""
    said = _LABEL.sub("", text, count=1)
    if is_chatter(said):
        return MappingProxyType({})
    special, exact = specific_units(said), exact_units(said)
    skip = word_set("function")
    words_worth = {
        unit: EXACT_WORTH if unit in exact else NAME_WORTH if unit in special else 1
        for unit in word_units(text)
        if (len(unit) > 1 or has_unspaced(unit) or unit in exact) and unit not in skip
    }
    return MappingProxyType(words_worth)  # read-only: cached, every fold rates lines again


def coverage_order(candidates: Sequence[Candidate]) -> list[int]:
    """The indexes of ``candidates`` in the order they are worth keeping: greedily, the most
    said per token, where what one says is its own worth plus what the words it adds that
    none before it holds are worth (module docstring)."""
    covered: set[str] = set()

    def worth(candidate: Candidate) -> float:
        adds = sum(value for word, value in candidate.words.items() if word not in covered)
        return (candidate.worth + adds) / candidate.cost_given(covered)

    # Lazy greedy: a candidate's worth only falls as its words are covered, so one whose
    # fresh worth still tops the heap is the best one (no need to re-rate all of them).
    heap = [(-worth(c), -c.rank, n) for n, c in enumerate(candidates)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, rank, n = heapq.heappop(heap)
        fresh = worth(candidates[n])
        if heap and fresh < -heap[0][0] - 1e-12:
            heapq.heappush(heap, (-fresh, rank, n))
            continue
        order.append(n)
        covered.update(candidates[n].words)  # the next candidate on these words says less
    return order


def salient_tokens(text: str) -> list[str]:
    """The specifics of ``text`` (names, ids, numbers), as a list."""
    return list(specifics(text))


def all_tokens(text: str) -> list[str]:
    """Every token of ``text`` (:func:`memstore.extraction.specifics.tokens`)."""
    return tokens(text)
