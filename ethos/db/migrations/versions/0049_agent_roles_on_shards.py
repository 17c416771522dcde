"""An agent role's row policies work on a Citus worker (issue 40): ethos_own_agents()
reads ethos_agent_roles itself, under a row policy that shows a role its own rows, in
place of the view ethos_own_agent_ids. Citus checks a view's tables against the role that
queries it, not the view's owner, so the agent was refused there. On a worker the policy
runs inside the shard's query, where Citus refuses a read of another table unless
citus.allow_nested_distributed_execution is on: the function sets it, for its read of a
reference table (`ethos distribute` makes ethos_agent_roles one), whole on every node.
ethos_memory_is_visible (the queue's row policy) becomes PL/pgSQL: Citus could not plan
the SQL function's parameter inside its query.

Revision ID: 0049
Revises: 0048
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0049"
down_revision = "0048"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0049_agent_roles_on_shards.sql")
