"""Hints carry the transaction that wrote them, so a full sweep can drop what it superseded.

A full sweep of a whole table reschedules every live row it reads and gives each a hint
of its own. Before its first batch it notes the oldest transaction still running
(`pg_snapshot_xmin`); a hint written by a transaction older than that was committed
before any of its batches read the table, so the row it points at was read by the
sweep and hinted anew (or, where a concurrent write beat the sweep to it, hinted at
once by the sweep and by that write). At the end of the table the sweep drops those
hints: the next due sweep then visits only the rows that are due, instead of looking
again at every row the full sweep saw.

A concurrent write (an LTP flush, the durable queue, an insert) is a transaction the
sweep's horizon does not pass, so its hints are never dropped, whatever their moments.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")


def upgrade() -> None:
    for table in MEMORY_TABLES:
        execute_script(
            f"""ALTER TABLE {table}_due
                ADD COLUMN made xid8 NOT NULL DEFAULT pg_current_xact_id();"""
        )


def downgrade() -> None:
    for table in MEMORY_TABLES:
        execute_script(f"ALTER TABLE {table}_due DROP COLUMN made;")
