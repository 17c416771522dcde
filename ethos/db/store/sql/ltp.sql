-- The statements of LTP: strengthening, the durable queue, flush claims, links.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: claim_ltp_flush
-- A flush claims its id in its own transaction: a retry of a flush whose COMMIT went
-- through unseen finds the receipt and applies nothing twice.
INSERT INTO ltp_flushes (id) VALUES (%(id)s) ON CONFLICT DO NOTHING RETURNING id;

-- name: forget_ltp_flushes
-- Receipts only need to outlive a flush's retries.
DELETE FROM ltp_flushes WHERE applied_at < now() - interval '1 day';

-- name: oldest_queued_agent
-- On a Citus cluster a drain pops one agent's events at a time (Citus locks rows FOR
-- UPDATE on one shard only): the agent of the oldest event, of those not in %(held)s.
SELECT agent_id FROM retrieval_queue WHERE agent_id <> ALL (%(held)s::text[])
ORDER BY enqueued_at LIMIT 1;

-- name: pop_retrieval_queue
-- The durable path: events queued by ethos_record_retrieval() or a durable buffer. A
-- drain pops the oldest %(limit)s (of agent %(agent)s, or of any when NULL) in the
-- transaction that applies them (a crash loses none, applies none twice); SKIP LOCKED
-- lets several drainers share the queue. Counted here: one row per memory, moment and
-- kind, with the calls it came with, and whether the moment is `ahead` of the clock:
-- those are set aside, not applied (a retrieval is recorded when it happens, and one
-- dated decades ahead would hold its memory at full strength). The events of agents in
-- %(held)s stay queued: a row of theirs was held by another transaction a moment ago.
WITH popped AS (
    DELETE FROM retrieval_queue
    WHERE (%(agent)s::text IS NULL OR agent_id = %(agent)s)
      AND (agent_id, id) IN (SELECT agent_id, id FROM retrieval_queue
                             WHERE (%(agent)s::text IS NULL OR agent_id = %(agent)s)
                               AND agent_id <> ALL (%(held)s::text[])
                             ORDER BY enqueued_at LIMIT %(limit)s
                             FOR UPDATE SKIP LOCKED)
    RETURNING agent_id, table_name, memory_id, at, kind, grp
)
SELECT agent_id, table_name, memory_id, at, kind, count(*)::int AS n,
       array_agg(grp) FILTER (WHERE grp IS NOT NULL) AS grps,
       at > now() + interval '5 minutes' AS ahead
FROM popped
GROUP BY agent_id, table_name, memory_id, at, kind;

-- name: set_aside_events
-- Events the database refused for good (a flush's or the queue's), kept with the reason
-- where an operator finds them: the rest of their batch is applied without them.
INSERT INTO retrieval_dead_letters
    (agent_id, table_name, memory_id, at, kind, n, enqueued_at, reason)
SELECT %(agent)s, %(table)s, %(id)s, e.at, e.kind, e.n, now(), %(reason)s
FROM unnest(%(moments)s::timestamptz[], %(kinds)s::text[], %(counts)s::int[]) AS e (at, kind, n);

-- name: retrieval_queue_backlog
SELECT count(*) FROM retrieval_queue;

-- name: maintenance_lock_timeout
-- A maintenance transaction (an LTP flush, a drain of the queue) waits at most this long
-- for a lock: beyond the rows it skips, a tenant's open transaction may hold what a
-- trigger writes (its agent's term statistics, say).
SELECT set_config('lock_timeout', %(timeout)s, true);

-- name: touch_retrieval_activity
INSERT INTO retrieval_activity (id, last_retrieval_at) VALUES (true, now())
ON CONFLICT (id) DO UPDATE
SET last_retrieval_at = greatest(retrieval_activity.last_retrieval_at, excluded.last_retrieval_at);
