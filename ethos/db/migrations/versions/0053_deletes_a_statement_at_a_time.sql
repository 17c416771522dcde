-- 0053: a hard delete's bookkeeping once a statement (see
-- 0053_deletes_a_statement_at_a_time.py).
-- (A distributed table takes a trigger only with this set; elsewhere it is a no-op.)
SET LOCAL citus.enable_unsafe_triggers = on;

CREATE OR REPLACE FUNCTION ethos_write_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $_$
DECLARE
    memory_table text := TG_ARGV[0];
    vectors boolean := TG_ARGV[0] = 'memory_vectors';
    -- a vector of an episode or fact counts in neither the text statistics nor its
    -- agent's importance: its source does
    counted_old boolean := true;
    counted_new boolean := true;
BEGIN
    IF vectors THEN
        counted_old := TG_OP = 'UPDATE' AND OLD.source_id IS NULL;
        counted_new := NEW.source_id IS NULL;
    END IF;

    -- 1. The content and the agent: checked, then what is derived from them (the key a
    --    repeat is found by, the words text recall searches).
    IF TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
       OR NEW.agent_id IS DISTINCT FROM OLD.agent_id THEN
        IF NEW.content !~ '[^[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]' THEN
            RAISE EXCEPTION 'content must not be empty' USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.agent_id IS NOT NFC NORMALIZED OR NEW.agent_id ~ '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]' THEN
            RAISE EXCEPTION 'agent_id must be in Unicode NFC and hold no character that does not show'
                USING ERRCODE = 'check_violation';
        END IF;
        IF octet_length(NEW.content) > 262144 THEN
            RAISE EXCEPTION 'content is % bytes: at most 262,144 are stored',
                octet_length(NEW.content) USING ERRCODE = 'check_violation';
        END IF;
        NEW.content_key := ethos_content_key(NEW.content);
        NEW.content_tsv := ethos_text_vector(ethos_text_config(), NEW.agent_id, NEW.content);
    END IF;

    -- 2. A vector has a direction: with none in float32 (all zeros, or 1e-30s whose
    --    squares vanish) its cosine to itself is NaN, as to every query.
    IF vectors THEN
        IF TG_OP = 'INSERT' OR NEW.embedding IS DISTINCT FROM OLD.embedding THEN
            IF (NEW.embedding <=> NEW.embedding) = 'NaN' THEN
                RAISE EXCEPTION 'embedding has no direction: its float32 norm is 0 or infinite'
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
    END IF;

    -- 3. A vector of an episode or fact is a memory of that memory's own agent and lives
    --    with it: the never-decaying policy, pruned and recovered with its source
    --    (ethos_source_pruned); a move to a curve of its own is refused.
    IF vectors THEN
        IF NEW.source_id IS NOT NULL THEN
            IF TG_OP = 'INSERT' OR (NEW.source_type, NEW.source_id, NEW.agent_id)
                                   IS DISTINCT FROM (OLD.source_type, OLD.source_id, OLD.agent_id)
            THEN
                -- (a read of one table by its key, no subquery: where a statement on a
                -- node names the shard itself, as a merge's does, Citus plans the read
                -- with the trigger's values as parameters, which it can only so)
                IF NEW.source_type = 'episodic_traces' THEN
                    PERFORM FROM episodic_traces
                    WHERE agent_id = NEW.agent_id AND id = NEW.source_id;
                ELSE
                    PERFORM FROM semantic_facts
                    WHERE agent_id = NEW.agent_id AND id = NEW.source_id;
                END IF;
                IF NOT FOUND THEN
                    RAISE EXCEPTION 'the vector''s source % % is not a memory of agent %',
                        NEW.source_type, NEW.source_id, NEW.agent_id
                        USING ERRCODE = 'foreign_key_violation';
                END IF;
                NEW.policy := 'permanent';
            ELSIF NEW.policy <> 'permanent' THEN
                RAISE EXCEPTION 'the vector % follows its source (% %): move the source instead',
                    NEW.id, NEW.source_type, NEW.source_id USING ERRCODE = 'check_violation';
            END IF;
        END IF;
    END IF;

    -- 4. A new memory's decay state: its curve starts at its salience when it is
    --    written; its policy, where not given, from its importance or its agent.
    IF TG_OP = 'INSERT' THEN
        NEW.strength := coalesce(NEW.strength, NEW.salience);
        NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
        IF memory_table = 'semantic_facts' THEN
            NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
        END IF;
        IF NEW.policy IS NULL THEN
            SELECT p.policy, p.auto_importance, p.auto_answer
            INTO NEW.policy, NEW.auto_importance, NEW.auto_answer
            FROM ethos_new_policy(memory_table, NEW.agent_id, NEW.id, NEW.importance,
                                  NEW.content_tsv, counted_new) AS p;
        END IF;
        RETURN NEW;
    END IF;

    -- 5. A text or metadata replaced: the one before is kept (memory_revisions).
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.metadata IS DISTINCT FROM OLD.metadata
    THEN
        INSERT INTO memory_revisions (table_name, memory_id, agent_id, content, metadata,
                                      revised_by)
        VALUES (memory_table, OLD.id, OLD.agent_id, OLD.content, OLD.metadata, session_user);
    END IF;

    -- 6. The statistics follow the words (and, for vectors, the direction) that changed.
    IF NEW.content_tsv <> OLD.content_tsv OR counted_old <> counted_new THEN
        PERFORM ethos_text_stats_add(
            array_remove(ARRAY[CASE WHEN counted_old THEN OLD.agent_id END,
                               CASE WHEN counted_new THEN NEW.agent_id END], NULL),
            array_remove(ARRAY[CASE WHEN counted_old THEN OLD.content_tsv END,
                               CASE WHEN counted_new THEN NEW.content_tsv END], NULL),
            array_remove(ARRAY[CASE WHEN counted_old THEN -1 END,
                               CASE WHEN counted_new THEN 1 END], NULL));
    END IF;
    IF vectors THEN
        IF NEW.embedding <> OLD.embedding OR NEW.agent_id <> OLD.agent_id THEN
            PERFORM ethos_vector_stats_add(ARRAY[OLD.agent_id], ARRAY[OLD.embedding], -1);
            PERFORM ethos_vector_stats_add(ARRAY[NEW.agent_id], ARRAY[NEW.embedding], 1);
        END IF;
    END IF;
    RETURN NEW;
END
$_$;

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

-- Each statement's rows deleted (purge, erase, a DELETE by hand), at once: their
-- revisions and their share of the statistics go with them. As in ethos_rows_added, the
-- rows are read into arrays first and every statement names their agents. (A row at a
-- time, each statement planned again by Citus on a shard, a DELETE of 500 rows took
-- 2.3 s there; on one server an erase took 0.9 ms a row.)
CREATE FUNCTION ethos_rows_removed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    r record;  -- the rows deleted: their agents, each once; their ids and agents
BEGIN
    SELECT array_agg(DISTINCT d.agent_id) AS agents, array_agg(d.id) AS ids,
           array_agg(d.agent_id) AS owners
    INTO r FROM removed AS d;
    IF r.agents IS NULL THEN  -- a DELETE of no row
        RETURN NULL;
    END IF;

    DELETE FROM memory_revisions AS v
    USING unnest(r.ids, r.owners) AS d (id, agent)
    WHERE v.agent_id = ANY (r.agents) AND v.table_name = memory_table
      AND v.agent_id = d.agent AND v.memory_id = d.id;

    -- (a vector of an episode or fact counts no words: its source does)
    IF memory_table = 'memory_vectors' THEN
        PERFORM ethos_text_stats_add(array_agg(d.agent_id), array_agg(d.content_tsv),
                                     array_agg(-1))
        FROM removed AS d WHERE d.source_id IS NULL HAVING count(*) > 0;
        PERFORM ethos_vector_stats_add(array_agg(d.agent_id), array_agg(d.embedding), -1)
        FROM removed AS d;
    ELSE
        PERFORM ethos_text_stats_add(array_agg(d.agent_id), array_agg(d.content_tsv),
                                     array_agg(-1))
        FROM removed AS d;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_rows_removed() FROM PUBLIC;

DROP TRIGGER episodic_traces_write ON episodic_traces;
CREATE TRIGGER episodic_traces_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON episodic_traces FOR EACH ROW EXECUTE FUNCTION ethos_write_row('episodic_traces');
CREATE TRIGGER episodic_traces_removed
    AFTER DELETE ON episodic_traces REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('episodic_traces');

DROP TRIGGER semantic_facts_write ON semantic_facts;
CREATE TRIGGER semantic_facts_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON semantic_facts FOR EACH ROW EXECUTE FUNCTION ethos_write_row('semantic_facts');
CREATE TRIGGER semantic_facts_removed
    AFTER DELETE ON semantic_facts REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('semantic_facts');

DROP TRIGGER memory_vectors_write ON memory_vectors;
CREATE TRIGGER memory_vectors_write
    BEFORE INSERT
        OR UPDATE OF content, agent_id, metadata, content_tsv, embedding, source_type,
                     source_id, policy
    ON memory_vectors FOR EACH ROW EXECUTE FUNCTION ethos_write_row('memory_vectors');
CREATE TRIGGER memory_vectors_removed
    AFTER DELETE ON memory_vectors REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('memory_vectors');
