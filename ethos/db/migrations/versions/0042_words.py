"""One meaning per word: "consolidation" is the daemon's loop only; the audit of merges,
forgets, purges and erasures is the lifecycle's (`lifecycle_runs`, its view
`ethos_lifecycle_runs`), as the services and the store already name that concern.
Renames only: rows, grants and the finished-runs trigger go with the table.

Revision ID: 0042
Revises: 0041
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0042_words.sql")
