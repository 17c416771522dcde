"""The write path in one place per table: 17 triggers on memory_vectors and 12 on each
of the others, ordered by their names, become ethos_write_row() (each row, its steps in
a written order), ethos_rows_added() (each statement's rows at once) and, for episodes
and facts, ethos_source_pruned(). TRUNCATE runs no trigger any more; the moment checks
of new rows were the tables' CHECK constraints' already (0038). docs/decisions/
0001-one-write-path.md says why.

Revision ID: 0040
Revises: 0039
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0040_write_path.sql")
