"""Words of any language: the one splitter that extraction and search share.

* A **word** is a run of letters, digits and combining marks of any script, case folded and
  NFKC-normalized (full-width ``Ａ１`` is ``a1``); ``_`` and punctuation separate words, as
  they do for both databases' full-text parsers.
* **Unspaced scripts** (Chinese, Japanese kana and kanji) write no spaces between words, so
  a run of their characters is one "word" to every parser: ``我女儿叫小雨`` would be searched
  only as a whole. memstore splits such a run into *units*:

  - for **search**, its characters: the index holds each character of a run as a token
    (:func:`search_text`), and a query's run becomes a phrase of its characters
    (:func:`search_units`), so ``花生`` finds ``她对花生过敏`` and nothing where the two
    characters are apart;
  - for **extraction**, overlapping character pairs (bigrams, :func:`units`): the unit a
    Chinese or Japanese reader's vocabulary is mostly made of, so "what a line adds that no
    kept line holds" counts in about words, not in clauses or single characters.

Thai, Lao, Khmer and Myanmar are unspaced too but are not split: their characters combine
with marks and a pair of them is rarely a meaningful unit; they are searched by run.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable

#: Hiragana, katakana (with the prolonged sound mark), CJK unified ideographs and their
#: extension A, compatibility ideographs, and the iteration mark 々.
_UNSPACED_CHARS = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
UNSPACED_RUN = re.compile(f"[{_UNSPACED_CHARS}]+")
#: Letters and digits of any script (``_`` separates, as both databases' parsers do).
WORD = re.compile(r"[^\W_]+")
#: Between the text and the unspaced runs appended for the index (:func:`search_text`): a
#: line break, so no phrase runs from the text into them.
_INDEX_SEPARATOR = "\n"


def normalize(text: str) -> str:
    """``text`` NFKC-normalized and case folded: the form words are compared in."""
    return unicodedata.normalize("NFKC", text).casefold()


def has_unspaced(text: str) -> bool:
    """Whether ``text`` holds a character of an unspaced script (module docstring)."""
    return UNSPACED_RUN.search(text) is not None


def words(text: str) -> list[str]:
    """The words of ``text`` in order (module docstring), normalized; an unspaced run is
    one word here (see :func:`units` for what extraction counts)."""
    return WORD.findall(normalize(text))


@functools.lru_cache(maxsize=16384)
def units(word: str) -> tuple[str, ...]:
    """What a normalized word counts as for extraction: itself, or, for a run of an
    unspaced script, its overlapping character pairs (a single character stays one unit).
    A word mixing scripts (``iphone手机``) keeps its spaced part whole."""
    return _split_runs(word, _pairs)


def _pairs(run: str) -> list[str]:
    """An unspaced run's overlapping character pairs (a single character stays itself)."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _split_runs(word: str, split: Callable[[str], Iterable[str]]) -> tuple[str, ...]:
    """``word`` with each unspaced run replaced by ``split(run)``, its spaced parts whole."""
    if not has_unspaced(word):
        return (word,)
    out: list[str] = []
    last = 0
    for match in UNSPACED_RUN.finditer(word):
        if match.start() > last:
            out.append(word[last : match.start()])
        out += split(match[0])
        last = match.end()
    if last < len(word):
        out.append(word[last:])
    return tuple(out)


def word_units(text: str) -> list[str]:
    """Every unit of every word of ``text``, in order (:func:`units`)."""
    return [unit for word in words(text) for unit in units(word)]


def search_units(word: str) -> tuple[str, ...]:
    """How the index must hold a normalized query word: as itself, or, for a word with an
    unspaced run, as the phrase of its characters and spaced parts, in order."""
    return _split_runs(word, list)


def search_text(text: str) -> str:
    """The text the full-text index holds for ``text``: the text itself, then, when it has
    unspaced runs, a line with each run's characters apart (``花 生 过 敏``), so each
    character is a token and a query's run matches as a phrase. Text without such runs is
    indexed exactly as it is (the same tokens, positions and snippets as before).

    Two runs are appended side by side, so a phrase may match across the end of one and the
    start of the next: a rare false match, the price of one index for every script."""
    runs = UNSPACED_RUN.findall(text)
    if not runs:
        return text
    return text + _INDEX_SEPARATOR + " ".join(" ".join(run) for run in runs)
