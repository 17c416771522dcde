"""A new row's hint finds its place by a probe of the primary key, whatever the planner's
statistics say.

The insert's statement trigger (0013) joined the statement's rows to their table by id to
read their places (a transition table has none), and left the join's shape to the planner.
When the table's statistics say it is empty while it is not (an ANALYZE, autovacuum's
included, that ran while a bulk load was still uncommitted: 0 live rows over its pages),
the planner hashed the whole table for every insert: each add after such a load, until
autovacuum analyzed the table again, took ~115 ms instead of ~2.5 (400,000 rows). A lateral
probe by id, one per new row, costs a bulk insert ~2 µs a row more than the hash and an
add nothing.

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-25
"""

from ethos.migrations import earlier_function, execute_script

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE OR REPLACE FUNCTION ethos_hint_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'INSERT INTO %I (prune, at, slice, n, ids, places)
         SELECT prune, ''-infinity'', slice, count(*), array_agg(id), array_agg(place)
         FROM (SELECT g.*,
                      (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                          AS part
               FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                     FROM added
                     CROSS JOIN LATERAL (SELECT t.ctid AS place FROM %I AS t
                                         WHERE t.id = added.id LIMIT 1) AS at
                     CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                     WHERE NOT added.pruned) AS g) AS g
         GROUP BY prune, slice, part', TG_TABLE_NAME || '_due', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script(earlier_function("0013_slices_by_place", "ethos_hint_new_rows"))
