"""A queued retrieval names its agent where the caller knows it (issue 40).

A queued event named a table and an id, and the drain applied it to every memory of that
id (since 0045 the key is agent and id: two agents may hold one). Now the queue and its
dead letters have `agent_id`: an event that names it reaches that agent's memory only;
one without (NULL, the events queued before) reaches every memory of the id, as before.
ethos_record_retrieval takes the agent as a fourth argument; under row security (an
agent role, or the app under `ethos roles`) with none, it names each event by the agent
of the memory it finds, so an agent role's events are always its own agents'.

The queue stays on a Citus coordinator: Citus writes a set of rows into a distributed
table whose key a sequence gives by COPY, which row security refuses.

Revision ID: 0054
Revises: 0053
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0054"
down_revision = "0053"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0054_queue_by_agent.sql")
