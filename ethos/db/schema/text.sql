-- Text recall's vocabulary: how content becomes a tsvector (stemmed by the text search
-- configuration the database keeps, plus a lexeme naming the agent), the key under which
-- a repeat is found (content_key), and per-agent statistics of documents and words
-- (agent_text_stats, lexeme_stats) that BM25-style weights read. The write path keeps
-- the statistics current; ethos_text_stats_rebuild() recounts them from the tables.

CREATE FUNCTION ethos_agent_lexeme(agent text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 'ethos_agent_' || md5(agent) $$;

CREATE FUNCTION ethos_text_config() RETURNS regconfig
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce((SELECT text_config FROM ethos_settings), 'english'::regconfig)
$$;

CREATE FUNCTION ethos_text_vector(config regconfig, agent text, content text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT to_tsvector(config, content) || array_to_tsvector(ARRAY[ethos_agent_lexeme(agent)])
$$;

CREATE FUNCTION ethos_text_query(config regconfig, query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT string_agg(quote_literal(word), ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector(config, query))) AS word
$$;

CREATE FUNCTION ethos_text_length(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT greatest(length(tsv) - 1, 0) $$;

-- Case folding: the one place the server's version picks the text. PostgreSQL 18
-- folds with casefold under its Unicode collation; before it, lower() (as the database's
-- ctype has it) and ß, which lower() keeps.
DO $do$
BEGIN
    IF current_setting('server_version_num')::int >= 180000 THEN
        CREATE FUNCTION ethos_fold(content text) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT casefold(normalize(content, NFKC) COLLATE pg_unicode_fast) $$;
    ELSE
        CREATE FUNCTION ethos_fold(content text) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT replace(lower(normalize(content, NFKC)), 'ß', 'ss') $$;
    END IF;
END
$do$;

-- The key under which a repeat is found: folded, invisible characters dropped, runs of
-- space one space.
CREATE FUNCTION ethos_content_key(content text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT md5(btrim(regexp_replace(regexp_replace(ethos_fold(content),
        '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]', '', 'g'), '[[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' '))::uuid
$$;

CREATE FUNCTION ethos_idf(docs bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ln(1 + (greatest(docs, df) - df + 0.5::float8) / (df + 0.5::float8))
$$;

CREATE FUNCTION ethos_word_weight(lexeme text, total bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN lexeme ~ '^[0-9]' THEN 1
                ELSE ethos_idf(total, df) / ethos_idf(total, 0) END
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

-- (PL/pgSQL, each call planned with its values: Citus routes the read to the agent's
-- shard, and plans no parameter of an SQL function)
CREATE FUNCTION ethos_text_idf(agent text, tsv tsvector) RETURNS double precision
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
#variable_conflict use_variable
DECLARE
    summed double precision;
BEGIN
    SELECT coalesce(sum(ethos_idf(coalesce(a.docs, 0), coalesce(l.docs, 0))), 0) INTO summed
    FROM unnest(tsvector_to_array(tsv)) AS w (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN lexeme_stats AS l ON l.agent_id = agent AND l.lexeme = w.lexeme
    WHERE w.lexeme <> ethos_agent_lexeme(agent);
    RETURN summed;
END
$$;

-- PL/pgSQL, for the IF: the deletes' statements, which only a removal (sign -1) needs,
-- cost an insert's trigger as much as an upsert's. On a Citus cluster it runs on a
-- shard, in a trigger or in a rebuild's statement there (one agent a call), and writes
-- the colocated shards of the agents it is given: Citus lets a trigger do so, and the
-- setting lets the rebuild's call (a distributed query inside a shard's is otherwise
-- refused).
CREATE FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET citus.allow_nested_distributed_execution TO 'on'
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
    -- to its agents only cannot be routed, and is refused.) The words removed are one
    -- array, looked up by key: joined to the rows, the generic plan took each word of
    -- every row removed again for each lexeme (0.15 s for 500 rows). A count at 0 is
    -- never kept, so a word need not be paired with its agent here.
    IF 0 > ANY (signs) THEN
        DELETE FROM lexeme_stats AS s
        WHERE s.agent_id = ANY (agents) AND s.docs <= 0
          AND s.lexeme = ANY (ARRAY(SELECT w.lexeme
                                    FROM unnest(tsvs, signs) AS d (tsv, sign),
                                         unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
                                    WHERE d.sign < 0));

        DELETE FROM agent_text_stats AS s
        USING unnest(agents, signs) AS d (agent, sign)
        WHERE s.agent_id = ANY (agents)
          AND d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) FROM PUBLIC;

CREATE FUNCTION ethos_text_stats_analyze() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    ANALYZE lexeme_stats, agent_text_stats;
END
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_analyze() FROM PUBLIC;

-- The statistics counted anew from the memories (after a TRUNCATE, which runs no
-- trigger), by the owner alone and with the owner's rights. Not SECURITY DEFINER: on a
-- Citus coordinator a definer's statements connect to the workers as ethos_definer,
-- who may not log in (nor use the shards its caller's TRUNCATE changed in the same
-- transaction). Each agent's memories are counted by a call of their own, which Citus
-- makes on the agent's shard, where ethos_text_stats_add writes as in a trigger.
CREATE FUNCTION ethos_text_stats_rebuild() RETURNS void
    LANGUAGE sql
    AS $$
    DELETE FROM lexeme_stats;
    DELETE FROM agent_text_stats;
    SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
    FROM (SELECT agent_id, content_tsv FROM episodic_traces
          UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
          UNION ALL SELECT agent_id, content_tsv FROM memory_vectors
         ) AS m
    GROUP BY agent_id;
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_rebuild() FROM PUBLIC;
