"""Keys lead with the agent: the memory tables' `(agent_id, id)`, links'
`(agent_id, a_id, b_id)`, revisions' `(agent_id, id)`, as Citus needs of a table
distributed by agent (decision record 0019). The key replaces the index of an agent's
live memories; a lookup by id alone, live or pruned, has an index of every id.

Revision ID: 0045
Revises: 0044
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0045"
down_revision = "0044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0045_agent_keys.sql")
