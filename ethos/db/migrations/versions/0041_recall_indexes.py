"""Recall's indexes: an agent's live episodes in time (the turns around a hit, which
recall in context reads: without it each probe read the agent's live rows and sorted
them, 115 of one LoCoMo query's 133 ms), and the text index of vectors kept to those
with no source (text recall never reads the others: their source is found in its own
table; an EthosStore item wrote its text into two such indexes).

Revision ID: 0041
Revises: 0040
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0041_recall_indexes.sql")
