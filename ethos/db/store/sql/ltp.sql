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

-- name: pop_retrieval_queue
-- The durable path: events queued by ethos_record_retrieval() or a durable buffer. A
-- drain pops the oldest %(limit)s in the transaction that applies them (a crash loses
-- none, applies none twice); SKIP LOCKED lets several drainers share the queue. Counted
-- here: one row per memory (of the agent named, or none), moment and kind, with the
-- calls it came with, and whether the moment is `ahead` of the clock: those are set
-- aside, not applied (a retrieval is recorded when it happens, and one dated decades
-- ahead would hold its memory at full strength).
WITH popped AS (
    DELETE FROM retrieval_queue
    WHERE id IN (SELECT id FROM retrieval_queue ORDER BY id LIMIT %(limit)s
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
    (id, agent_id, table_name, memory_id, at, kind, n, enqueued_at, reason)
SELECT nextval(pg_get_serial_sequence('retrieval_queue', 'id')), %(agent)s, %(table)s, %(id)s,
       e.at, e.kind, e.n, now(), %(reason)s
FROM unnest(%(moments)s::timestamptz[], %(kinds)s::text[], %(counts)s::int[]) AS e (at, kind, n);

-- name: enqueue_retrievals
-- Events of agent %(agent)s's memories of the ids (NULL: of every memory of each id),
-- with the receipt of a flush %(receipt)s: where the COMMIT of this went through unseen,
-- the events the engine buffers instead under that flush id are not applied twice.
WITH receipt AS (INSERT INTO ltp_flushes (id) VALUES (%(receipt)s::uuid))
INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at, kind, grp)
SELECT %(agent)s, %(table)s, memory_id, %(at)s, %(kind)s, %(grp)s::uuid
FROM unnest(%(ids)s::uuid[]) AS memory_id;

-- name: retrieval_queue_backlog
SELECT count(*) FROM retrieval_queue;

-- name: touch_retrieval_activity
INSERT INTO retrieval_activity (id, last_retrieval_at) VALUES (true, now())
ON CONFLICT (id) DO UPDATE
SET last_retrieval_at = greatest(retrieval_activity.last_retrieval_at, excluded.last_retrieval_at);
