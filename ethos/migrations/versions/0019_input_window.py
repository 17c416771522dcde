"""What plain SQL writes gets the checks the Python layer makes (inputs.py):

- moments from 1900 to 2199 (EARLIEST, LATEST): a memory's created_at, anchor_at,
  last_retrieved_at and expires_at, and a queued retrieval's `at`; ethos_record_retrieval
  also refuses a moment more than 5 minutes ahead of the database's clock. Outside them
  the decay math leaves float range and ±infinity would be stored;
- a memory_vectors embedding with a direction (norm > 0): an all-zero vector's cosine is
  NaN, which sorts first in every search.

Inserts are checked per statement over their new rows (a transition table: one scan, no
per-row trigger), so COPY and bulk inserts pay little; rows already stored are left as
they are (a CHECK would also refuse the sweep's updates of them). Queued retrievals
outside the window move to retrieval_dead_letters with their reason: nothing is lost,
and the daemon's drain no longer meets them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24
"""

import importlib

from ethos.migrations import execute_script

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def _within(column: str) -> str:
    return f"{column} >= '1900-01-01 00:00+00' AND {column} < '2200-01-01 00:00+00'"


CHECKS = {
    "episodic_traces": [_within("created_at"), _within("anchor_at")],
    "semantic_facts": [_within("created_at"), _within("anchor_at")],
    "memory_vectors": [
        _within("created_at"),
        _within("anchor_at"),
        "(embedding IS NULL OR vector_norm(embedding) > 0)",
    ],
}
OPTIONAL = ["last_retrieved_at", "expires_at"]

UPGRADE = r"""
CREATE FUNCTION ethos_check_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
-- TG_ARGV[0]: what every new row must satisfy; the first that does not is named.
DECLARE
    bad uuid;
BEGIN
    EXECUTE format('SELECT id FROM new_rows WHERE NOT (%s) LIMIT 1', TG_ARGV[0]) INTO bad;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%: row % has a moment outside 1900..2199 or an all-zero embedding',
            TG_TABLE_NAME, bad USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE TABLE retrieval_dead_letters (
    id          bigint PRIMARY KEY,
    table_name  text NOT NULL,
    memory_id   uuid NOT NULL,
    at          timestamptz NOT NULL,
    kind        text NOT NULL,
    grp         uuid,
    enqueued_at timestamptz NOT NULL,
    reason      text NOT NULL,
    dead_at     timestamptz NOT NULL DEFAULT now()
);

WITH bad AS (
    DELETE FROM retrieval_queue
    WHERE NOT (at >= '1900-01-01 00:00+00' AND at < '2200-01-01 00:00+00')
    RETURNING *
)
INSERT INTO retrieval_dead_letters
    (id, table_name, memory_id, at, kind, grp, enqueued_at, reason)
SELECT id, table_name, memory_id, at, kind, grp, enqueued_at, 'moment outside 1900..2199'
FROM bad;

ALTER TABLE retrieval_queue ADD CONSTRAINT retrieval_queue_at_window
    CHECK (at >= '1900-01-01 00:00+00' AND at < '2200-01-01 00:00+00');

CREATE OR REPLACE FUNCTION ethos_record_retrieval(
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
    IF NOT (at >= '1900-01-01 00:00+00' AND at <= now() + interval '5 minutes') THEN
        RAISE EXCEPTION 'at % is outside 1900 .. now: a retrieval is recorded when it happens', at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO retrieval_queue (table_name, memory_id, at)
    SELECT target, memory_id, at FROM unnest(ids) AS memory_id WHERE memory_id IS NOT NULL;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;
"""

TRIGGER = """
CREATE TRIGGER {table}_check_new_rows AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_check_new_rows('{check}');
"""


def conditions(table: str) -> list[str]:
    """What every new row of `table` must satisfy, one condition each."""
    optional = [
        f"({column} IS NULL OR {_within(column)})"
        for column in OPTIONAL
        if column != "expires_at" or table != "episodic_traces"
    ]
    return [*CHECKS[table], *optional]


def _check(table: str) -> str:
    """The conditions as the trigger's argument."""
    return " AND ".join(conditions(table)).replace("'", "''")


def upgrade() -> None:
    execute_script(UPGRADE)
    for table in CHECKS:
        execute_script(TRIGGER.format(table=table, check=_check(table)))


def downgrade() -> None:
    for table in CHECKS:
        execute_script(f"DROP TRIGGER {table}_check_new_rows ON {table};")
    execute_script("""
DROP FUNCTION ethos_check_new_rows();
ALTER TABLE retrieval_queue DROP CONSTRAINT retrieval_queue_at_window;
DROP TABLE retrieval_dead_letters;
""")
    # 0011's ethos_record_retrieval, as it was
    script = importlib.import_module("ethos.migrations.versions.0011_retrieval_queue").UPGRADE
    function = script.split("CREATE FUNCTION", 1)[1].split("CREATE VIEW", 1)[0]
    execute_script("CREATE OR REPLACE FUNCTION" + function)
