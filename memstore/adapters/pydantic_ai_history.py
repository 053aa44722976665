"""A pydantic-ai history processor that bounds what the model is sent with memstore's
compaction, while the stored conversation keeps every message.

::

    from pydantic_ai.capabilities import ProcessHistory
    from memstore import MemoryLimits
    from memstore.pydantic_ai import MemstoreHistory

    agent = Agent(model, capabilities=[ProcessHistory(MemstoreHistory(
        limits=MemoryLimits.for_model(context_window=128_000, max_output_tokens=16_384)))])

Before each model request the history is cut into the units a model needs whole
(:mod:`memstore.core.conversation_units`: a prompt; tool calls with their results; an
answer), counted with the estimator, and held to a memstore session's rule
(:mod:`memstore.core.policy`): below the **hard** limit it is sent as it is; at the hard limit
it is compacted toward the **target**. The newest ``keep_recent`` units stay; the older ones
go to the summarizer with the summary so far; if still over, units are evicted oldest first,
then the summary is trimmed. The request being answered always stays, even when it alone is
larger than the target (the one case where more than the hard limit is sent).

**The summary is a message of the conversation.** It opens the compacted history as a
``CompactionPart`` in a request (marked as memstore's in its ``metadata``, with what the
compaction did), after the system prompt the history opened with. pydantic-ai keeps such a
message in the run's conversation, right after the messages it replaced (2.78 does; 2.68's
run keeps only the trimmed history, so there the next run summarizes afresh), so a conversation
store saves it with the run: the stored conversation keeps every message and gains the
summaries, and never loses one. The next request, in this run or another process's, starts
from the newest memstore summary in the history: it sends that summary and what follows it,
and compacts again only when that reaches the hard limit, folding the new units into the
summary, as a session does. Nothing is summarized twice, nothing is kept outside the
conversation, and a branch from before a summary simply has none.

Every provider sends a ``CompactionPart`` in a request as user-voice text marked as a
summary another model wrote, so stored text never becomes an instruction. The system prompt
is not counted (it is instructions, which :meth:`MemoryLimits.for_model
<memstore.MemoryLimits.for_model>` takes out of the budget).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memstore import SessionOptions
from memstore.adapters import PYDANTIC_AI_MISSING
from memstore.adapters.pydantic_ai import dump_message
from memstore.config import Settings
from memstore.core.conversation_units import message_units, unit_items
from memstore.core.policy import CompactionPlan, Snapshot, finish_plan, start_plan
from memstore.core.redaction import redact
from memstore.core.summary_room import summary_room
from memstore.core.tokens import TokenEstimator
from memstore.core.values import MemoryLimits
from memstore.extraction.protocols import Summarizer, as_summarizer

try:
    from pydantic_ai.messages import (
        CompactionPart,
        ModelMessage,
        ModelRequest,
        SystemPromptPart,
    )
except ImportError as error:  # the extra is not installed
    raise ImportError(PYDANTIC_AI_MISSING) from error

log = logging.getLogger("memstore")

#: The key of a summary's ``CompactionPart.metadata`` that marks it as memstore's (its value:
#: what the compaction did).
MARK = "memstore"


@dataclasses.dataclass(frozen=True)
class _Window:
    """What the model is sent, before compacting: the system prompt the history opens with,
    the newest memstore summary (and the message holding it), and the messages after it."""

    standing: list[SystemPromptPart]
    summary: str | None
    holder: ModelMessage | None
    body: list[ModelMessage]


class MemstoreHistory:
    """A history processor (module docstring): ``ProcessHistory(MemstoreHistory(...))``.

    Args:
        limits: Hard limit, target and units kept; :meth:`MemoryLimits.from_env` by default.
        estimator: Token counter; :class:`~memstore.TiktokenEstimator` (o200k_base) by default.
        summarizer: Phase 2's summarizer; :class:`~memstore.ExtractiveSummarizer` (offline)
            by default.
        settings: Where the summarizer's timeout comes from; :meth:`Settings.from_env`.
    """

    def __init__(
        self,
        *,
        limits: MemoryLimits | None = None,
        estimator: TokenEstimator | None = None,
        summarizer: Summarizer | None = None,
        settings: Settings | None = None,
    ) -> None:
        # The defaults are a session handle's, said once (SessionOptions).
        chosen = SessionOptions(limits=limits, estimator=estimator, summarizer=summarizer)
        chosen = chosen.resolved()
        assert chosen.limits is not None and chosen.estimator is not None
        assert chosen.summarizer is not None
        self.limits, self.estimator = chosen.limits, chosen.estimator
        self.summarizer = as_summarizer(chosen.summarizer)
        self._timeout = (settings or Settings.from_env()).summarizer_timeout_s

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send: from the newest memstore summary on, compacted at the hard
        limit; ``messages`` itself when there is neither."""
        window = _window(messages)
        if not window.body:
            return messages
        parsed = [json.loads(dump_message(message)) for message in window.body]
        units = message_units(parsed)
        items = unit_items(units, self.estimator.count, datetime.now(UTC))
        summary = window.summary
        snapshot = Snapshot(
            session_id="pydantic-ai",
            version=0,
            compaction_count=0,
            items=tuple(items),
            summary=summary,
            summary_tokens=0 if summary is None else self.estimator.count(summary),
            estimator=self.estimator.name,
        )
        if snapshot.total_tokens < self.limits.hard:
            if window.holder is None:
                return messages
            return [window.holder, *window.body]  # the stored summary itself: nothing new
        plan = await self._plan(snapshot)
        removed = set(plan.removed)
        # The policy removes oldest first, so what it removed is a prefix of the units; the
        # request being answered (the last unit) always stays.
        gone = 0
        while gone < len(items) - 1 and items[gone].id in removed:
            gone += 1
        if gone == 0:  # only the request being answered is left: it goes as it is
            return messages if window.holder is None else [window.holder, *window.body]
        parts: list[SystemPromptPart | CompactionPart] = list(window.standing)
        if plan.summary is not None:
            parts.append(CompactionPart(plan.summary, metadata={MARK: _report(plan)}))
        opening = [ModelRequest(parts=parts)] if parts else []
        return [*opening, *window.body[units[gone].start :]]

    async def _plan(self, snapshot: Snapshot) -> CompactionPlan:
        """Phases 1-3 around one summarizer call, as a session's compaction runs them."""
        draft = start_plan(snapshot, self.limits)
        new_summary, error = None, None
        if draft.candidates:
            room = summary_room(draft.budget, draft.remaining, draft.candidates)
            try:
                call = self.summarizer(
                    snapshot.fold_from,
                    snapshot.fold_items(draft.candidates),
                    max_tokens=room,
                    count_tokens=self.estimator.count,
                )
                new_summary = await asyncio.wait_for(call, timeout=self._timeout)
            except TimeoutError:
                error = f"timed out after {self._timeout:g}s"
            except Exception as exc:  # a summarizer's failure is recorded, never raised
                error = redact(f"{type(exc).__name__}: {exc}")
        plan = finish_plan(
            draft, self.estimator.count, new_summary=new_summary, summary_error=error
        )
        log.info(
            "pydantic-ai history compacted: %d -> %d tokens, %d units summarized, %d evicted%s",
            plan.before_tokens,
            plan.after_tokens,
            len(plan.summarized),
            len(plan.evicted),
            f" (summary error: {plan.summary_error})" if plan.summary_error else "",
        )
        return plan


