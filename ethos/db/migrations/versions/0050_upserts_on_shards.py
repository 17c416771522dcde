"""An upsert that adds no row (every row it wrote replaced one: a LangGraph put of an
item there already) runs on a Citus shard (issue 40): ethos_rows_added, the insert
statement trigger, returns at once when no row was added. Its statements name the agents
of the rows added, none here, and Citus could not route them ("Limit clause is currently
unsupported when a lateral subquery references a column from a table function").

Revision ID: 0050
Revises: 0049
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0050"
down_revision = "0049"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0050_upserts_on_shards.sql")
