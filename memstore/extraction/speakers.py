"""Who said a line: the item's role, or in a transcript the name its text opens with.

A ``Name:`` prefix is a speaker only when that name opens many of a fold's messages (a
transcript of a meeting, a chat log pasted whole). A name said once or twice at a line's
start is a label (``Error:``, ``Note:``, ``LGTM:``), part of the text.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from memstore.core.values import MemoryItem, MemoryKind

#: A ``Name:`` opening at least this many of a fold's messages is a transcript's speaker
#: (a name said once or twice at a line's start is a label: ``Error:``, ``Note:``).
MIN_TRANSCRIPT_TURNS = 3

#: Who said it, when no transcript names the speaker.
ROLE_SPEAKERS = {"user": "User", "assistant": "Assistant", "developer": "Developer", "tool": "Tool"}
#: A text that opens with a name and a colon (up to three capitalised words).
SPEAKER = re.compile(r"^([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}):\s+(?=\S)")


def transcript_speakers(items: Iterable[MemoryItem], known: Iterable[str] = ()) -> set[str]:
    """The names that open enough of the messages to be a transcript's speakers
    (:data:`MIN_TRANSCRIPT_TURNS`), and those a previous summary named that open any."""
    openers: Counter[str] = Counter()
    for item in items:
        if item.kind in (MemoryKind.USER_MESSAGE, MemoryKind.ASSISTANT_MESSAGE):
            match = SPEAKER.match(item.content)
            if match:
                openers[match[1]] += 1
    already = set(known)
    return {n for n, c in openers.items() if c >= MIN_TRANSCRIPT_TURNS or n in already}
