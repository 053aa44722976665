"""Items record the handle that added them, the turn they belong to, and how long a call waits.

* ``handle``: the session handle (one ``SessionMemory``, one Agents SDK session object) that
  appended the item. ``pop_item`` takes back only its own handle's items, and a call waits for
  its output only as long as its own handle has not moved on.
* ``turn``: the seq of the user message that began the turn the item belongs to (a turn is a
  handle's user message and that handle's later items until its next one; an output joins its
  call's turn). The model input shows turns whole, in the order they began.
* ``pending_until``: for a call (or reasoning) that may still wait for its output, the time
  (seconds since 1970) after which it no longer does: a crashed worker's call stops holding
  the budget. A closed handle sets it to 0.

Plain ADD COLUMN and CREATE INDEX on both backends. Existing rows get ``NULL`` in all three,
which reads as before: no handle, each item its own turn in commit order, no deadline.

Revision ID: 0010
Revises: 0009_forks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009_forks"
branch_labels = None
depends_on = None

_INDEX = "ix_items_handle"
_HANDLED = "handle IS NOT NULL"


def upgrade() -> None:
    op.add_column("items", sa.Column("handle", sa.String(64), nullable=True))
    op.add_column("items", sa.Column("turn", sa.Integer, nullable=True))
    op.add_column("items", sa.Column("pending_until", sa.Float, nullable=True))
    op.create_index(
        _INDEX,
        "items",
        ["session_id", "handle", "seq"],
        sqlite_where=sa.text(_HANDLED),
        postgresql_where=sa.text(_HANDLED),
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="items")
    op.drop_column("items", "pending_until")
    op.drop_column("items", "turn")
    op.drop_column("items", "handle")
