-- The statements of search: vector and text recall, locating memories, the LangGraph
-- items, vectors and their index.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: build_vector_index
CREATE INDEX IF NOT EXISTS memory_vectors_embedding_hnsw ON memory_vectors
    USING hnsw (embedding vector_cosine_ops) WHERE NOT pruned;

-- name: put_item
-- Insert an item, or replace the value of the live one with its key (keeping its
-- history: retrievals, curve; its policy unless %(policy)s names one: NULL lets the
-- insert trigger choose). Returns the memory and whether it is new.
INSERT INTO semantic_facts AS m (agent_id, client_key, content, metadata, expires_at,
                                 policy, created_at, updated_at)
VALUES (%(agent)s, %(key)s, %(content)s, %(value)s::jsonb, %(expires_at)s, %(policy)s,
        %(now)s, %(now)s)
ON CONFLICT (agent_id, client_key) WHERE client_key IS NOT NULL AND NOT pruned
DO UPDATE SET content = excluded.content, metadata = excluded.metadata,
              expires_at = excluded.expires_at, updated_at = excluded.updated_at,
              policy = coalesce(%(policy)s::text, m.policy)
RETURNING m.id, (xmax = 0) AS created;

-- name: put_item_vectors
-- The vectors of an item (when the store has an index), in place of those it had: one
-- per text of its indexed fields (%(contents)s, %(embeddings)s: pgvector's text form),
-- as LangGraph embeds each field; search scores an item by its nearest. None: the item
-- is not embedded (put with index=False, or without the fields' text).
WITH replaced AS (
    DELETE FROM memory_vectors WHERE source_type = 'semantic_facts' AND source_id = %(id)s
)
INSERT INTO memory_vectors (agent_id, content, embedding, source_type, source_id)
SELECT %(agent)s, e.content, e.embedding::vector, 'semantic_facts', %(id)s
FROM unnest(%(contents)s::text[], %(embeddings)s::text[]) AS e (content, embedding);

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
