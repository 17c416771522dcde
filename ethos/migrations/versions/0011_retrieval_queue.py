"""Retrievals recorded from plain SQL, durably: a queue the daemon drains.

`SELECT ethos_record_retrieval('episodic_traces', ARRAY[...]::uuid[])` (any client, in
its own transaction) appends to retrieval_queue; the daemon applies queued rows with the
same coalesced LTP as the Python buffer and deletes them in the applying transaction, so
a crash anywhere loses nothing and applies nothing twice. With [ltp] durable = true the
Python buffer writes through this queue too (kind: what happened; grp: the search or
feedback call, whose members' links learn together).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE retrieval_queue (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name  text NOT NULL
                CHECK (table_name IN ('memory_vectors', 'episodic_traces', 'semantic_facts')),
    memory_id   uuid NOT NULL,
    at          timestamptz NOT NULL,
    kind        text NOT NULL DEFAULT 'retrieval'
                CHECK (kind IN ('retrieval', 'surfaced', 'useful', 'wrong')),
    grp         uuid,
    enqueued_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION ethos_record_retrieval(
    table_name text, ids uuid[], at timestamptz DEFAULT now()
) RETURNS integer LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    target text := CASE table_name WHEN 'vector' THEN 'memory_vectors'
                                   WHEN 'episode' THEN 'episodic_traces'
                                   WHEN 'fact' THEN 'semantic_facts'
                                   ELSE table_name END;
    queued integer;
BEGIN
    IF target IS NULL OR target NOT IN ('memory_vectors', 'episodic_traces', 'semantic_facts')
    THEN
        RAISE EXCEPTION 'unknown table %: use memory_vectors, episodic_traces or semantic_facts',
            coalesce(table_name, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF at IS NULL THEN
        RAISE EXCEPTION 'at must be a moment, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO retrieval_queue (table_name, memory_id, at)
    SELECT target, memory_id, at FROM unnest(ids) AS memory_id WHERE memory_id IS NOT NULL;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

CREATE VIEW ethos_retrieval_queue AS
    SELECT count(*) AS backlog, min(enqueued_at) AS oldest_enqueued_at,
           date_part('epoch', now() - min(enqueued_at)) AS oldest_age_seconds
    FROM retrieval_queue;
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script(
        """DROP VIEW ethos_retrieval_queue;
           DROP FUNCTION ethos_record_retrieval(text, uuid[], timestamptz);
           DROP TABLE retrieval_queue;"""
    )
