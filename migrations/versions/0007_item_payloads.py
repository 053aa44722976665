"""Items may carry a Responses API item verbatim, and calls find their outputs by call_id.

``payload`` holds the item's JSON text exactly as it was given (``NULL``: a text item, as
every item was before); ``content`` keeps the text derived from it. ``call_id`` pairs a
carried call with its output: an output is refused unless its call is in the session, which
one lookup in the partial index answers (only calls and outputs have an entry).

Plain ADD COLUMN and CREATE INDEX on both backends: existing rows keep their values and get
``NULL`` in both columns, which is what they are.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_INDEX = "ix_items_call_id"
_LINKED = "call_id IS NOT NULL"


def upgrade() -> None:
    op.add_column("items", sa.Column("payload", sa.Text, nullable=True))
    op.add_column("items", sa.Column("call_id", sa.String(200), nullable=True))
    op.create_index(
        _INDEX,
        "items",
        ["session_id", "call_id"],
        sqlite_where=sa.text(_LINKED),
        postgresql_where=sa.text(_LINKED),
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="items")
    op.drop_column("items", "call_id")
    op.drop_column("items", "payload")
