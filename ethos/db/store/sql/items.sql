-- The statements of the LangGraph store's items (items.py builds the others).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: refresh_item_ttls
-- LangGraph's refresh_ttl: the items among %(ids)s that have a ttl (minutes, kept in
-- their value's JSON under %(ttl_key)s) expire that long after %(now)s. The rows are
-- locked in id order: two searches refreshing the items they share, each in its plan's
-- order, would deadlock.
UPDATE semantic_facts AS m
SET expires_at = %(now)s::timestamptz
                 + make_interval(secs => (m.metadata ->> %(ttl_key)s)::float8 * 60)
FROM (SELECT id FROM semantic_facts
      WHERE id = ANY(%(ids)s::uuid[]) AND metadata ? %(ttl_key)s AND NOT pruned
      ORDER BY id FOR NO KEY UPDATE) AS locked
WHERE m.id = locked.id;

-- name: item_namespaces
-- The namespaces (agents) that hold live items unexpired at %(now)s (an expired item
-- is gone to a reader before a sweep prunes it).
SELECT DISTINCT agent_id FROM semantic_facts
WHERE client_key IS NOT NULL AND NOT pruned AND (expires_at IS NULL OR expires_at > %(now)s)
ORDER BY agent_id;
