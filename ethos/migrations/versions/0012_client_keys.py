"""Memories a client names: a client key (unique among one agent's live memories), the
moment a client last replaced it (updated_at), and facts that expire (expires_at, as
vectors do). The LangGraph store keeps each item as a fact under its key.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

TABLE = """
ALTER TABLE {table} ADD COLUMN client_key text, ADD COLUMN updated_at timestamptz;
CREATE UNIQUE INDEX {table}_client_key_idx ON {table} (agent_id, client_key)
    WHERE client_key IS NOT NULL AND NOT pruned;
"""


def upgrade() -> None:
    for table in MEMORY_TABLES:
        execute_script(TABLE.format(table=table))
    execute_script("ALTER TABLE semantic_facts ADD COLUMN expires_at timestamptz;")


def downgrade() -> None:
    execute_script("ALTER TABLE semantic_facts DROP COLUMN expires_at;")
    for table in MEMORY_TABLES:
        execute_script(f"ALTER TABLE {table} DROP COLUMN client_key, DROP COLUMN updated_at;")
