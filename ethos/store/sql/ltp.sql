-- The statements of LTP: strengthening, the durable queue, flush claims, links.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: remove_faded_links
-- Links whose weight has fallen below links.prune_weight: derived data, removed.
WITH faded AS (
    DELETE FROM memory_links WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM memory_links WHERE fades_at <= %(now)s ORDER BY fades_at LIMIT %(limit)s))
    RETURNING 1
)
SELECT count(*) FROM faded;

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
-- none, applies none twice); SKIP LOCKED lets several drainers share the queue.
WITH popped AS (
    DELETE FROM retrieval_queue
    WHERE id IN (SELECT id FROM retrieval_queue ORDER BY id LIMIT %(limit)s
                 FOR UPDATE SKIP LOCKED)
    RETURNING table_name, memory_id, at, kind, grp
)
-- counted here: one row per memory, moment and kind (and the calls it came with)
SELECT table_name, memory_id, at, kind, count(*)::int AS n,
       array_agg(grp) FILTER (WHERE grp IS NOT NULL) AS grps
FROM popped
GROUP BY table_name, memory_id, at, kind;

-- name: enqueue_retrievals
INSERT INTO retrieval_queue (table_name, memory_id, at, kind, grp)
SELECT %(table)s, memory_id, %(at)s, %(kind)s, %(grp)s::uuid
FROM unnest(%(ids)s::uuid[]) AS memory_id;

-- name: retrieval_queue_backlog
SELECT count(*) FROM retrieval_queue;

-- name: touch_retrieval_activity
INSERT INTO retrieval_activity (id, last_retrieval_at) VALUES (true, now())
ON CONFLICT (id) DO UPDATE
SET last_retrieval_at = greatest(retrieval_activity.last_retrieval_at, excluded.last_retrieval_at);
