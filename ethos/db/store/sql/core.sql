-- The statements of the store's core: the server and its databases, the clock, roles
-- and the leader lock.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: server_version
SHOW server_version_num;

-- name: vector_available
SELECT default_version FROM pg_available_extensions WHERE name = 'vector';

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = %(name)s;

-- name: lock_database_creation
-- Processes starting together would race between the check and the CREATE (and
-- concurrent CREATE DATABASE trips over pg_database's unique index): one at a time.
SELECT pg_advisory_lock(%(key)s);

-- name: database_now
SELECT clock_timestamp();

-- name: ping
SELECT 1;

-- name: table_columns
-- The columns a memory table has, to tell a table that is not fit for ethos by name.
SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %(table)s ORDER BY ordinal_position;

-- name: table_exists
-- Whether a table exists, whatever the role may do with it (information_schema hides
-- the columns of a table it has no rights on).
SELECT to_regclass(%(table)s) IS NOT NULL;

-- name: current_database
SELECT current_database()::text;

-- name: existing_roles
SELECT rolname::text FROM pg_roles WHERE rolname = ANY (%(names)s::text[]);

-- name: agent_roles_now
-- The agent roles an earlier `ethos roles` left: members of the agents' group, and the
-- roles ethos_agent_roles names that still exist.
SELECT r.rolname::text AS role
FROM pg_auth_members AS m
JOIN pg_roles AS g ON g.oid = m.roleid
JOIN pg_roles AS r ON r.oid = m.member
WHERE g.rolname = %(group)s
UNION
SELECT role_name FROM ethos_agent_roles WHERE role_name IN (SELECT rolname FROM pg_roles);

-- name: set_agent_roles
-- `ethos roles`: which agents each agent role speaks for (row-level security reads it).
-- The rows not named go and the new ones come; those named again stay (the statement's
-- DELETE and INSERT see the same snapshot, so a DELETE of all would not make room).
WITH wanted AS (
    SELECT DISTINCT * FROM unnest(%(roles)s::text[], %(agents)s::text[]) AS w (role_name, agent_id)
),
cleared AS (
    DELETE FROM ethos_agent_roles AS r
    WHERE NOT EXISTS (SELECT 1 FROM wanted AS w
                      WHERE w.role_name = r.role_name AND w.agent_id = r.agent_id)
)
INSERT INTO ethos_agent_roles (role_name, agent_id)
SELECT role_name, agent_id FROM wanted
ON CONFLICT DO NOTHING;

-- name: try_leader_lock
SELECT pg_try_advisory_lock(%(key)s);

-- name: citus_catalogue
-- Citus's shard catalogue: NULL on a server without Citus.
SELECT to_regclass('pg_catalog.pg_dist_shard');

-- name: distributed_by_agent
-- On a Citus coordinator: whether ethos's memory tables are distributed (by agent).
SELECT EXISTS (SELECT 1 FROM pg_dist_partition
               WHERE logicalrelid = 'episodic_traces'::regclass AND partmethod = 'h');

-- name: shard_groups
-- On a Citus coordinator whose memory tables are distributed by agent: each shard group
-- (the shards of the colocated tables that hold the same agents), named by its
-- episodic_traces shard, the node that holds it, and the names of its tables there, the
-- reference tables' with them (one shard each, on every node). Only the group of
-- %(agent)s where one is named; none where the tables are not distributed.
SELECT g.shardid AS shard, n.nodename AS host, n.nodeport AS port,
       array_agg(s.logicalrelid::regclass::text ORDER BY s.shardid) AS tables,
       array_agg(shard_name(s.logicalrelid, s.shardid) ORDER BY s.shardid) AS names
FROM pg_dist_shard AS g
JOIN pg_dist_partition AS gp ON gp.logicalrelid = g.logicalrelid
JOIN pg_dist_placement AS gpl ON gpl.shardid = g.shardid
JOIN pg_dist_node AS n ON n.groupid = gpl.groupid
JOIN pg_dist_shard AS s ON s.shardminvalue = g.shardminvalue OR s.shardminvalue IS NULL
JOIN pg_dist_partition AS sp
  ON sp.logicalrelid = s.logicalrelid
 AND (sp.colocationid = gp.colocationid OR (sp.partmethod = 'n' AND sp.repmodel = 't'))
WHERE g.logicalrelid = 'episodic_traces'::regclass
  AND (%(agent)s::text IS NULL
       OR g.shardid = get_shard_id_for_distribution_column('episodic_traces', %(agent)s::text))
GROUP BY g.shardid, n.nodename, n.nodeport
ORDER BY g.shardid;

-- name: interrupt_orphaned_runs
-- The audit rows left `running` by processes that are gone, marked `interrupted`: a
-- row's owner is the application_name of the process that wrote it, and no session
-- with that name means the process is gone (killed: it never finished the row).
WITH sweeps_gone AS (
    UPDATE sweep_runs AS r
    SET status = 'interrupted', finished_at = clock_timestamp(),
        error = coalesce(r.error, 'its process ended while it ran')
    WHERE r.status = 'running' AND r.owner IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.application_name = r.owner)
    RETURNING 1
),
lifecycles_gone AS (
    UPDATE lifecycle_runs AS r
    SET status = 'interrupted', finished_at = clock_timestamp(),
        error = coalesce(r.error, 'its process ended while it ran')
    WHERE r.status = 'running' AND r.owner IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.application_name = r.owner)
    RETURNING 1
)
SELECT (SELECT count(*) FROM sweeps_gone) + (SELECT count(*) FROM lifecycles_gone);
