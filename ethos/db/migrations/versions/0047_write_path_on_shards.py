"""The write path runs on a Citus shard as on one server (issue 40, decision 0019): a
hint names an agent of its rows (`agent_id` on the three due tables, by which Citus
keeps it in their shard); ethos_rows_added reads the rows added into arrays once and
names their agents in every statement after (a statement reading the transition table
beside a distributed table cannot be planned there); the previous memory of an agent is
found with the agent by equality; the particularity step computes the new policy before
its UPDATE; ethos_vector_stats_add reads the sign from the row proposed.

Revision ID: 0047
Revises: 0046
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0047"
down_revision = "0046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0047_write_path_on_shards.sql")
