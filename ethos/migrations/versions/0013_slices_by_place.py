"""Due hints in groups, sliced by where their rows live, pointing there.

Measured on 1M rows: a due row cost ~18-30 µs against ~11 µs for a row of a full
sweep's keyset batch. The difference was the hints: each row's hint popped (an index
scan and a delete), looked up again by id, and a new hint inserted (a heap and an index
insertion), and the rows of a batch spread over as many pages as rows. Now:

- A hint names a group of rows (ids, and the place, ctid, each had when the hint was
  made): the rows one statement scheduled, of one kind and slice, whose moments lie
  within a factor of √2 of each other seen from that statement's moment (at most
  500; the rebuild below, done once, groups by a factor of two). The group is due at
  its earliest moment; the sweep that pops it looks at every row in it, writes those
  that are due, and groups the others anew. One hint row per group instead of per row.
- A row is read where its hint saw it (one page) and only looked up by id when it moved
  since (any update makes a new version).
- Slices follow places: runs of 64 pages (512 kB) dealt round the 16 slices. A batch's
  rows share pages, and parallel sweepers work on pages of their own. A row that moves
  keeps its older hints' slice: the slice only says which sweeper takes the hint.

The hints are derived data: they are rebuilt here from each row's own due_at/prune_at.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-22
"""

import importlib

from ethos.migrations import execute_script

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

FUNCTIONS = """
-- Which of the 16 slices a place belongs to: its page's run of 64 pages, in turn.
CREATE FUNCTION ethos_slice(place tid) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ((place::text::point)[0]::bigint / 64 % 16)::smallint
$$;

-- New rows are unscheduled: a forced hint of each kind makes the next pass schedule
-- them. (A transition table has no ctid: the new rows are found by id.)
CREATE OR REPLACE FUNCTION ethos_hint_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'INSERT INTO %I (prune, at, slice, n, ids, places)
         SELECT prune, ''-infinity'', slice, count(*), array_agg(id), array_agg(place)
         FROM (SELECT g.*,
                      (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                          AS part
               FROM (SELECT kind.prune, t.id, t.ctid AS place, ethos_slice(t.ctid) AS slice
                     FROM added JOIN %I AS t ON t.id = added.id
                     CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                     WHERE NOT added.pruned) AS g) AS g
         GROUP BY prune, slice, part', TG_TABLE_NAME || '_due', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

DROP FUNCTION ethos_slice(uuid);
"""

TABLE = """
TRUNCATE {table}_due;
ALTER TABLE {table}_due
    DROP COLUMN id,
    ADD COLUMN n integer NOT NULL,      -- a group of n rows
    ADD COLUMN ids uuid[] NOT NULL,
    ADD COLUMN places tid[] NOT NULL;   -- where each was when the hint was made

INSERT INTO {table}_due (prune, at, slice, n, ids, places)
SELECT prune, min(at), slice, count(*), array_agg(id), array_agg(place)
FROM (SELECT g.*, (row_number() OVER (PARTITION BY prune, slice, span ORDER BY id) - 1)
                  / 500 AS part
      FROM (SELECT kind.prune, s.at, t.id, t.ctid AS place, ethos_slice(t.ctid) AS slice,
                   floor(ln(greatest(date_part('epoch', s.at - now()) / 60, 1)) / ln(2))
                       AS span
            FROM {table} AS t
            CROSS JOIN (VALUES (false), (true)) AS kind (prune)
            CROSS JOIN LATERAL (
                SELECT CASE WHEN kind.prune THEN t.prune_at ELSE t.due_at END AS at) AS s
            WHERE NOT t.pruned AND s.at IS NOT NULL) AS g) AS g
GROUP BY prune, slice, span, part;
"""

OLD_TABLE = """
TRUNCATE {table}_due;
ALTER TABLE {table}_due DROP COLUMN n, DROP COLUMN ids, DROP COLUMN places,
    ADD COLUMN id uuid NOT NULL;

INSERT INTO {table}_due (prune, at, id, slice)
SELECT kind.prune, s.at, t.id, ethos_slice(t.id)
FROM {table} AS t
CROSS JOIN (VALUES (false), (true)) AS kind (prune)
CROSS JOIN LATERAL (SELECT CASE WHEN kind.prune THEN t.prune_at ELSE t.due_at END AS at) AS s
WHERE NOT t.pruned AND s.at IS NOT NULL;
"""


def upgrade() -> None:
    execute_script(FUNCTIONS)
    for table in MEMORY_TABLES:
        execute_script(TABLE.format(table=table))


def downgrade() -> None:
    # 0007's functions (its trigger function is created or replaced), then this one's
    # slice function goes.
    execute_script(importlib.import_module("ethos.migrations.versions.0007_due_sweeps").FUNCTIONS)
    execute_script("DROP FUNCTION ethos_slice(tid);")
    for table in MEMORY_TABLES:
        execute_script(OLD_TABLE.format(table=table))
