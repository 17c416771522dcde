"""An agent role's vector of another agent is refused before its source is read (issue 64).

The write trigger (SECURITY DEFINER, it reads any agent's memories) checked that a
vector's source is a memory of the vector's agent before the row policy, which runs
after BEFORE triggers, refused an agent role's row of another agent: a role of agent a
adding a vector of agent b learned from the answer whether b holds the id it named
("is not a memory of agent b", or the row policy's refusal). The trigger now refuses
such a row first, with the row policy's own error, whatever the id: ethos_role_agents
gives the agents of the role the caller runs as.

Revision ID: 0059
Revises: 0058
Create Date: 2026-12-07
"""

from ethos.db.migrations import execute_frozen

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0059_batches.sql")
