-- The statements of distributing ethos's tables on a Citus cluster (decision record 0019).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

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

-- name: active_workers
SELECT count(*) FROM citus_get_active_worker_nodes();

-- name: citus_tables
-- ethos's tables Citus holds already: 'distributed' or 'reference'.
SELECT logicalrelid::regclass::text AS table_name,
       CASE WHEN partmethod = 'h' THEN 'distributed' ELSE 'reference' END AS kind
FROM pg_dist_partition
WHERE logicalrelid::regclass::text = ANY (%(tables)s::text[]);

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
