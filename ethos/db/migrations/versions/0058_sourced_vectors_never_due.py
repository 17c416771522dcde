"""A vector of an episode or fact is born never due, and with no words (issue 39).

Such a vector follows its source: the never-decaying policy, pruned and recovered with
it, never found by text recall (its source is, in its own table). Yet each was born due
at once ('-infinity'), with two hints, so that a sweep would look at it, find it frozen
and write it once only to schedule it never; and each carried the words of its text, a
tsvector that nothing reads. ethos_write_row now gives it due_at and prune_at NULL
(never) and an empty tsvector; ethos_rows_added hints only the rows that may be due.
Vectors written before keep their words (a rewrite of every one would touch each of
their indexes, the HNSW graph included); the sweep has already scheduled them never.

Revision ID: 0058
Revises: 0057
Create Date: 2026-11-28
"""

from ethos.db.migrations import execute_frozen

revision = "0058"
down_revision = "0057"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0058_sourced_vectors_never_due.sql")
