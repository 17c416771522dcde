-- The statements of the LangGraph store's items (items.py builds the others).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: get_item
-- The live item of namespace (agent) %(agent)s under key %(key)s, unexpired at %(now)s;
-- its agent compared byte by byte, as the items' index orders it (items.item_agent).
SELECT m.id, m.agent_id, m.client_key, m.metadata, m.created_at,
       coalesce(m.updated_at, m.created_at) AS updated_at, m.expires_at
FROM semantic_facts AS m
WHERE m.agent_id COLLATE "C" = %(agent)s AND m.client_key = %(key)s
  AND NOT m.pruned AND (m.expires_at IS NULL OR m.expires_at > %(now)s);

-- name: item_namespaces
-- The namespaces (agents) that hold live items unexpired at %(now)s (an expired item
-- is gone to a reader before a sweep prunes it).
SELECT DISTINCT agent_id FROM semantic_facts
WHERE client_key IS NOT NULL AND NOT pruned AND (expires_at IS NULL OR expires_at > %(now)s)
ORDER BY agent_id;
