-- 0046: the write path's triggers run fewer statements (see 0046_fewer_trigger_statements.py).

CREATE OR REPLACE FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    INSERT INTO agent_text_stats AS s (agent_id, docs, length)
    SELECT d.agent, sum(d.sign), sum(d.sign * ethos_text_length(d.tsv))
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET docs = s.docs + excluded.docs, length = s.length + excluded.length;

    -- A term's frequency is its number of positions, as recall's BM25 counts it; only
    -- the memories added (sign 1) widen the bounds (greatest and least skip NULL).
    INSERT INTO lexeme_stats AS s (agent_id, lexeme, docs, max_tf, min_length)
    SELECT d.agent, w.lexeme, sum(d.sign),
           max(coalesce(array_length(w.positions, 1), 1)) FILTER (WHERE d.sign > 0),
           min(ethos_text_length(d.tsv)) FILTER (WHERE d.sign > 0)
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
         unnest(d.tsv) AS w
    WHERE w.lexeme <> ethos_agent_lexeme(d.agent)
    GROUP BY d.agent, w.lexeme
    HAVING sum(d.sign) <> 0 OR bool_or(d.sign > 0)
    ORDER BY d.agent, w.lexeme
    ON CONFLICT (agent_id, lexeme) DO UPDATE
    SET docs = s.docs + excluded.docs,
        max_tf = greatest(s.max_tf, excluded.max_tf),
        min_length = least(s.min_length, excluded.min_length);

    IF 0 > ANY (signs) THEN
        DELETE FROM lexeme_stats AS s
        USING unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
              unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
        WHERE d.sign < 0 AND s.agent_id = d.agent AND s.lexeme = w.lexeme AND s.docs <= 0;

        DELETE FROM agent_text_stats AS s
        USING unnest(agents, signs) AS d (agent, sign)
        WHERE d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    INSERT INTO agent_vector_stats AS s (agent_id, vectors, total)
    SELECT d.agent, sign * count(*), sum(l2_normalize(d.embedding))
    FROM unnest(agents, embeddings) AS d (agent, embedding)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET vectors = s.vectors + excluded.vectors,
        total = CASE WHEN sign > 0 THEN s.total + excluded.total
                     ELSE s.total - excluded.total END;

    IF sign < 0 THEN  -- as in ethos_text_stats_add, an addition runs no delete
        DELETE FROM agent_vector_stats AS s
        WHERE s.agent_id = ANY (agents) AND s.vectors <= 0;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ethos_rows_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    k float8;  -- how much particularity raises an importance (vectors only)
    written record;
BEGIN
    -- 1. A vector of an episode or fact raises its source's automatic importance by how
    --    far it lies from its agent's other vectors (before they count it), once, while
    --    the source is as its insert left it. (Episodes and facts read no setting.)
    IF memory_table = 'memory_vectors' THEN
        k := (SELECT s.auto_importance_particularity FROM ethos_settings AS s);
    END IF;
    IF k > 0 THEN
        UPDATE episodic_traces AS m
        SET auto_importance = ethos_importance_raised(m.auto_importance, v.p, k),
            auto_particularity = v.p,
            policy = ethos_importance_tier(ethos_importance_raised(m.auto_importance, v.p, k))
        FROM (SELECT a.source_id, a.agent_id, ethos_particularity(a.agent_id, a.embedding) AS p
              FROM added AS a WHERE a.source_type = 'episodic_traces') AS v
        WHERE m.id = v.source_id AND m.agent_id = v.agent_id AND v.p IS NOT NULL
          AND m.auto_importance IS NOT NULL AND m.auto_particularity IS NULL
          AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity'
          AND m.policy = ethos_importance_tier(m.auto_importance);
        UPDATE semantic_facts AS m
        SET auto_importance = ethos_importance_raised(m.auto_importance, v.p, k),
            auto_particularity = v.p,
            policy = ethos_importance_tier(ethos_importance_raised(m.auto_importance, v.p, k))
        FROM (SELECT a.source_id, a.agent_id, ethos_particularity(a.agent_id, a.embedding) AS p
              FROM added AS a WHERE a.source_type = 'semantic_facts') AS v
        WHERE m.id = v.source_id AND m.agent_id = v.agent_id AND v.p IS NOT NULL
          AND m.auto_importance IS NOT NULL AND m.auto_particularity IS NULL
          AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity'
          AND m.policy = ethos_importance_tier(m.auto_importance);
    END IF;

    -- 2. Hints: the sweep looks at the live rows added at once (their physical places,
    --    which the statement's rows do not carry, read back by a probe by id for each:
    --    a join could hash the whole table where an ANALYZE during a bulk load left the
    --    planner sure it is empty), in one statement: a statement's start is much of
    --    what one row costs.
    IF memory_table = 'episodic_traces' THEN
        INSERT INTO episodic_traces_due (prune, at, slice, n, ids, places)
        SELECT h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM added AS a
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM episodic_traces AS t
                                  WHERE t.id = a.id LIMIT 1) AS at
              WHERE NOT a.pruned) AS r
        CROSS JOIN LATERAL ethos_new_hints(r.ids, r.places) AS h;
    ELSIF memory_table = 'semantic_facts' THEN
        INSERT INTO semantic_facts_due (prune, at, slice, n, ids, places)
        SELECT h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM added AS a
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM semantic_facts AS t
                                  WHERE t.id = a.id LIMIT 1) AS at
              WHERE NOT a.pruned) AS r
        CROSS JOIN LATERAL ethos_new_hints(r.ids, r.places) AS h;
    ELSE
        INSERT INTO memory_vectors_due (prune, at, slice, n, ids, places)
        SELECT h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM added AS a
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM memory_vectors AS t
                                  WHERE t.id = a.id LIMIT 1) AS at
              WHERE NOT a.pruned) AS r
        CROSS JOIN LATERAL ethos_new_hints(r.ids, r.places) AS h;
    END IF;

    -- 3. The statistics count the rows added, in one pass (and how many there were);
    --    vectors of episodes or facts alone count no words, and call for none.
    IF memory_table = 'memory_vectors' THEN
        SELECT CASE WHEN bool_or(source_id IS NULL) THEN
                   ethos_text_stats_add(array_agg(agent_id) FILTER (WHERE source_id IS NULL),
                                        array_agg(content_tsv) FILTER (WHERE source_id IS NULL),
                                        array_agg(1) FILTER (WHERE source_id IS NULL))
               END AS added,
               ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), 1) AS centred,
               count(*) AS n
        INTO written FROM added;
    ELSE
        SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
                   AS added,
               count(*) AS n
        INTO written FROM added;
    END IF;
    IF written.n >= 10000 THEN  -- a bulk load: the planner's picture of the statistics anew
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;
