"""A recovery says whether it finished (issue 64).

An interrupted `ethos recover` (Ctrl-C, SIGTERM, a lost connection) had committed its
batches and left no row in `recoveries`. A recovery now writes its row however it ends,
with what it committed, and `status` says how it ended: completed, interrupted (a rerun
of the same selector brings back the rest) or failed. Rows written before are completed.

Revision ID: 0059
Revises: 0058
Create Date: 2026-12-07
"""

from ethos.db.migrations import execute_frozen

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0059_interruptions_recorded.sql")
