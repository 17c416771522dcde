"""The write path's statement triggers run fewer statements, with the same rows written:
for a one-row insert (a LangGraph put: a fact and its vector) a statement's start is
most of what each costs. ethos_rows_added writes its hints in one statement (the places
read and the hints inserted), and calls ethos_text_stats_add for vectors only when some
vector counts its own words (one of an episode or fact does not); ethos_text_stats_add
and ethos_vector_stats_add are PL/pgSQL, to run their deletes only for a removal.

Revision ID: 0046
Revises: 0045
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0046"
down_revision = "0045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0046_fewer_trigger_statements.sql")
