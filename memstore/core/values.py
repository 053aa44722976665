"""Plain values: items, their enums and the limits.

Nothing here does I/O: these are the shapes the policy, the database layer, the summarizers
and the CLI pass between them. What is recorded about a session and its compactions is
:mod:`memstore.core.records`."""

from __future__ import annotations

import enum
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstore.config import (
    DEFAULT_HARD_LIMIT,
    DEFAULT_KEEP_RECENT,
    DEFAULT_TARGET_LIMIT,
    MAX_LIMIT,
    env_int,
    rename_setting,
    require_int,
)
from memstore.errors import ConfigurationError, KindRoleMismatchError, ValidationError

#: Each active item costs 4 tokens beyond its content: the message framing a model sees.
ITEM_OVERHEAD_TOKENS = 4
#: The summary costs 12 tokens beyond its text: its framing and the "historical context" notice.
SUMMARY_OVERHEAD_TOKENS = 12


class MemoryKind(enum.StrEnum):
    """What an item is; decides its model-input role and how compaction treats it."""

    USER_MESSAGE = "USER_MESSAGE"
    ASSISTANT_MESSAGE = "ASSISTANT_MESSAGE"
    TOOL_OBSERVATION = "TOOL_OBSERVATION"
    DECISION = "DECISION"


class MemoryRole(enum.StrEnum):
    """Who produced an item."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    DEVELOPER = "developer"


class Priority(enum.IntEnum):
    """How reluctantly an item may be removed; the application labels it."""

    LOW = 10
    NORMAL = 50
    HIGH = 100


class Fate(enum.StrEnum):
    """Why an item left working memory (its row stays)."""

    DROPPED = "dropped"
    SUMMARIZED = "summarized"
    EVICTED = "evicted"
    #: Taken back by the application (``pop_item``: a failed turn rewound).
    POPPED = "popped"
    #: Removed with the whole working memory (``clear_session``).
    CLEARED = "cleared"


#: Which roles each kind allows (the first is the default when no role is given).
ALLOWED_ROLES: Mapping[MemoryKind, tuple[MemoryRole, ...]] = {
    MemoryKind.USER_MESSAGE: (MemoryRole.USER,),
    MemoryKind.ASSISTANT_MESSAGE: (MemoryRole.ASSISTANT,),
    MemoryKind.TOOL_OBSERVATION: (MemoryRole.TOOL,),
    MemoryKind.DECISION: (MemoryRole.DEVELOPER, MemoryRole.ASSISTANT),
}

#: The kind an item gets when only a role is given.
DEFAULT_KIND: Mapping[MemoryRole, MemoryKind] = {
    MemoryRole.USER: MemoryKind.USER_MESSAGE,
    MemoryRole.ASSISTANT: MemoryKind.ASSISTANT_MESSAGE,
    MemoryRole.TOOL: MemoryKind.TOOL_OBSERVATION,
    MemoryRole.DEVELOPER: MemoryKind.DECISION,
}


@functools.cache
def _members_by_value(enum_type: type[enum.Enum]) -> Mapping[object, enum.Enum]:
    return {member.value: member for member in enum_type}


def _coerce(enum_type: type[enum.Enum], field_name: str, value: object) -> Any:
    if isinstance(value, enum_type):
        return value
    if type(value) is str or type(value) is int:  # exactly: neither a bool nor a float
        # The common case (``add("user", ...)``, on every append) by a dict lookup: half
        # the cost of the enum's constructor, which the values below still go through.
        member = _members_by_value(enum_type).get(value)
        if member is not None:
            return member
    if isinstance(value, (bool, float)):  # True == 1 and 10.0 == 10, but neither is meant
        raise ValidationError(field_name, f"unknown {field_name} {value!r}")
    try:
        return enum_type(value)
    except ValueError:
        pass
    if isinstance(value, str) and value.upper() in enum_type.__members__:
        return enum_type.__members__[value.upper()]
    allowed = ", ".join(str(m.value) for m in enum_type)
    raise ValidationError(field_name, f"unknown {field_name} {value!r} (allowed: {allowed})")


def parse_kind(value: object) -> MemoryKind:
    """Accept a :class:`MemoryKind` or its name in any case (``"TOOL_OBSERVATION"``,
    ``"tool_observation"``)."""
    return _coerce(MemoryKind, "kind", value)  # type: ignore[no-any-return]


def parse_role(value: object) -> MemoryRole:
    """Accept a :class:`MemoryRole`, its value (``"user"``) or its name, in any case."""
    return _coerce(MemoryRole, "role", value)  # type: ignore[no-any-return]


def parse_priority(value: object) -> Priority:
    """Accept a :class:`Priority`, its value (``10``) or its name in any case (``"low"``)."""
    return _coerce(Priority, "priority", value)  # type: ignore[no-any-return]


def check_kind_role(kind: MemoryKind, role: MemoryRole) -> None:
    """Raise :class:`KindRoleMismatchError` if ``role`` is not allowed for ``kind``."""
    allowed = ALLOWED_ROLES[kind]
    if role not in allowed:
        raise KindRoleMismatchError(kind.value, role.value, tuple(r.value for r in allowed))


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One entry of a session's working memory.

    Attributes:
        id: uuid4 string.
        session_id: The session it belongs to.
        seq: Position in the session, strictly increasing from 1.
        role: Who produced it.
        kind: What it is.
        priority: How reluctantly it may be removed.
        content: The text, stripped of surrounding white space.
        timestamp: When it entered memory (timezone-aware UTC).
        estimated_tokens: Counted once, when it entered memory.
        version: The session version (event clock) at which it was committed.
        fate: ``None`` while active; otherwise why it left working memory.
        removed_by: The compaction number that removed it, if any.
        payload: The Responses API item it carries verbatim (``None``: a text item, whose
            model-input message memstore builds from ``content``). ``content`` then holds
            the text derived from it (:mod:`memstore.core.carried_items`).
        call_id: The id pairing a carried call with its output, if it is one of those.
        handle / turn: The handle that added it, the seq of the user message that began its
            turn (:mod:`memstore.core.turns`; ``None``: not recorded).
        pending_until: Until when (seconds since 1970) a call may wait for its output.
    """

    id: str
    session_id: str
    seq: int
    role: MemoryRole
    kind: MemoryKind
    priority: Priority
    content: str
    timestamp: datetime
    estimated_tokens: int
    version: int = 0
    fate: Fate | None = None
    removed_by: int | None = None
    payload: Mapping[str, Any] | None = None
    call_id: str | None = None
    handle: str | None = None
    turn: int | None = None
    pending_until: float | None = None

    @property
    def item_type(self) -> str | None:
        """The carried item's ``type`` (``message`` when it omits one); ``None``: text item."""
        if self.payload is None:
            return None
        kind = self.payload.get("type")
        return "message" if kind is None else str(kind)

    @property
    def cost(self) -> int:
        """Tokens this item adds to the session total (content + per-item overhead)."""
        return self.estimated_tokens + ITEM_OVERHEAD_TOKENS

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as their values, the timestamp as ISO 8601)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "seq": self.seq,
            "role": self.role.value,
            "kind": self.kind.value,
            "priority": self.priority.name,
            "content": self.content,
            "timestamp": self.timestamp.isoformat(),
            "estimated_tokens": self.estimated_tokens,
            "version": self.version,
            "fate": None if self.fate is None else self.fate.value,
            "removed_by": self.removed_by,
            "payload": None if self.payload is None else dict(self.payload),
        }


