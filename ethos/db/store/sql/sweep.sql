-- The statements of the sweep: keyset and due batches, the due count, sweep runs.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: hint_horizon
-- The oldest transaction still running, before a full sweep of a table reads it: a hint
-- written by an older one was committed before the sweep read any row (migration 0024).
SELECT pg_snapshot_xmin(pg_current_snapshot())::text;

-- name: start_sweep_run
INSERT INTO sweep_runs (trigger, mode, status, swept_at, agent_id, daemon_id, owner)
VALUES (%(trigger)s, %(mode)s, 'running', %(now)s, %(agent)s, %(daemon_id)s,
        current_setting('application_name'))
RETURNING id;

-- name: finish_sweep_run
UPDATE sweep_runs
SET status = %(status)s, finished_at = clock_timestamp(), scanned = %(scanned)s,
    updated = %(updated)s, pruned = %(pruned)s, tables = %(tables)s::jsonb, error = %(error)s
WHERE id = %(id)s;

-- name: try_slice_locks
-- The slices of %(slices)s this session could take (those no other session holds). A
-- slice's lock is its number after %(first)s: a Citus node's shards each have their own.
SELECT coalesce(array_agg(s ORDER BY s), '{}')
FROM unnest(%(slices)s::int[]) AS s
WHERE pg_try_advisory_lock(%(class)s::int, %(first)s::int + s);

-- name: unlock_slices
SELECT count(*) FROM unnest(%(slices)s::int[]) AS s
WHERE pg_advisory_unlock(%(class)s::int, %(first)s::int + s);

-- name: last_sweep_finished
-- When the next sweep is due: an interval after the last one that did not fail.
SELECT max(coalesce(finished_at, started_at)) FROM sweep_runs
WHERE status <> 'failed' AND mode <> 'prune';

-- name: pruned_at
SELECT table_name, id, content FROM ethos_memories
WHERE agent_id = %(agent)s AND pruned AND pruned_at = %(at)s
ORDER BY table_name, id;

-- name: remove_faded_links
-- Links whose weight has fallen below links.prune_weight: derived data, removed.
WITH faded AS (
    DELETE FROM memory_links WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM memory_links WHERE fades_at <= %(now)s ORDER BY fades_at LIMIT %(limit)s))
    RETURNING 1
)
SELECT count(*) FROM faded;

-- name: anything_due
-- Whether a due sweep at %(now)s (%(prune)s: a prune pass) has anything to do here: a
-- hint due, or, for a due sweep, a link faded. A Citus cluster's sweep visits only the
-- shard groups that have: each visit costs its round trips (counts, slices, batches)
-- whatever the group holds.
SELECT EXISTS (SELECT FROM episodic_traces_due WHERE prune = %(prune)s AND at <= %(now)s)
    OR EXISTS (SELECT FROM semantic_facts_due WHERE prune = %(prune)s AND at <= %(now)s)
    OR EXISTS (SELECT FROM memory_vectors_due WHERE prune = %(prune)s AND at <= %(now)s)
    OR (NOT %(prune)s AND EXISTS (SELECT FROM memory_links WHERE fades_at <= %(now)s));
