"""A hard delete (purge, erase) runs on a Citus shard as on one server (issue 40,
decision 0019): ethos_text_stats_add's DELETEs of emptied statistics name their agents as
a list as well as by the join; a statement joined to its agents only is not routed, and
Citus refused it inside the shard's trigger ("cannot execute a distributed query from a
query on a shard").

Revision ID: 0048
Revises: 0047
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0048"
down_revision = "0047"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0048_hard_deletes_on_shards.sql")
