"""An embedding is not a memory (issue 65).

The vectors of episodes and facts move from memory_vectors (rows with a decay state, a
policy, hints and triggers, forced permanent and never due, pruned by a trigger that
followed their source, in a heap at fillfactor 50) to memory_embeddings: a row written
once and never updated, keyed (agent_id, source_id, field), packed full. It is live
exactly while its source is (a search reads the source's state), and its source's hard
delete takes it (ethos_rows_removed). `field` holds a LangGraph item's index field ('$':
the memory's whole text). ethos_embed() writes them, raising the source's automatic
importance by its particularity as the vector's insert trigger did.

memory_vectors keeps the memories whose content is a vector: its source_type and
source_id columns, their checks and index go, and so do the `<table>_pruned` triggers
and ethos_source_pruned(). ethos_write_row, ethos_rows_added, ethos_rows_removed,
ethos_new_policy (no `measured` argument: every memory is measured) and the two
statistics rebuilds are redefined.

Revision ID: 0060
Revises: 0059
Create Date: 2026-12-07
"""

from ethos.db.migrations import execute_frozen

revision = "0060"
down_revision = "0059"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0060_embeddings.sql")
