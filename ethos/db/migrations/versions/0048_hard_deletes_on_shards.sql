-- 0048: a hard delete runs on a Citus shard (see 0048_hard_deletes_on_shards.py).
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

    -- (each DELETE names the agents as a list too: on a Citus shard, a statement joined
    -- to its agents only cannot be routed, and is refused)
    IF 0 > ANY (signs) THEN
        DELETE FROM lexeme_stats AS s
        USING unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
              unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
        WHERE s.agent_id = ANY (agents)
          AND d.sign < 0 AND s.agent_id = d.agent AND s.lexeme = w.lexeme AND s.docs <= 0;

        DELETE FROM agent_text_stats AS s
        USING unnest(agents, signs) AS d (agent, sign)
        WHERE s.agent_id = ANY (agents)
          AND d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
    END IF;
END
$$;
