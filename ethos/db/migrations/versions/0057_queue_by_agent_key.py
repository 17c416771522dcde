"""The retrieval queue keyed by agent, so that Citus can distribute it (issue 40).

The queue's key was a sequence and an event could name no agent. Citus writes a set of
rows into a distributed table whose key comes from a sequence (or any random default) by
COPY through the coordinator, which row security refuses: under `ethos roles` every
ethos_record_retrieval on a cluster would fail. An event's key is now the agent and an
id its statement gives (from the call and the event's place in it); every event names
its agent (one that named none is queued again for each memory of its id, one whose
memory is gone set aside as a dead letter); dead letters key themselves. The queue is
read oldest first by the moment it was queued, not by its key.

ethos_record_retrieval queues the events of the memories it finds (by id, and by agent
where one is named): an id of no memory is left out, not queued to be skipped later.

Revision ID: 0057
Revises: 0056
Create Date: 2026-11-28
"""

from ethos.db.migrations import execute_frozen

revision = "0057"
down_revision = "0056"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0057_queue_by_agent_key.sql")
