-- The statements of search: vector and text recall, locating memories, vectors and
-- their index (the LangGraph items' are in items.sql).
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: build_vector_index
CREATE INDEX IF NOT EXISTS memory_vectors_embedding_hnsw ON memory_vectors
    USING hnsw (embedding vector_cosine_ops) WHERE NOT pruned;

-- name: locate_memories
-- Which table each of %(ids)s is in (ids are unique across the memory tables but not
-- across agents: their keys lead with the agent), and whose: of agent %(agent)s alone,
-- in the agent's session, or (NULL) of any agent, for the caller to say which; and
-- whether it is pruned (what a forget checks, in the same look).
SELECT 'episodic_traces' AS table_name, id, agent_id, pruned FROM episodic_traces
WHERE id = ANY(%(ids)s::uuid[]) AND (agent_id = %(agent)s OR %(agent)s::text IS NULL)
UNION ALL
SELECT 'semantic_facts' AS table_name, id, agent_id, pruned FROM semantic_facts
WHERE id = ANY(%(ids)s::uuid[]) AND (agent_id = %(agent)s OR %(agent)s::text IS NULL)
UNION ALL
SELECT 'memory_vectors' AS table_name, id, agent_id, pruned FROM memory_vectors
WHERE id = ANY(%(ids)s::uuid[]) AND (agent_id = %(agent)s OR %(agent)s::text IS NULL);
