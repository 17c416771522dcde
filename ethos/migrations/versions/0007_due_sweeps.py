"""Sweeps that visit only what is due.

Each memory row keeps when it next needs a sweep's write (`due_at`: its stored value
drifts past the tolerance, it falls below its threshold, or it expires) and when it next
needs pruning (`prune_at`). A narrow table per memory table (`<table>_due`) holds hints
(kind, moment, id, slice) that a sweep pops through an index; the row's own columns
are the truth, and a hint only says "look at this row then". The row's columns are
not indexed, so a sweep's write stays a HOT update and touches no index (HNSW
included).

New rows start unscheduled (-infinity) with forced hints, and are scheduled by the next
pass; existing rows get the same here, so the first sweep after this migration visits
everything once.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

FUNCTIONS = """
-- Which of the 16 slices a row belongs to (parallel sweeps split the work by slice):
-- the last byte of its id, random in a UUIDv7.
CREATE FUNCTION ethos_slice(id uuid) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (get_byte(uuid_send(id), 15) & 15)::smallint
$$;

-- New rows are unscheduled: a forced hint of each kind makes the next pass schedule them.
CREATE OR REPLACE FUNCTION ethos_hint_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'INSERT INTO %I (prune, at, id, slice)
         SELECT kind.prune, ''-infinity'', added.id, ethos_slice(added.id)
         FROM added CROSS JOIN (VALUES (false), (true)) AS kind (prune)
         WHERE NOT added.pruned', TG_TABLE_NAME || '_due');
    RETURN NULL;
END
$$;
"""

TABLE = """
ALTER TABLE {table}
    ADD COLUMN due_at timestamptz DEFAULT '-infinity',
    ADD COLUMN prune_at timestamptz DEFAULT '-infinity';

CREATE TABLE {table}_due (
    prune boolean NOT NULL,      -- false: any write due (refresh); true: pruning due
    at    timestamptz NOT NULL,  -- '-infinity': look at the row whatever it says
    id    uuid NOT NULL,
    slice smallint NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
CREATE INDEX {table}_due_idx ON {table}_due (prune, slice, at);

INSERT INTO {table}_due (prune, at, id, slice)
SELECT kind.prune, '-infinity', t.id, ethos_slice(t.id)
FROM {table} AS t CROSS JOIN (VALUES (false), (true)) AS kind (prune)
WHERE NOT t.pruned;

CREATE TRIGGER {table}_hint_new_rows AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ethos_hint_new_rows();
"""

SWEEP_RUNS = """
ALTER TABLE sweep_runs
    ADD COLUMN mode text NOT NULL DEFAULT 'full' CHECK (mode IN ('due', 'full', 'prune'));
ALTER TABLE sweep_runs ALTER COLUMN mode SET DEFAULT 'due';
"""


def upgrade() -> None:
    execute_script(FUNCTIONS)
    for table in MEMORY_TABLES:
        execute_script(TABLE.format(table=table))
    execute_script(SWEEP_RUNS)


def downgrade() -> None:
    execute_script("ALTER TABLE sweep_runs DROP COLUMN mode;")
    for table in MEMORY_TABLES:
        execute_script(
            f"""DROP TRIGGER {table}_hint_new_rows ON {table};
                DROP TABLE {table}_due;
                ALTER TABLE {table} DROP COLUMN due_at, DROP COLUMN prune_at;"""
        )
    execute_script("DROP FUNCTION ethos_hint_new_rows(), ethos_slice(uuid);")
