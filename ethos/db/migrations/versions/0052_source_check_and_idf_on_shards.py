"""A near merge that points vectors at a surviving episode or fact, and ethos_text_idf,
on a Citus cluster (issue 40).

ethos_write_row checks a vector's source with a read of the source's table by its key
(PERFORM ... FOUND) in place of an EXISTS subquery: a merge runs on the agent's node
against its shards by name, and Citus planned the trigger's subquery there with the
trigger's values as parameters, which it cannot ("could not create distributed plan").

ethos_text_idf (SQL for other uses, runbooks/recall.md) is PL/pgSQL, planned each call
with its values: Citus plans no parameter of an SQL function, and refused every call
through the coordinator.

Revision ID: 0052
Revises: 0051
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0052"
down_revision = "0051"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0052_source_check_and_idf_on_shards.sql")
