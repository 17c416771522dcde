"""A statement's sources pruned or recovered take their vectors with them at once (issue 40).

`<table>_pruned` on episodes and facts was a row trigger: one UPDATE of memory_vectors a
row whose pruned changed, each planned again by Citus on a shard. It is now AFTER UPDATE
once a statement, over the statement's rows (transition tables `was` and `became`), and
ethos_source_pruned() updates the vectors of all the rows whose pruned changed in one
statement naming their agents. A transition table takes no column list, so it runs after
every UPDATE of the table and returns at once where no pruned changed.

Revision ID: 0056
Revises: 0055
Create Date: 2026-11-28
"""

from ethos.db.migrations import execute_frozen

revision = "0056"
down_revision = "0055"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0056_sources_pruned_at_once.sql")
