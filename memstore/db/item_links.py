"""Where an appended item belongs: its turn, and the call its output answers.

Two lookups of an append (:mod:`memstore.db.append`), run inside its transaction, after the
session row's bump and before its insert: the batch's own earlier items are not stored yet,
so each lookup adds them to what the database holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection, bindparam, select

from memstore.core.carried_items import CALL_OUTPUTS
from memstore.core.values import MemoryItem, MemoryKind
from memstore.db.tables import items
from memstore.errors import ValidationError


class Appending(Protocol):
    """What these lookups read of an item being appended (:class:`memstore.db.append.NewItem`)."""

    @property
    def kind(self) -> MemoryKind: ...

    @property
    def handle(self) -> str | None: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def payload_json(self) -> str | None: ...

    @property
    def field(self) -> str: ...


#: The active items linked by one call_id (the call, and its output if it has one): one
#: probe of the partial call_id index. A call no longer in working memory does not count:
#: its output would reach the model orphaned.
LINKED = select(items.c.kind, items.c.payload, items.c.seq, items.c.turn).where(
    items.c.session_id == bindparam("sid"),
    items.c.call_id == bindparam("call_id"),
    items.c.fate.is_(None),
)


#: The turn of the handle's newest item: a later item of that handle joins it.
HANDLE_TURN = (
    select(items.c.turn)
    .where(items.c.session_id == bindparam("sid"), items.c.handle == bindparam("handle"))
    .order_by(items.c.seq.desc())
    .limit(1)
)


def turn_of(
    conn: Connection,
    session_id: str,
    new: Appending,
    seq: int,
    call_turn: int | None,
    earlier: Sequence[MemoryItem],
) -> int | None:
    """The turn ``new`` belongs to (:mod:`memstore.core.turns`): its own, for a user message;
    its call's, for an output; else its handle's current one (``None``: a turn of its own).

    ``earlier`` are the batch's items before it, all of its handle: the newest of them is
    the handle's newest item, so only a batch's first item asks the database."""
    if new.kind is MemoryKind.USER_MESSAGE:
        return seq
    if call_turn is not None:
        return call_turn
    if new.handle is None:
        return None
    if earlier:
        return earlier[-1].turn
    found: int | None = conn.execute(
        HANDLE_TURN, {"sid": session_id, "handle": new.handle}
    ).scalar()
    return found


def check_answers_a_call(
    conn: Connection, session_id: str, new: Appending, earlier: Sequence[MemoryItem]
) -> int | None:
    """An output must answer a call of its kind that has no output yet; the call's turn.

    The active items linked by its call_id are those stored before (one probe of the
    partial call_id index) and those earlier in its own batch. An output whose call is not
    in working memory (a compaction removed it while the tool ran, or the call was never
    stored here) is stored all the same: refusing it would lose the turn, and the model
    input leaves it out (:func:`memstore.core.units.valid_input`).
    """
    linked = [
        _Linked(row.kind, row.payload, row.seq, row.turn)
        for row in conn.execute(LINKED, {"sid": session_id, "call_id": new.call_id})
    ]
    linked += [
        _Linked(item.kind.value, item.payload, item.seq, item.turn)
        for item in earlier
        if item.call_id == new.call_id
    ]
    calls = [entry for entry in linked if entry.kind == "ASSISTANT_MESSAGE"]
    field = f"{new.field}.call_id"
    if not calls:
        return None
    wanted = CALL_OUTPUTS.get(str(calls[0].payload_value().get("type")))
    given = json.loads(new.payload_json or "{}").get("type")
    if wanted != given:
        raise ValidationError(f"{new.field}.type", f"{given!r} cannot answer a {wanted!r} call")
    if len(linked) > len(calls):
        raise ValidationError(field, f"the call {new.call_id!r} already has its output")
    return calls[0].seq if calls[0].turn is None else int(calls[0].turn)


@dataclass(frozen=True)
class _Linked:
    """An active item linked to an output's call_id: a stored row, or an earlier item of
    the output's own batch."""

    kind: str
    payload: Any  # a row's JSON text, or an earlier item's value
    seq: int
    turn: int | None

    def payload_value(self) -> Any:
        return json.loads(self.payload) if isinstance(self.payload, str) else self.payload
