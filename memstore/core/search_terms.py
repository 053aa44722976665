"""Search as plain values: a query's words, what a search covers, and what a hit carries.

**Queries are text, not syntax.** A query is split into words (:mod:`memstore.core.words`:
runs of letters and digits of any script; everything else separates them; a run of Chinese or
Japanese becomes the phrase of its characters, as the index holds them), common English words
are set aside when others remain, and what is left is searched as *any* of the words, best
matches first. Each word
reaches the database as a quoted literal (an FTS5 string, a ``tsquery`` lexeme), so quotes,
``*``, ``NEAR``, ``-``, ``:``, ``|``, ``!`` or parentheses in a user's text are separators
like any punctuation: a query can neither fail to parse nor mean something other than its
words. Ranking is the database's own (FTS5's ``bm25``, PostgreSQL's ``ts_rank``); scores
order the hits of one search and are not comparable across backends.

This module is pure: the database side is :mod:`memstore.db.search`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from memstore.core.ltm_entries import validate_scope
from memstore.core.validation import validate_session_id
from memstore.core.words import has_unspaced, search_units, words
from memstore.errors import ValidationError

if TYPE_CHECKING:
    from memstore.core.ltm_entries import LongTermEntry
    from memstore.core.values import MemoryItem

#: Words searched at most: a pasted page must not become a thousand-term query.
MAX_TERMS = 32
#: A query longer than this is refused (naming the field): it is no longer a search.
MAX_QUERY_CHARS = 10_000
#: Hits one search may return.
MAX_LIMIT = 1_000
#: Marks around matched words in a hit's snippet.
SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS = "[", "]", "…"
#: Words of context a snippet shows.
SNIPPET_WORDS = 16

#: Words too common to say what a question is about. Searched only when a query has nothing
#: else ("who are you"), so they never crowd the rare words out of an any-word search.
_STOPWORDS_TEXT = """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each else ever few for
    from further get got had has have having he her here hers herself him himself his how i
    if in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own really same she should so some such
    than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would yes you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

Source = Literal["item", "summary", "ltm"]


