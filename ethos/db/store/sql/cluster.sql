-- The statements of distributing ethos's tables on a Citus cluster (decision record 0019).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: active_workers
SELECT count(*) FROM citus_get_active_worker_nodes();

-- name: citus_tables
-- Those of %(tables)s that Citus holds already (distributed or reference).
SELECT logicalrelid::regclass::text AS table_name
FROM pg_dist_partition
WHERE logicalrelid::regclass::text = ANY (%(tables)s::text[]);

-- name: missing_tables
-- Those of %(tables)s this database has not made yet (migrated to an earlier revision):
-- the migration that makes one on a distributed database makes it Citus's then.
SELECT t AS table_name FROM unnest(%(tables)s::text[]) AS t WHERE to_regclass(t) IS NULL;

-- name: keyed_without_agent
-- Those of %(tables)s with a primary or unique key that does not hold agent_id: Citus
-- cannot distribute them by agent (the queue of a database migrated before 0057).
SELECT DISTINCT conrelid::regclass::text AS table_name
FROM pg_constraint AS c
WHERE contype IN ('p', 'u') AND conrelid::regclass::text = ANY (%(tables)s::text[])
  AND NOT EXISTS (SELECT FROM pg_attribute AS a
                  WHERE a.attrelid = c.conrelid AND a.attname = 'agent_id'
                    AND a.attnum = ANY (c.conkey));

-- name: planned_once
-- The functions that keep one generic plan a session (plan_cache_mode in their own
-- settings): Citus routes a statement by the agent it names, which a generic plan does
-- not hold, and refuses to plan one.
SELECT oid::regprocedure::text AS function FROM pg_proc
WHERE 'plan_cache_mode=force_generic_plan' = ANY (proconfig);

-- name: create_reference_table
SELECT create_reference_table(%(table)s::regclass);

-- name: create_distributed_table
SELECT create_distributed_table(%(table)s::regclass, 'agent_id', colocate_with => %(colocate_with)s);
