"""Sentences and how much they say: the scoring behind what a summary keeps.

A summary has room for a few dozen lines out of hundreds of turns, so every sentence is
scored by its content, never by who wrote it or a list of topics:

* **specifics**: names and other capitalised words inside a sentence, identifiers
  (``BA117``, ``SUP-4411``), numbers, amounts and times, and dates or time words;
* **what it is about**: a person speaking of themselves (``I``, ``my``, ``we``), of the
  people around them (family, friends, colleagues), of what they like or want, of what
  they did (a past-tense verb) or will do (a plan);
* **substance**: distinct content words, with diminishing returns, so a long ramble does
  not outweigh a short sentence full of specifics.

Greetings, acknowledgements, laughter and one-word replies score nothing. The word lists
here are closed classes of English (pronouns, kinship terms, common irregular verbs,
months), not topics of any data set.

**What to keep, by what it adds** (:func:`coverage_order`, the rule both a summary and
consolidation follow). A summary has room for a few dozen lines out of hundreds of turns,
long-term entries for a fifth of a conversation's tokens, and a later question can name
anything the conversation touched: so each candidate is worth what it is on its own (a
constraint's weight, a share of its content score) plus the words it adds that nothing kept
before it holds, per token it costs. A second line on the same words adds little; a line
with new names, numbers and things adds much. This is the greedy rule for maximum coverage
within a budget.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from memstore.core.search_terms import STOPWORDS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
#: Words that open sentences, not names ("I" aside: it is capitalised everywhere).
_OPENERS = (
    "So|And|But|The|It|Its|It's|We|You|He|She|They|My|That|This|What|How|Why|When|Where|Yes|"
    "No|Oh|Well|Also|Then|Just|Do|Did|Is|Are|Can|Haha|Lol|Ok|Okay|Yeah|Hey|Hi|Hello|Thanks"
)
_RUN_ON = re.compile(rf"(?<=[a-z0-9])\s+(?=(?:{_OPENERS})\b)")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z0-9]+)*|[#$£€]?\d[\w:./%,-]*")
_LAUGHTER = re.compile(
    r"\b(?:(?:ha|he|hi){2,}h?|a?ha+|lo+l+|lmao+|rofl|xd+|omg|o+h+|u+m+|u+h+|hm+)\b[!.,]*\s*", re.I
)
_DIGIT = re.compile(r"\d")
_SEARCH_WORD = re.compile(r"[^\W_]+")  # as the search index splits words
_LABEL = re.compile(r"^[\w .#'-]{1,24}:\s+(?=\S)")
#: A text that opens with who said it (``Caroline: ...``): up to three capitalised words and
#: a colon. A subject named like one (``Ticket T-9: ...``) matches too.
SPEAKER = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+(?=\S)")
_INNER_CAPITAL = re.compile(r"^.+[A-Z]")
_REPEATED_PUNCT = re.compile(r"([!?.])\1+")
_CHATTER = re.compile(
    r"^(hi|hello|hey|yo|thanks|thank you|thx|cheers|good (morning|afternoon|evening|night)|"
    r"ok(ay)?|k|sure|great|cool|got it|sounds good|you're welcome|perfect|nice|awesome|yes|"
    r"yeah|yep|no|nope|nah|right|true|same|me too|wow|bye|see you|welcome|alright|"
    r"of course|i see|i know|good|fine|exactly|definitely|totally|really)\b"
    r"[\s!.,:)]*(there|all|team|again|a lot|so much|man|dude|bro|then|too)?[\s!.,:)]*$",
    re.I,
)
FIRST_PERSON = _words("i i'm i've i'll i'd my me mine we we're we've our us myself")
#: People around the speaker: a sentence about them is about someone's life.
RELATIONS = _words(
    "mom mother dad father parents sister brother sibling siblings son daughter kids kid "
    "children child baby wife husband partner boyfriend girlfriend fiance fiancee friend "
    "friends family grandma grandpa grandmother grandfather aunt uncle cousin boss "
    "manager coworker colleague roommate neighbor neighbour team dog cat pet puppy"
)
PREFERENCES = _words(
    "love loves loved like likes liked hate hates hated prefer prefers preferred enjoy "
    "enjoys enjoyed favorite favourite want wants wanted wish dream fan passionate "
    "allergic vegetarian vegan"
)
PLANS = _words(
    "will gonna going plan plans planning hope hoping intend thinking next soon tomorrow "
    "tonight later upcoming schedule scheduled"
)
#: Common irregular past tenses (regular ones end in -ed): what someone did.
EVENTS = _words(
    "went got had made took saw met bought began became came found gave left lost won ran "
    "read wrote moved started finished visited joined graduated married born built sold "
    "taught learned learnt flew drove spent told heard tried adopted painted"
)
TIME_WORDS = _words(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday yesterday today tomorrow "
    "tonight weekend week month year years ago summer winter spring autumn fall birthday "
    "anniversary christmas holiday"
)
_NOT_NAMES = _words("i i'm i've i'll i'd ok okay oh lol omg")
#: Words that carry a mood, not a fact ("wow, that's so cool"): not content.
LOW_INFO = _words(
    "wow cool nice awesome great amazing yeah yes yep okay really pretty lot lots thing "
    "things stuff good bad sure well know think guess mean gonna wanna kinda sorta maybe "
    "probably actually literally totally definitely haha lol omg fun funny glad sorry "
    "thanks thank hey hello"
)


#: A request shorter than this is a sign-off ("catch you later"), not an objective.
MIN_REQUEST_WORDS = 3
#: A statement line holds at most this many of the speaker's words: the telling sentences
#: of a long turn, not all of it.
MAX_STATEMENT_WORDS = 20
#: A single sentence up to this long is kept whole rather than cut at the line's length:
#: half a sentence loses its point (the clause after the cut is often the answer).
MAX_WHOLE_SENTENCE_WORDS = 32
_CONSTRAINT_OPENERS = _words("never always don't dont only avoid must")
_DIRECTED = re.compile(
    r"^(please )?(do not|make sure)\b|\b(you|we) must (?!be\b)|\bmust not\b", re.I
)
#: A rule about something else ("the deploy must never run on Fridays"): a modal of
#: obligation with "never" or "not", or "must" before a verb other than "be".
_RULE = re.compile(r"\bmust(n't| not| never)\b|\bshould never\b|\bmust (?!be\b)[a-z]+", re.I)
#: "must have" + a past participle: a deduction about the past, not a rule.
_GUESS = re.compile(
    r"\bmust(n't| not)? have (been|done|gone|had|known|seen|made|got|gotten|heard|felt|"
    r"thought|told|said|taken|given|left|lost|found|met|come|become|[a-z]+ed|[a-z]+en)\b",
    re.I,
)
_NOT_IMPERATIVE = FIRST_PERSON | _words(
    "you you're your he she they it it's its this that that's these those there there's "
    "the a an his her their yes no yeah what's he's she's they're we"
)
#: Words an instruction opens with: the common imperative verbs of tasks, and polite
#: openings ("please", "can you").
_REQUEST_OPENERS = _words(
    "please can could would will let's help check find look investigate fix write make tell "
    "show give book send add remove delete update create run deploy verify get list explain "
    "summarize summarise compare plan schedule cancel order buy draft review prepare set "
    "change move call email remind search open close start stop restart build test debug "
    "analyze analyse diagnose trace use try translate calculate estimate rename install "
    "upgrade configure reply answer confirm"
)
_LEAD_WORDS = _words("also please now then next so and but just ok okay")


def sentences(text: str) -> list[str]:
    """``text`` split into sentences, white space flattened. Chat often runs messages
    together without a full stop ("no idea So I was at church"): a capitalised opening
    word after a lower-case one starts a sentence too."""
    parts = _SENTENCE_END.split(text.strip())
    return [p.strip() for part in parts for p in _RUN_ON.split(part) if p.strip()]


def tidy(sentence: str) -> str:
    """A sentence without laughter, fillers and repeated punctuation (its words unchanged)."""
    cleaned = _REPEATED_PUNCT.sub(r"\1", _LAUGHTER.sub("", sentence))
    cleaned = " ".join(cleaned.split()).strip(" ,;")
    return cleaned[:1].upper() + cleaned[1:] if cleaned else ""


def is_chatter(sentence: str) -> bool:
    """A greeting, an acknowledgement or a reply of a word or two that says nothing."""
    tokens = _TOKEN.findall(sentence)
    return not tokens or bool(_CHATTER.match(sentence.strip())) or (
        len(tokens) <= 2 and not _DIGIT.search(sentence)
    )  # fmt: skip


def is_question(sentence: str) -> bool:
    """Ends with a question mark."""
    return sentence.rstrip().endswith("?")


def salient_tokens(sentence: str) -> list[str]:
    """Names, identifiers and numbers: the tokens a fact about something cannot lose (a
    capitalised word counts inside a sentence, not as its first word)."""
    out = []
    for index, token in enumerate(_TOKEN.findall(sentence)):
        if _DIGIT.search(token) or (
            (_INNER_CAPITAL.search(token) or (index and token[0].isupper()))
            and token.lower() not in _NOT_NAMES
        ):
            out.append(token.rstrip(".,:"))
    return out


def telling_words(text: str) -> frozenset[str]:
    """The words a question could find ``text`` by: its runs of letters and digits,
    lower-cased, less the common words a search sets aside."""
    return frozenset(word for word in _SEARCH_WORD.findall(text.lower()) if word not in STOPWORDS)


def content_words(sentence: str) -> list[str]:
    """Lower-cased words that are not function words (three letters or more)."""
    return [
        word
        for word in (token.lower() for token in _TOKEN.findall(sentence))
        if len(word) > 2
        and word[0].isalpha()
        and "'" not in word
        and "’" not in word
        and word not in STOPWORDS
        and word not in LOW_INFO
    ]


@functools.lru_cache(maxsize=8192)
def score(sentence: str) -> float:
    """How much a sentence says (module docstring); 0 for chatter. Cached: a fold scores
    the same lines again (a previous summary's, a fact's text)."""
    if is_chatter(sentence):
        return 0.0
    tokens = [token.lower() for token in _TOKEN.findall(sentence)]
    words = set(tokens)
    content = set(content_words(sentence))
    salient = set(salient_tokens(sentence))
    value = 0.5 * min(len(content), 10) + 1.2 * min(len(salient), 4)
    value += 1.0 if _DIGIT.search(sentence) else 0.0
    value += 1.0 if words & TIME_WORDS else 0.0
    if words & FIRST_PERSON:
        value += 1.0
        value += 1.0 if words & PREFERENCES else 0.0
        value += 0.8 if words & PLANS else 0.0
        did = words & EVENTS or any(len(w) > 4 and w.endswith("ed") for w in words)
        value += 0.8 if did else 0.0
    value += 1.0 if words & RELATIONS else 0.0
    if len(tokens) < 4:
        value -= 1.5
    return max(value, 0.0)


def best_of(said: list[str], words: int = MAX_STATEMENT_WORDS) -> str:
    """The highest-scoring sentences of a turn that fit ``words``, in the order said (one
    sentence longer than that is kept whole up to :data:`MAX_WHOLE_SENTENCE_WORDS`, else
    cut, marked with ``...``)."""
    ranked = sorted(range(len(said)), key=lambda i: -score(said[i]))
    chosen: list[int] = []
    used = 0
    for index in ranked:
        size = len(said[index].split())
        if chosen and used + size > words:
            continue
        chosen.append(index)
        used += size
    text = " ".join(said[i] for i in sorted(chosen))
    parts = text.split()
    if len(parts) <= max(words, MAX_WHOLE_SENTENCE_WORDS if len(chosen) == 1 else 0):
        return text
    return " ".join(parts[:words]) + " ..."


def is_request(sentence: str) -> bool:
    """An instruction: it opens with a verb of asking or doing (``Check ...``, ``Please
    book ...``, ``Can you ...``), says enough to be a task, and is not a constraint."""
    words = [w.strip(",.!:;").lower() for w in sentence.split()]
    return (
        len(words) >= MIN_REQUEST_WORDS
        and (
            words[0] in _REQUEST_OPENERS
            or (words[0] in _LEAD_WORDS and first_word(sentence) in _REQUEST_OPENERS)
        )
        and not is_constraint(sentence)
    )


def is_constraint(sentence: str) -> bool:
    """An instruction that limits what may be done: it opens with the limit (``Never ...``,
    ``Only ...``, ``Make sure ...``) or tells someone what they must do (``you must``).
    ``must have`` with a past participle is a guess about the past (``you must have hiked
    it``), not an obligation."""
    if _GUESS.search(sentence):
        return False
    if _DIRECTED.search(sentence):
        return True
    if _RULE.search(sentence) and first_word(sentence) not in FIRST_PERSON:
        return True
    words = [w.strip(",.!:;").lower() for w in sentence.split()]
    first = first_word(sentence)
    if first not in _CONSTRAINT_OPENERS or first not in words:
        return False
    verb = words[words.index(first) + 1] if words.index(first) + 1 < len(words) else ""
    # An imperative takes the verb's base form: "Never restart ...", not "Never hurts ...".
    return not (verb.endswith("s") and not verb.endswith("ss"))


def first_word(sentence: str) -> str:
    """The word a sentence opens with, past a short label (``Turn 3: never ...``) and
    lead words (``also``, ``please``)."""
    label = _LABEL.match(sentence)
    words = [w.strip(",.!:;").lower() for w in sentence[label.end() if label else 0 :].split()]
    for word in words:
        if word not in _LEAD_WORDS:
            return word
    return ""


# -- what to keep, by what it adds (module docstring) -----------------------------------------

#: What a candidate's own content score (3 to 15: names, numbers, dates, what someone did)
#: counts beside the words it adds: a few words' worth, so a sentence with specifics goes
#: before one of ordinary words, but one that adds nothing new does not outrank one that does.
SCORE_SHARE = 0.3


@dataclass(frozen=True)
class Candidate:
    """Something that may be kept.

    Attributes:
        words: What it would add (:func:`new_words`): each word and what it is worth.
        worth: What it is worth on its own, in words' worth.
        cost: Its tokens (at least 1 counts).
        rank: Among candidates alike, the higher goes first (the newer line, the older fact).
    """

    words: Mapping[str, int]
    worth: float
    cost: int
    rank: float = 0.0


@functools.lru_cache(maxsize=8192)
def new_words(text: str) -> Mapping[str, int]:
    """The words ``text`` could add, its label's too (a subject's id says what a line is
    about; a speaker's name is soon covered), each worth 1, or 2 for a name, an identifier
    or a number (what a fact cannot lose). A single letter or digit says little on its own
    (``day 4``), and chatter (``ok``) nothing."""
    said = _LABEL.sub("", text, count=1)
    if is_chatter(said):
        return MappingProxyType({})
    specific = {word for token in salient_tokens(said) for word in telling_words(token)}
    words = {word: 2 if word in specific else 1 for word in telling_words(text) if len(word) > 1}
    return MappingProxyType(words)  # read-only: cached, since every fold rates its lines again


def coverage_order(candidates: Sequence[Candidate]) -> list[int]:
    """The indexes of ``candidates`` in the order they are worth keeping: greedily, the most
    said per token, where what one says is its own worth plus what the words it adds that
    none before it holds are worth (module docstring)."""
    covered: set[str] = set()

    def worth(candidate: Candidate) -> float:
        adds = sum(value for word, value in candidate.words.items() if word not in covered)
        return (candidate.worth + adds) / max(candidate.cost, 1)

    # Lazy greedy: a candidate's worth only falls as its words are covered, so one whose
    # fresh worth still tops the heap is the best one (no need to re-rate all of them).
    heap = [(-worth(c), -c.rank, n) for n, c in enumerate(candidates)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, rank, n = heapq.heappop(heap)
        fresh = worth(candidates[n])
        if heap and fresh < -heap[0][0]:
            heapq.heappush(heap, (-fresh, rank, n))
            continue
        order.append(n)
        covered.update(candidates[n].words)  # the next candidate on these words says less
    return order