def search_terms(query: object, field: str = "query") -> tuple[str, ...]:
    """The words of ``query`` that a search looks for (empty: nothing to search).

    Raises:
        ValidationError: ``query`` is not text, is blank, or is over 10,000 characters
            (``field`` names the argument that carried it).
    """
    if not isinstance(query, str):
        raise ValidationError(field, f"must be text, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(field, f"must be at most {MAX_QUERY_CHARS} characters")
    if not query.strip():
        raise ValidationError(field, "must not be blank")
    unique = list(dict.fromkeys(words(query)))
    telling = [word for word in unique if word not in STOPWORDS]
    return tuple(" ".join(search_units(word)) for word in (telling or unique)[:MAX_TERMS])


#: Characters of context either side of a Chinese or Japanese match in its snippet (about
#: as much text as :data:`SNIPPET_WORDS` words of a spaced script).
SNIPPET_UNSPACED_CHARS = 24


def readable_snippet(snippet: str, text: str, terms: Sequence[str]) -> str:
    """The snippet a hit shows. The index holds the characters of a text's Chinese and
    Japanese runs apart, after the text (:func:`memstore.core.words.search_text`), so the
    database marks a match of them there, or nowhere: for a query with such a run, the
    snippet is cut from the text itself around the run's first occurrence instead."""
    runs = [term.replace(" ", "") for term in terms if has_unspaced(term)]
    folded = text.casefold()
    found = [(folded.find(run), run) for run in runs if run in folded]
    if not found:
        return snippet
    start, run = min(found)
    end = start + len(run)
    before = max(0, start - SNIPPET_UNSPACED_CHARS)
    after = min(len(text), end + SNIPPET_UNSPACED_CHARS)
    head = SNIPPET_ELLIPSIS if before else ""
    tail = SNIPPET_ELLIPSIS if after < len(text) else ""
    shown = f"{text[before:start]}{SNIPPET_OPEN}{text[start:end]}{SNIPPET_CLOSE}{text[end:after]}"
    return head + " ".join(shown.split()) + tail


def validate_limit(limit: object) -> int:
    """``limit`` as an int from 1 to 1,000, or :class:`ValidationError` naming it."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError("limit", f"must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def validate_names(
    field: str, names: Iterable[str] | None, check: Callable[[str], str]
) -> tuple[str, ...] | None:
    """A tuple of checked ids (``None`` stays ``None``: no restriction); a lone string is
    refused, since iterating it would search its letters."""
    if names is None:
        return None
    if isinstance(names, str):
        raise ValidationError(field, "must be a list of names, not one string")
    return tuple(dict.fromkeys(check(name) for name in names))


@dataclass(frozen=True)
class SearchScope:
    """What one search covers.

    Attributes:
        sessions: Session ids whose items and summaries are searched (``None``: every
            session; empty: none, unless ``session_scopes`` adds some).
        scopes: Long-term scopes whose live entries are searched (``None``: every scope;
            empty: none).
        include_active: Also active items and current summaries (otherwise only what left
            working memory: forgotten items and superseded summaries).
        session_scopes: Also the sessions recorded in these scopes, listed by the search in
            its own read (:func:`memstore.db.search.with_scope_sessions`).
    """

    sessions: tuple[str, ...] | None
    scopes: tuple[str, ...] | None
    include_active: bool = True
    session_scopes: tuple[str, ...] = ()

    @classmethod
    def across(cls, sessions: Iterable[str] | None, scopes: Iterable[str] | None) -> SearchScope:
        """A store-wide search: everything, unless restricted. Each restriction adds what it
        selects: a session its history, a scope its long-term entries and the history of
        the sessions recorded in it. Sessions given alone search no long-term entry.

        Raises:
            ValidationError: a bad session id or scope (``sessions``, ``scopes``).
        """
        chosen_sessions = validate_names(
            "sessions", sessions, partial(validate_session_id, field="sessions")
        )
        chosen_scopes = validate_names("scopes", scopes, partial(validate_scope, field="scopes"))
        if chosen_scopes is None:
            return cls(chosen_sessions, None if chosen_sessions is None else ())
        return cls(chosen_sessions or (), chosen_scopes, session_scopes=chosen_scopes)


@dataclass(frozen=True)
class SearchHit:
    """One match: what it is, where it was, what became of it, and how well it matched.

    Attributes:
        source: ``"item"``, ``"summary"`` or ``"ltm"`` (a long-term entry).
        text: The whole matched text (an entry's is ``key: value-as-JSON``).
        score: Higher is better; orders the hits of one search.
        snippet: A short extract, matched words in ``[`` ``]``.
        session_id: The session of an item or summary (``None`` for an entry).
        seq: An item's position in its session.
        fate: An item's fate (``None`` while active); ``"superseded"`` for a summary a later
            compaction replaced (``None`` for the current one).
        compaction: The compaction that removed the item, or that produced the summary.
        version: The session version it was committed at (items, summaries): the session's
            clock, which orders recalled passages.
        item: The item itself, with its fate.
        entry: The long-term entry.
    """

    source: Source
    text: str
    score: float
    snippet: str
    session_id: str | None = None
    seq: int | None = None
    fate: str | None = None
    compaction: int | None = None
    version: int | None = None
    item: MemoryItem | None = None
    entry: LongTermEntry | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the item or entry included as its own dict)."""
        return {
            "source": self.source,
            "session_id": self.session_id,
            "seq": self.seq,
            "fate": self.fate,
            "compaction": self.compaction,
            "score": self.score,
            "snippet": self.snippet,
            "text": self.text,
            "item": None if self.item is None else self.item.to_dict(),
            "entry": None if self.entry is None else self.entry.to_dict(),
        }
