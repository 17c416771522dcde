"""An agent role queues events of its own memories, and no group of them (issue 40).

`ethos roles` gave the agent roles INSERT on every column of retrieval_queue, `grp`
included: a group of 50,000 queued events made one drain of 1.25e9 link pairs, which
held every tenant's LTP. It now grants the columns of an event only
(roles.QUEUE_COLUMNS). And migration 0054 left the queue's row policy of a database
whose roles were made before it as it was: it did not ask that an event name one of
the role's own agents. Here the roles a database holds get both, without `ethos roles`
run again: the policy's check as `ethos roles` makes it now, and the columns.

Revision ID: 0055
Revises: 0054
Create Date: 2026-11-28
"""

from ethos.db.migrations import execute_frozen

revision = "0055"
down_revision = "0054"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0055_queue_columns.sql")
