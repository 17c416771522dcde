-- 0058: a vector of an episode or fact is born never due, with no words (see
-- 0058_sourced_vectors_never_due.py). Run again on a database at 0058, it changes nothing.

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
    rewritten boolean;  -- a new row, or its content or agent changed
BEGIN
    IF vectors THEN
        counted_old := TG_OP = 'UPDATE' AND OLD.source_id IS NULL;
        counted_new := NEW.source_id IS NULL;
    END IF;
    rewritten := TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
                 OR NEW.agent_id IS DISTINCT FROM OLD.agent_id;

    -- 1. The content and the agent: checked, then what is derived from them (the key a
    --    repeat is found by, the words text recall searches).
    IF rewritten THEN
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
    END IF;
    --    The words: none for a vector of an episode or fact, which text recall never
    --    reads (it finds the source in its own table).
    IF rewritten OR counted_new <> counted_old THEN
        NEW.content_tsv := CASE WHEN counted_new
                                THEN ethos_text_vector(ethos_text_config(), NEW.agent_id,
                                                       NEW.content)
                                ELSE ''::tsvector END;
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
    --    with it: the never-decaying policy, never due to a sweep (no hint is made for
    --    it), pruned and recovered with its source (ethos_source_pruned); a move to a
    --    curve of its own is refused.
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
                IF TG_OP = 'INSERT' THEN
                    NEW.due_at := NULL;
                    NEW.prune_at := NULL;
                END IF;
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

CREATE OR REPLACE FUNCTION ethos_rows_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    r record;  -- the rows added: their agents, each once; ids and agents of the live
               -- ones a sweep may find due (not those never due, as a vector of an
               -- episode or fact)
    k float8;  -- how much particularity raises an importance (vectors only)
    v record;  -- vectors of episodes or facts: their sources, and how particular each is
    written record;
BEGIN
    SELECT array_agg(DISTINCT a.agent_id) AS agents,
           array_agg(a.id) FILTER (WHERE a.hinted) AS ids,
           array_agg(a.agent_id) FILTER (WHERE a.hinted) AS owners
    INTO r
    FROM (SELECT *, NOT pruned AND coalesce(due_at, prune_at) IS NOT NULL AS hinted
          FROM added) AS a;
    IF r.agents IS NULL THEN  -- an upsert that only updated: nothing to hint or count, and
        RETURN NULL;          -- a statement about no agent Citus cannot route
    END IF;

    -- 1. A vector of an episode or fact raises its source's automatic importance by how
    --    far it lies from its agent's other vectors (before they count it), once, while
    --    the source is as its insert left it. (Episodes and facts read no setting.) The
    --    new policy comes with the values (Citus refuses a STABLE function of the row
    --    written inside an UPDATE); the conditions hold on the row written.
    IF memory_table = 'memory_vectors' THEN
        k := (SELECT s.auto_importance_particularity FROM ethos_settings AS s);
    END IF;
    IF k > 0 THEN
        SELECT array_agg(a.source_type) AS types, array_agg(a.source_id) AS ids,
               array_agg(a.agent_id) AS agents,
               array_agg(ethos_particularity(a.agent_id, a.embedding)) AS ps
        INTO v FROM added AS a WHERE a.source_id IS NOT NULL;
        IF 'episodic_traces' = ANY (v.types) THEN
            UPDATE episodic_traces AS m
            SET auto_importance = n.importance, auto_particularity = n.p, policy = n.policy
            FROM (SELECT s.agent_id, s.id, s.auto_importance AS before, s.policy AS was, u.p,
                         i.importance,
                         ethos_importance_tier(i.importance) AS policy
                  FROM unnest(v.types, v.ids, v.agents, v.ps) AS u (type, id, agent, p)
                  JOIN episodic_traces AS s ON s.agent_id = u.agent AND s.id = u.id
                  CROSS JOIN LATERAL (SELECT ethos_importance_raised(s.auto_importance, u.p, k)
                                             AS importance) AS i
                  WHERE u.type = 'episodic_traces' AND u.p IS NOT NULL
                    AND s.agent_id = ANY (v.agents)
                    AND s.policy = ethos_importance_tier(s.auto_importance)) AS n
            WHERE m.agent_id = n.agent_id AND m.id = n.id AND m.agent_id = ANY (v.agents)
              AND m.auto_importance = n.before AND m.policy = n.was AND m.auto_particularity IS NULL
              AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity';
        END IF;
        IF 'semantic_facts' = ANY (v.types) THEN
            UPDATE semantic_facts AS m
            SET auto_importance = n.importance, auto_particularity = n.p, policy = n.policy
            FROM (SELECT s.agent_id, s.id, s.auto_importance AS before, s.policy AS was, u.p,
                         i.importance,
                         ethos_importance_tier(i.importance) AS policy
                  FROM unnest(v.types, v.ids, v.agents, v.ps) AS u (type, id, agent, p)
                  JOIN semantic_facts AS s ON s.agent_id = u.agent AND s.id = u.id
                  CROSS JOIN LATERAL (SELECT ethos_importance_raised(s.auto_importance, u.p, k)
                                             AS importance) AS i
                  WHERE u.type = 'semantic_facts' AND u.p IS NOT NULL
                    AND s.agent_id = ANY (v.agents)
                    AND s.policy = ethos_importance_tier(s.auto_importance)) AS n
            WHERE m.agent_id = n.agent_id AND m.id = n.id AND m.agent_id = ANY (v.agents)
              AND m.auto_importance = n.before AND m.policy = n.was AND m.auto_particularity IS NULL
              AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity';
        END IF;
    END IF;

    -- 2. Hints: the sweep looks at once at the live rows added that may fall due (their
    --    physical places, which the statement's rows do not carry, read back by a probe
    --    by key for each: a join could hash the whole table where an ANALYZE during a
    --    bulk load left the planner sure it is empty), in one statement: a statement's
    --    start is much of what one row costs. A hint names an agent of its rows.
    IF r.ids IS NULL THEN
        NULL;  -- none to hint
    ELSIF memory_table = 'episodic_traces' THEN
        INSERT INTO episodic_traces_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM episodic_traces AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
    ELSIF memory_table = 'semantic_facts' THEN
        INSERT INTO semantic_facts_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM semantic_facts AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
    ELSE
        INSERT INTO memory_vectors_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM memory_vectors AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
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
    -- A bulk load: the planner's picture of the statistics anew. Not on a Citus shard
    -- (named otherwise than its table): an ANALYZE there goes to every shard, which Citus
    -- refuses inside a shard's statement; the node's autovacuum analyzes its shards.
    IF written.n >= 10000 AND TG_TABLE_NAME = memory_table THEN
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;