@dataclass(frozen=True, slots=True)
class MemoryLimits:
    """Token limits of a session, validated at construction.

    Attributes:
        hard: Estimated tokens at which compaction starts.
        target: Where compaction must finish (strictly below ``hard``).
        keep_recent: Newest items protected in phases 1 and 2.
        summarize_every: If set, also compact (phases 2-3) after every N user turns.
    """

    hard: int = DEFAULT_HARD_LIMIT
    target: int = DEFAULT_TARGET_LIMIT
    keep_recent: int = DEFAULT_KEEP_RECENT
    summarize_every: int | None = None

    def __post_init__(self) -> None:
        require_int("hard", self.hard, minimum=1, maximum=MAX_LIMIT)
        require_int("target", self.target, minimum=1, maximum=MAX_LIMIT)
        require_int("keep_recent", self.keep_recent, minimum=0, maximum=MAX_LIMIT)
        if self.target >= self.hard:
            raise ConfigurationError(
                "target", f"must be below hard ({self.hard}), got {self.target}"
            )
        if self.summarize_every is not None:
            require_int("summarize_every", self.summarize_every, minimum=1, maximum=MAX_LIMIT)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MemoryLimits:
        """Limits from ``MEMORY_HARD_LIMIT``, ``MEMORY_TARGET_LIMIT``, ``MEMORY_KEEP_RECENT``."""
        env = os.environ if env is None else env
        hard = env_int(env, "MEMORY_HARD_LIMIT", DEFAULT_HARD_LIMIT)
        target = env_int(env, "MEMORY_TARGET_LIMIT", DEFAULT_TARGET_LIMIT)
        keep = env_int(env, "MEMORY_KEEP_RECENT", DEFAULT_KEEP_RECENT)
        try:
            return cls(hard=hard, target=target, keep_recent=keep)
        except ConfigurationError as exc:
            raise rename_setting(exc, LIMIT_VARIABLES) from None

    @classmethod
    def for_model(
        cls,
        *,
        context_window: int,
        max_output_tokens: int,
        instructions: str | None = None,
        tools: Any = None,
        estimator: Any = None,
        keep_recent: int = DEFAULT_KEEP_RECENT,
    ) -> MemoryLimits:
        """Limits that fit a model's context window (:mod:`memstore.core.budget`): ``hard``
        is what the window leaves after ``max_output_tokens`` (the answer's reserve: send it
        with each request), the ``instructions`` and the ``tools`` schemas (JSON, or objects
        with a ``definition()``), counted by ``estimator`` (:class:`TiktokenEstimator` by
        default; use the session's), less a 10% safety margin; ``target`` is 60% of it.

        Raises:
            ConfigurationError: a bad value, or no room left for memory; ``field`` names
                what ran out of room (``max_output_tokens``, ``instructions``, ``tools``).
        """
        from memstore.core.budget import derive_budget

        if estimator is None:
            from memstore.core.tokens import TiktokenEstimator

            estimator = TiktokenEstimator()
        budget = derive_budget(
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            instructions=instructions,
            tools=tools,
            count=estimator.count,
        )
        return cls(hard=budget.hard, target=budget.target, keep_recent=keep_recent)


#: Which environment variable feeds each field of :class:`MemoryLimits`.
LIMIT_VARIABLES = {
    "hard": "MEMORY_HARD_LIMIT",
    "target": "MEMORY_TARGET_LIMIT",
    "keep_recent": "MEMORY_KEEP_RECENT",
}
