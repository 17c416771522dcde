-- The statements of the lifecycle: merges, forgetting, purge, erase, recovery,
-- lifecycle runs.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: record_recovery
-- A recovery, written when it ends: `recovered` is what it committed, also when it was
-- interrupted (then a rerun of the same selector brings back the rest).
INSERT INTO recoveries (recovered_as_of, table_name, selector, command, recovered, strength,
                        status)
VALUES (%(now)s, %(table)s, %(selector)s::jsonb, %(command)s, %(recovered)s, %(strength)s,
        %(status)s)
RETURNING id;

-- name: near_duplicates
-- The next %(limit)s live vectors after %(after)s, each with its agent and its nearest
-- neighbours of the same agent at least %(threshold)s cosine-similar (other is NULL when
-- it has none), found through the HNSW index (never all pairs); last_id is where the
-- batch ended.
WITH batch AS MATERIALIZED (
    SELECT id, agent_id, embedding FROM memory_vectors
    WHERE NOT pruned AND id > %(after)s AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    ORDER BY id LIMIT %(limit)s
)
SELECT v.id, v.agent_id, n.id AS other, (SELECT max(id::text)::uuid FROM batch) AS last_id
FROM batch AS v
LEFT JOIN LATERAL (
    SELECT c.id FROM (
        SELECT c.id, c.embedding <=> v.embedding AS distance FROM memory_vectors AS c
        WHERE c.agent_id = v.agent_id AND NOT c.pruned AND c.id <> v.id
        ORDER BY c.embedding <=> v.embedding
        LIMIT 3
    ) AS c
    WHERE 1 - c.distance >= %(threshold)s::float8
) AS n ON true;

-- name: near_duplicate_embeddings
-- As near_duplicates, of the live memories of %(table)s (an episode's or fact's) by
-- their embeddings: the next %(limit)s embeddings after the memory %(after)s, each with
-- its memory's id and agent and the memories of that agent whose embedding is among its
-- nearest and at least %(threshold)s cosine-similar.
WITH batch AS MATERIALIZED (
    SELECT e.source_id AS id, e.agent_id, e.embedding FROM memory_embeddings AS e
    WHERE e.source_table = %(table)s AND e.source_id > %(after)s
      AND (%(agent)s::text IS NULL OR e.agent_id = %(agent)s)
      AND (EXISTS (SELECT FROM episodic_traces AS s
                   WHERE s.agent_id = e.agent_id AND s.id = e.source_id AND NOT s.pruned)
           OR EXISTS (SELECT FROM semantic_facts AS s
                      WHERE s.agent_id = e.agent_id AND s.id = e.source_id AND NOT s.pruned))
    ORDER BY e.source_id LIMIT %(limit)s
)
SELECT v.id, v.agent_id, n.id AS other, (SELECT max(id::text)::uuid FROM batch) AS last_id
FROM batch AS v
LEFT JOIN LATERAL (
    SELECT c.id FROM (
        SELECT c.source_id AS id, c.embedding <=> v.embedding AS distance
        FROM memory_embeddings AS c
        WHERE c.agent_id = v.agent_id AND c.source_table = %(table)s AND c.source_id <> v.id
          AND (EXISTS (SELECT FROM episodic_traces AS s
                       WHERE s.agent_id = c.agent_id AND s.id = c.source_id AND NOT s.pruned)
               OR EXISTS (SELECT FROM semantic_facts AS s
                          WHERE s.agent_id = c.agent_id AND s.id = c.source_id
                            AND NOT s.pruned))
        ORDER BY ethos_half(c.embedding) <=> ethos_half(v.embedding)  -- the index's
        LIMIT 3
    ) AS c
    WHERE 1 - c.distance >= %(threshold)s::float8
) AS n ON true;

-- name: undeletable_tables
-- The tables of `tables` the current role may not delete from.
SELECT t FROM unnest(%(tables)s::text[]) AS t WHERE NOT has_table_privilege(t, 'DELETE');

-- name: count_agent_links
SELECT count(*) FROM memory_links WHERE agent_id = %(agent)s;

-- name: count_agent_policy
SELECT count(*) FROM agent_policies WHERE agent_id = %(agent)s;

-- name: start_lifecycle_run
INSERT INTO lifecycle_runs (kind, trigger, status, as_of, selector, owner)
VALUES (%(kind)s, %(trigger)s, 'running', %(now)s, %(selector)s::jsonb,
        current_setting('application_name'))
RETURNING id;

-- name: finish_lifecycle_run
UPDATE lifecycle_runs
SET status = %(status)s, finished_at = clock_timestamp(), counts = %(counts)s::jsonb,
    error = %(error)s
WHERE id = %(id)s;

-- name: recoveries_of
-- The recoveries that named memory %(id)s of %(table)s and brought it back, with how it
-- had been pruned (`pruned`: its id, pruned_at and prune_reason); those recorded before
-- recoveries kept what they brought back (selector.brought_back) have no `pruned`.
SELECT r.recovered_as_of, r.command, r.strength, b.entry AS pruned
FROM recoveries AS r
LEFT JOIN LATERAL (SELECT e AS entry FROM jsonb_array_elements(r.selector -> 'brought_back') AS e
                   WHERE e ->> 'id' = %(id)s::text) AS b ON true
WHERE r.table_name = %(table)s AND r.selector -> 'ids' ? %(id)s::text
  AND (b.entry IS NOT NULL OR NOT r.selector ? 'brought_back')
ORDER BY r.recovered_as_of, r.id;
