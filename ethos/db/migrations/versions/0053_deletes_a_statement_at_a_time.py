"""A hard delete's revisions and statistics go once a statement (issue 40).

The write path's row trigger no longer fires on DELETE: `<table>_removed`, AFTER DELETE
once a statement, calls ethos_rows_removed() over the rows deleted (their revisions, their
share of the text and vector statistics). Row by row, each statement planned again by
Citus on a shard, a DELETE of 500 rows took 2.3 s on a cluster; on one server 20,000 rows
deleted 500 at a time took 18.9 s.

ethos_text_stats_add looks the lexemes of the words removed up by key: its generic plan
joined every word of the rows removed to each lexeme at 0 (0.15 s for 500 rows). With
both, the 20,000 rows take 2.4 s.

Revision ID: 0053
Revises: 0052
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0053"
down_revision = "0052"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0053_deletes_a_statement_at_a_time.sql")
