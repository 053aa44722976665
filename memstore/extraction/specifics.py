"""Specifics: the parts of a text a fact cannot lose, found by their shape in any language.

A later question names a booking reference, an amount, a date, a person or a file; a summary
that kept the sentence's gist but lost ``ABX-1234`` answered nothing. A specific is found by
what it looks like, never by a list of topics:

* **numbers** and anything holding a digit: amounts, times, dates, versions, ids
  (``1720ms``, ``$54.30``, ``14:05``, ``2024-06-14``, ``v2.3``, ``SUP-4411``);
* **quoted strings**, in the quotes of any language (``"..."``, ``«...»``, ``„...“``,
  ``「...」``, backticks);
* **code and addresses**: ``snake_case``, ``camelCase`` and ``dotted.names``, paths,
  ``module::test`` ids, e-mail addresses and URLs;
* **names**: in scripts with capitals (Latin, Cyrillic, Greek), a capitalised word that does
  not open its sentence (``Lisbon``, ``Казани``), and a word in capitals (``DHL``); a
  capitalised word beside a number is part of it (``8 May 2023``). Chinese and Japanese
  have no capitals, so a name is what a naming cue introduces (``叫小雨``: "is called",
  ``田中と申します``: "I am Tanaka").

Pure: no I/O.
"""

from __future__ import annotations

import functools
import re

from memstore.core.words import word_units
from memstore.extraction.language import word_set

