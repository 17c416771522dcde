-- The statements of memories: insert, fetch, deduplicate, list, update.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: lock_content
-- Adds of one normalised content by one agent, one at a time: concurrent adds of the
-- same new memory make one row.
SELECT pg_advisory_xact_lock(
    hashtextextended(%(table)s || ':' || %(agent)s || ':' || ethos_content_key(%(content)s), 0));

-- name: agent_counts
-- Every agent with its memories counted per table.
SELECT agent_id, table_name, live, pruned, pinned FROM ethos_agent_counts
ORDER BY agent_id, table_name;

-- name: agent_holds_memories
-- Whether agent %(agent)s holds a memory, live or pruned (each table's keys lead with
-- the agent: three index probes).
SELECT EXISTS (SELECT FROM episodic_traces WHERE agent_id = %(agent)s)
    OR EXISTS (SELECT FROM semantic_facts WHERE agent_id = %(agent)s)
    OR EXISTS (SELECT FROM memory_vectors WHERE agent_id = %(agent)s);

-- name: known_agents
-- The agents the text and vector statistics count (a row each), at most %(most)s: the
-- names a mistyped agent is compared with.
SELECT agent_id FROM agent_text_stats
UNION
SELECT agent_id FROM agent_vector_stats
LIMIT %(most)s;

-- name: pruned_by_reason
-- Pruned memories by table and reason, since %(since)s (all when NULL).
SELECT table_name, prune_reason AS reason, count(*) AS count FROM ethos_memories
WHERE pruned AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
  AND (%(since)s::timestamptz IS NULL OR pruned_at >= %(since)s)
GROUP BY table_name, prune_reason ORDER BY table_name, prune_reason;

-- name: rare_words
-- The lexemes that count most in a text's automatic importance (ethos_informative_words).
SELECT w.lexeme
FROM (SELECT coalesce((SELECT docs FROM agent_text_stats WHERE agent_id = %(agent)s), 0)
             AS docs) AS n
CROSS JOIN unnest(tsvector_to_array(%(tsv)s::tsvector)) AS w (lexeme)
LEFT JOIN lexeme_stats AS l ON l.agent_id = %(agent)s AND l.lexeme = w.lexeme
WHERE w.lexeme <> ethos_agent_lexeme(%(agent)s)
ORDER BY ethos_word_weight(w.lexeme, n.docs, coalesce(l.docs, 0)) DESC, w.lexeme
LIMIT %(n)s;

-- name: words_of
-- Each of %(lexemes)s as %(content)s first writes it (a lexeme is a stem: 'alic' is
-- "Alice"), or the lexeme where no word of it makes that lexeme now. (Apart from
-- rare_words: on Citus that one runs on the agent's shard, where a function reading
-- ethos_settings, as ethos_text_config, may not run.)
SELECT coalesce((SELECT d.token
                 FROM ts_debug(ethos_text_config(), %(content)s) WITH ORDINALITY AS d
                 WHERE w.lexeme = ANY (d.lexemes)
                 ORDER BY d.ordinality LIMIT 1), w.lexeme) AS word
FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS w (lexeme, k)
ORDER BY w.k;

-- name: auto_half
-- The informative words that make an automatic importance of 0.5 for an agent now, and
-- the words its memories hold on average (NULL: none counted yet), as the insert trigger
-- reads them (ethos_auto_half; the settings an engine wrote when it opened).
SELECT ethos_auto_half(s.auto_importance_half, t.average) AS half, t.average
FROM ethos_settings AS s
LEFT JOIN (SELECT length::float8 / nullif(docs, 0) AS average FROM agent_text_stats
           WHERE agent_id = %(agent)s) AS t ON true;

-- name: revisions_of
-- A memory's earlier texts and metadata, oldest first (the write path keeps them).
SELECT content, metadata, revised_at FROM memory_revisions
WHERE agent_id = %(agent)s AND table_name = %(table)s AND memory_id = %(id)s
ORDER BY revised_at, id;

-- name: importance_tier
-- The policy an importance picks, as a new memory's is picked (ethos_importance_tier: the
-- tiers the database keeps).
SELECT ethos_importance_tier(%(importance)s::float8) AS policy;

-- name: stats_counts
-- The figures of `ethos stats` and the dashboard (memories.py's STATS, stats_*), each of
-- %(agent)s: one agent, or NULL for all.
SELECT table_name, sum(live)::bigint AS live, sum(pruned)::bigint AS pruned,
       sum(pinned)::bigint AS pinned
FROM ethos_agent_counts
WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
GROUP BY table_name ORDER BY table_name;

-- name: stats_salience_by_age
SELECT table_name, age_bucket, avg(salience) AS avg_salience, count(*) AS count
FROM ethos_memories
WHERE NOT pruned AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
GROUP BY table_name, age_bucket ORDER BY table_name, min(created_at) DESC;

-- name: stats_at_risk
SELECT table_name, count(*) AS count FROM ethos_at_risk
WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
GROUP BY table_name ORDER BY table_name;

-- name: stats_most_retrieved
SELECT table_name, id, agent_id, content, retrieval_count, salience
FROM ethos_most_retrieved WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s LIMIT 5;

-- name: stats_recent_sweeps
-- One agent's view shows only its own sweeps, and no daemons (their ids name hosts).
SELECT id, trigger, status, started_at, duration_ms, scanned, updated, pruned,
       rows_per_second
FROM ethos_sweep_history WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s LIMIT 5;

-- name: stats_ltp
SELECT daemon_id, role, ltp_backlog, ltp_dropped FROM ethos_ltp
WHERE %(agent)s::text IS NULL;

-- name: stats_policies
SELECT table_name, policy,
       count(*) FILTER (WHERE NOT pruned) AS live,
       count(*) FILTER (WHERE pruned) AS pruned,
       avg(salience) FILTER (WHERE NOT pruned) AS avg_salience
FROM ethos_memories
WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
GROUP BY table_name, policy ORDER BY table_name, policy;
