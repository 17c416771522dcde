"""A hard delete's revisions are found by the memory's agent too (ethos_write_row), as a
Citus cluster needs to route the statement to one shard (decision record 0019); the
same plan and rows on one server. (ethos_previous_asks keeps its row comparison
without an equality: with one, the generic plan may walk the index of ids back through
other agents' rows; test_the_previous_memory_is_one_probe_whatever_the_table_holds.)

Revision ID: 0043
Revises: 0042
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0043_routable_writes.sql")
