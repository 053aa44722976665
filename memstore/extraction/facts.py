"""Facts: what a run of items established, each as one short line that says whose it is.

Reading the items oldest first:

* **Actions.** Every call and its output become one line: the call's name and identifying
  arguments, then the values it returned (:mod:`memstore.extraction.actions`), whatever the
  tool is called. LOW-priority outputs are noise and left out. A newer output of the same
  call replaces the older line: the newest value of a slot wins.
* **A question and its answer become one fact.** A question is answered by what follows it
  from someone else: a tool result, or a reply (its statements, in the replier's words). A
  user's question that the conversation moved on from unanswered is an *open question*; the
  user's last question, with nothing after it yet, is the current objective.
* **Statements keep their own words**: the sentences of a turn that say something
  (:func:`memstore.extraction.statements.score`), with the speaker and the day they were
  said. The speaker is the item's role (``User``, ``Assistant``); a ``Name:`` the text opens
  with counts as the speaker only in a transcript, where that name opens many of the items
  (a line or two opening with ``Error:`` or ``Note:`` is text).
* **Stated preferences, identity facts, decisions and rules** are marked as such
  (:func:`memstore.extraction.statements.statement_cue`): a summary weighs them more and
  consolidation always writes them. DECISION items are decisions; a user's rule (``never
  ...``, ``нельзя ...``) is a constraint; reasoning items are the model's thinking, not facts.
* **Days** come from the items' timestamps, or from date lines (:mod:`memstore.extraction.dating`).
* A fact said again is kept once.

Pure: no I/O. The extractive summarizer builds its lines from these, and long-term memory
consolidation reads them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstore.core.values import MemoryItem
from memstore.extraction.dating import Calendar, parse_day
from memstore.extraction.fact_list import Fact
from memstore.extraction.reader import Extraction, Reader
from memstore.extraction.speakers import transcript_speakers


def extract(
    items: Sequence[MemoryItem],
    *,
    said_on: str | None = None,
    marked: bool = False,
    objective: str | None = None,
    speakers: Iterable[str] = (),
    every_statement: bool = False,
) -> Extraction:
    """Read ``items`` (oldest first) into facts, open questions and the objective.

    Args:
        items: The items, oldest first.
        said_on: The day in force before the first item (a previous fold's).
        marked: Date lines set the days so far (a previous fold's).
        objective: The objective so far; a question here may be answered by the items.
        speakers: Transcript speakers a previous fold named.
        every_statement: Keep every statement of the user's as a fact of its own (for
            long-term memory), not only those that say enough (for a summary).
    """
    calendar = Calendar(parse_day(said_on), marked=marked)
    reader = Reader(calendar, objective, transcript_speakers(items, speakers), every_statement)
    for item in items:
        reader.read(item)
    return reader.finish(objective)


def extract_facts(items: Sequence[MemoryItem]) -> list[Fact]:
    """The facts, decisions and constraints ``items`` established, oldest first, each once."""
    return list(extract(items).facts)