def _report(plan: CompactionPlan) -> dict[str, Any]:
    """What a compaction did, kept with its summary (``CompactionPart.metadata``, which is
    never sent to the model)."""
    return {
        "before_tokens": plan.before_tokens,
        "after_tokens": plan.after_tokens,
        "units_summarized": len(plan.summarized),
        "units_evicted": len(plan.evicted),
        "summary_action": plan.summary_action,
        "summary_error": plan.summary_error,
    }


def memstore_summary(message: ModelMessage) -> str | None:
    """The memstore summary ``message`` holds, or ``None``."""
    if not isinstance(message, ModelRequest):
        return None
    for part in message.parts:
        if isinstance(part, CompactionPart) and MARK in (part.metadata or {}):
            return part.content or ""
    return None


def _window(messages: Sequence[ModelMessage]) -> _Window:
    """The system prompt, the newest memstore summary and what follows it (:class:`_Window`)."""
    for index in range(len(messages) - 1, -1, -1):
        summary = memstore_summary(messages[index])
        if summary is not None:
            holder = messages[index]
            return _Window(_leading_system(holder)[0], summary, holder, list(messages[index + 1 :]))
    if not messages:
        return _Window([], None, None, [])
    standing, rest = _leading_system(messages[0])
    return _Window(standing, None, None, [*rest, *messages[1:]])


def _leading_system(message: ModelMessage) -> tuple[list[SystemPromptPart], list[ModelMessage]]:
    """The system prompt parts ``message`` opens with, and the message without them (none
    when nothing else is left)."""
    if not isinstance(message, ModelRequest):
        return [], [message]
    standing: list[SystemPromptPart] = []
    for part in message.parts:
        if not isinstance(part, SystemPromptPart):
            break
        standing.append(part)
    if not standing:
        return [], [message]
    rest = list(message.parts[len(standing) :])
    return standing, [dataclasses.replace(message, parts=rest)] if rest else []
