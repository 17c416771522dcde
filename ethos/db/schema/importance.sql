-- Automatic importance: how informative a new memory's words are to its agent (rare
-- words count more; an answer to the agent's previous question counts answer-fold), how
-- far its vector lies from the agent's centre (particularity), and which policy an
-- importance picks (importance_tiers, else the settings' importance_otherwise).

CREATE FUNCTION ethos_asks(content text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT (strpos(content, '?') > 0 AND content ~ '\?([^[:alnum:]_=&%/+-]|$)')
        OR strpos(content, '？') > 0
$_$;

CREATE FUNCTION ethos_auto_half(half double precision, average double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT half * greatest(coalesce(average, 10), 5) / 10
$$;

CREATE FUNCTION ethos_auto_importance(words double precision, half double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 1 - power(2, -least(words / half, 1000)) $$;

-- What ethos knows of a text's words before their agent writes any: each word's share of
-- the information of a word never seen (how rare it is in English, word_prior: its
-- surprisal, 9 - zipf, over that of the list's rarest, 9 - 4), stop words included (a
-- short statement is more than its rarest word: "I am vegetarian" says more than "haha
-- nice"); a word not listed, or a number, counts 1. Words as the 'simple' configuration
-- splits them, whatever the text configuration.
CREATE FUNCTION ethos_prior_words(content text) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(least((9 - coalesce(p.zipf, 4)) / 5, 1)), 0)
    FROM unnest(tsvector_to_array(to_tsvector('simple', content))) AS u (word)
    LEFT JOIN word_prior AS p ON p.word = u.word
$$;

-- How much the prior weighs beside the agent's own statistics, by the words the agent
-- has written: all of it before any, half at 50, a tenth at 450.
CREATE FUNCTION ethos_prior_share(length bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 50 / (50 + greatest(coalesce(length, 0), 0)::float8) $$;

CREATE FUNCTION ethos_importance_raised(importance double precision, p double precision, k double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN importance >= 1 THEN 1
                ELSE 1 - exp(-least(-ln(1 - importance) * power(least(p, 1000), k), 700))
           END
$$;

CREATE FUNCTION ethos_importance_tier(importance double precision) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(
        (SELECT t.policy FROM importance_tiers AS t WHERE t.min_importance <= importance
         ORDER BY t.min_importance DESC LIMIT 1),
        (SELECT s.importance_otherwise FROM ethos_settings AS s))
$$;

-- (PL/pgSQL: as a SQL function, inlined into the caller with the agent a parameter,
-- Citus found no statistics on the agent's shard and counted every word new)
CREATE FUNCTION ethos_informative_words(agent text, tsv tsvector) RETURNS TABLE(words double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
BEGIN
    RETURN QUERY
    SELECT coalesce(sum(ethos_word_weight(u.lexeme, coalesce(a.docs, 0), coalesce(l.docs, 0))),
                    0)
    FROM unnest(array_remove(tsvector_to_array(tsv), ethos_agent_lexeme(agent))) AS u (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN LATERAL (SELECT s.docs FROM lexeme_stats AS s
                       WHERE s.agent_id = agent AND s.lexeme = u.lexeme
                         AND u.lexeme !~ '^[0-9]'
                       LIMIT 1) AS l ON true;
END
$$;

CREATE FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer) RETURNS void
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
        -- (the sign as the row proposed carries it: Citus loses a parameter here)
        total = CASE WHEN excluded.vectors > 0 THEN s.total + excluded.total
                     ELSE s.total - excluded.total END;

    IF sign < 0 THEN  -- as in ethos_text_stats_add, an addition runs no delete
        DELETE FROM agent_vector_stats AS s
        WHERE s.agent_id = ANY (agents) AND s.vectors <= 0;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer) FROM PUBLIC;

-- The owner's, with the owner's rights, as ethos_text_stats_rebuild (and for its
-- reason): one INSERT ... SELECT by agent, which Citus runs on each shard.
CREATE FUNCTION ethos_vector_stats_rebuild() RETURNS void
    LANGUAGE sql
    AS $$
    DELETE FROM agent_vector_stats;
    INSERT INTO agent_vector_stats (agent_id, vectors, total)
    SELECT agent_id, count(*), sum(l2_normalize(embedding))
    FROM (SELECT agent_id, embedding FROM memory_vectors
          UNION ALL SELECT agent_id, embedding FROM memory_embeddings) AS v
    GROUP BY agent_id;
$$;
REVOKE ALL ON FUNCTION ethos_vector_stats_rebuild() FROM PUBLIC;

CREATE FUNCTION ethos_particularity(agent text, embedding vector) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT greatest(embedding <=> s.total, 0)
           / greatest(1 - vector_norm(s.total) / s.vectors, 0.001)
    FROM agent_vector_stats AS s
    WHERE s.agent_id = agent AND s.vectors >= 10
$$;
