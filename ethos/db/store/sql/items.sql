-- The statements of the LangGraph store's items (items.py builds the others).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: item_namespaces
-- The namespaces (agents) that hold live items unexpired at %(now)s (an expired item
-- is gone to a reader before a sweep prunes it).
SELECT DISTINCT agent_id FROM semantic_facts
WHERE client_key IS NOT NULL AND NOT pruned AND (expires_at IS NULL OR expires_at > %(now)s)
ORDER BY agent_id;
