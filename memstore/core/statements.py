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
"""

from __future__ import annotations

import re

from memstore.core.search_terms import STOPWORDS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z0-9]+)*|[#$£€]?\d[\w:./%,-]*")
_LAUGHTER = re.compile(
    r"\b(?:(?:ha|he|hi){2,}h?|a?ha+|lo+l+|lmao+|rofl|xd+|omg|o+h+|u+m+|u+h+|hm+)\b[!.,]*\s*", re.I
)
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


def sentences(text: str) -> list[str]:
    """``text`` split into sentences, white space flattened."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def tidy(sentence: str) -> str:
    """A sentence without laughter, fillers and repeated punctuation (its words unchanged)."""
    cleaned = _REPEATED_PUNCT.sub(r"\1", _LAUGHTER.sub("", sentence))
    cleaned = " ".join(cleaned.split()).strip(" ,;")
    return cleaned[:1].upper() + cleaned[1:] if cleaned else ""


def is_chatter(sentence: str) -> bool:
    """A greeting, an acknowledgement or a reply of a word or two that says nothing."""
    tokens = _TOKEN.findall(sentence)
    return not tokens or bool(_CHATTER.match(sentence.strip())) or (
        len(tokens) <= 2 and not any(ch.isdigit() for ch in sentence)
    )  # fmt: skip


def is_question(sentence: str) -> bool:
    """Ends with a question mark."""
    return sentence.rstrip().endswith("?")


def salient_tokens(sentence: str) -> list[str]:
    """Names, identifiers and numbers: the tokens a fact about something cannot lose."""
    tokens = _TOKEN.findall(sentence)
    out = []
    for index, token in enumerate(tokens):
        digits = any(ch.isdigit() for ch in token)
        capital = token[:1].isupper() and token.lower() not in _NOT_NAMES
        inner_capital = any(ch.isupper() for ch in token[1:]) and token.lower() not in _NOT_NAMES
        if digits or inner_capital or (capital and index > 0):
            out.append(token.rstrip(".,:"))
    return out


def content_words(sentence: str) -> list[str]:
    """Lower-cased words that are not function words (three letters or more)."""
    return [
        word
        for word in (token.lower().strip("'’") for token in _TOKEN.findall(sentence))
        if len(word) > 2
        and word[0].isalpha()
        and "'" not in word
        and "’" not in word
        and word not in STOPWORDS
        and word not in LOW_INFO
    ]


def score(sentence: str) -> float:
    """How much a sentence says (module docstring); 0 for chatter."""
    if is_chatter(sentence):
        return 0.0
    tokens = [token.lower() for token in _TOKEN.findall(sentence)]
    words = set(tokens)
    content = set(content_words(sentence))
    salient = salient_tokens(sentence)
    value = 0.5 * min(len(content), 10) + 1.2 * min(len(set(salient)), 4)
    value += 1.0 if any(any(ch.isdigit() for ch in token) for token in tokens) else 0.0
    value += 1.0 if words & TIME_WORDS else 0.0
    if words & FIRST_PERSON:
        value += 1.0
        value += 1.0 if words & PREFERENCES else 0.0
        value += 0.8 if words & PLANS else 0.0
        value += (
            0.8 if words & EVENTS or any(w.endswith("ed") and len(w) > 4 for w in words) else 0.0
        )
    value += 1.0 if words & RELATIONS else 0.0
    if len(tokens) < 4:
        value -= 1.5
    return max(value, 0.0)