#: A token of any script: letters, digits, marks, joined by ``-``, ``.``, ``/``, ``:``,
#: ``@`` or ``'`` inside it (``SUP-4411``, ``a.b``, ``14:05``, ``don't``).
TOKEN = re.compile(r"[^\W_][\w'’]*(?:[-./:@+#][\w'’]+)*[%]?|[$£€¥₽#][\d][\w.,:/-]*", re.UNICODE)
_DIGIT = re.compile(r"\d")
_QUOTED = re.compile(
    r"(?:(?<=[\s(\[:,])|^)\"([^\"\n]{1,80})\"|“([^”\n]{1,80})”|„([^“\n]{1,80})“|«([^»\n]{1,80})»"
    r"|「([^」\n]{1,80})」|『([^』\n]{1,80})』|`([^`\n]{1,80})`"
    r"|(?:(?<=\s)|^)'([^'\n]{2,80})'(?=[\s.,;:!?)]|$)"
)
_ADDRESS = re.compile(
    r"(?:https?://|www\.)\S+|[\w./-]+::[\w:.\[\]-]+|[\w.+-]+@[\w-]+\.[\w.]+|(?:[\w.-]*/)+[\w.-]+"
)
#: A handle or a tag (``@mira``, ``#launch``): a name of its own, whatever its case.
_HANDLE = re.compile(r"(?<![\w@#])[@#][^\W_][\w.-]*[^\W_]|(?<![\w@#])[@#][^\W_]")
_CODE = re.compile(r"^[A-Za-z_]\w*_\w+$|^[a-z]+[A-Z]\w*$|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
#: "Is called" in Chinese and Japanese, then the name (up to three characters: a given name).
#: Japanese ``と申します`` ("I am called") follows the name: its kanji or katakana before it.
_NAMED = re.compile(
    r"(?:名叫|叫做|叫|名字是)([\u4e00-\u9fff\u3040-\u30ff]{1,3})"
    r"|([\u4e00-\u9fff\u30a0-\u30ff]{1,4})(?:と申します|といいます)"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*|\n\s*|:\s+)$")


def has_digit(text: str) -> bool:
    """Whether ``text`` holds a digit (of any script)."""
    return _DIGIT.search(text) is not None


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` (:data:`TOKEN`), trailing punctuation off."""
    return [token.rstrip(".,:;") for token in TOKEN.findall(text)]


@functools.lru_cache(maxsize=16384)
def specifics(text: str) -> tuple[str, ...]:
    """The specifics of ``text`` (module docstring), verbatim, each once, in order; names and
    numbers side by side are one (``Ivy League``, ``CS 235``, ``8 May 2023``)."""
    return tuple(dict.fromkeys(text[start:end] for start, end in _spans(text)))


def _spans(text: str) -> list[tuple[int, int]]:
    """Where the specifics of ``text`` are: quoted strings, addresses and names first, then
    the tokens, those a single space apart joined, and none inside another."""
    whole: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(text):
        group = next(n for n in range(1, len(match.groups()) + 1) if match[n])
        whole.append((match.start(group), match.end(group)))
    for match in _ADDRESS.finditer(text):
        whole.append((match.start(), match.start() + len(match[0].rstrip(".,;:)"))))
    for match in _NAMED.finditer(text):
        group = 1 if match[1] else 2
        whole.append((match.start(group), match.end(group)))
    for match in _HANDLE.finditer(text):
        whole.append((match.start(), match.end()))
    not_names = word_set("first_person") | word_set("function") | word_set("chatter")
    tokens: list[tuple[int, int]] = []
    for match in TOKEN.finditer(text):
        token = match[0].rstrip(".,:;'’")
        if token and (
            has_digit(token)
            or _CODE.match(token)
            or _is_name(token, text, match.start(), not_names)
            or _in_a_date(token, text, match.start(), tokens)
        ):
            start = match.start()
            if tokens and text[tokens[-1][1] : start] == " ":
                tokens[-1] = (tokens[-1][0], start + len(token))  # one name, one amount
            else:
                tokens.append((start, start + len(token)))
    inside = [t for t in tokens if not any(a <= t[0] and t[1] <= b for a, b in whole)]
    return sorted({*whole, *inside})


#: Words of context a bare number keeps in a statement's short form: ``got a 60`` says what
#: ``60`` was, where the number alone says nothing.
NUMBER_CONTEXT_WORDS = 2
_BARE_NUMBER = re.compile(r"^[\d.,:/%-]+$")


def specific_phrases(text: str) -> tuple[str, ...]:
    """The specifics of ``text`` as a short form can keep them: each verbatim, a bare number
    with the words before it in its sentence (``got a 60``, ``between 2000 and 3000``),
    overlapping phrases joined."""
    phrases: list[tuple[int, int]] = []
    for start, end in _spans(text):
        if _BARE_NUMBER.match(text[start:end]):
            before = text[:start]
            cut = max(before.rfind(mark) for mark in ".!?;:\n")  # this sentence only
            words = list(re.finditer(r"\S+", before[cut + 1 :]))[-NUMBER_CONTEXT_WORDS:]
            if words:
                start = cut + 1 + words[0].start()
        if phrases and start <= phrases[-1][1] + 1:
            phrases[-1] = (phrases[-1][0], max(end, phrases[-1][1]))
        else:
            phrases.append((start, end))
    return tuple(dict.fromkeys(" ".join(text[a:b].split()) for a, b in phrases))


def _is_name(token: str, text: str, start: int, not_names: frozenset[str]) -> bool:
    """A capitalised word inside its sentence, or a word in capitals: a name, an acronym."""
    first = token[0]
    if not first.isupper():
        return False
    if token.isupper() and len(token) >= 2 and token.isalpha():
        return token.casefold() not in not_names
    if token.casefold() in not_names:
        return False
    return _SENTENCE_START.search(text[:start]) is None


def _in_a_date(token: str, text: str, start: int, before: list[tuple[int, int]]) -> bool:
    """A capitalised word beside a number inside its sentence is part of it, whatever else
    it may be (``8 May 2023``, ``May 8``: a month, not the verb)."""
    if not token[0].isupper() or _SENTENCE_START.search(text[:start]) is not None:
        return False
    after_number = (
        bool(before)
        and before[-1][1] == start - 1
        and has_digit(text[before[-1][0] : before[-1][1]])
    )
    return after_number or re.match(r" \d", text[start + len(token) :]) is not None


def specific_units(text: str) -> frozenset[str]:
    """The specifics of ``text`` as folded words: what counts double in what a line adds."""
    return frozenset(unit for specific in specifics(text) for unit in word_units(specific))


def is_exact(specific: str) -> bool:
    """Whether a specific is an exact value (a number, an id, a path, a quoted string: what
    no paraphrase gives back), not a name."""
    return has_digit(specific) or not specific[:1].isupper() or " " in specific


@functools.lru_cache(maxsize=16384)
def exact_units(text: str) -> frozenset[str]:
    """The folded words of the exact values among the specifics of ``text``."""
    return frozenset(
        unit for specific in specifics(text) if is_exact(specific) for unit in word_units(specific)
    )
