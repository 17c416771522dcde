-- The write path: what happens when a row of a memory table is written, by ethos or by
-- plain SQL (an INSERT, a COPY, an UPDATE by hand), in one place per event:
--
--   <table>_write    BEFORE INSERT or UPDATE (of what it derives from), each row:
--                    ethos_write_row() takes its steps in the order written there.
--   <table>_added    AFTER INSERT, once a statement, over the rows it added:
--                    ethos_rows_added(): what is done for many rows at once.
--   <table>_removed  AFTER DELETE, once a statement, over the rows it deleted (purge,
--                    erase, a DELETE by hand): ethos_rows_removed().
--   <table>_pruned   (episodes and facts) AFTER UPDATE, once a statement, over the rows
--                    whose pruned changed: ethos_source_pruned(): a memory's vectors
--                    are pruned and recovered with it.
--
--   <table>_due_made BEFORE INSERT on a table's hints, each row: ethos_hint_made().
--
-- A sweep's or LTP's UPDATE writes none of the columns the first trigger names: the
-- frequent writes pay for no row trigger, and for one call of <table>_pruned a
-- statement (a batch), which finds no row whose pruned changed. Each trigger passes its
-- table's name as the argument, so a function never reads TG_TABLE_NAME (on a Citus
-- shard that is the shard's name).
--
-- TRUNCATE runs no trigger: ethos never truncates a memory table. After a TRUNCATE by
-- hand, `SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()` counts the
-- statistics anew.

-- The memory `id` of `memory_table` before `agent`'s newest one asks a question: the
-- memory written next answers it (automatic importance counts its words answer-fold).
CREATE FUNCTION ethos_previous_asks(memory_table text, agent text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_sort TO 'off'
    SET enable_incremental_sort TO 'off'
    AS $$
#variable_conflict use_variable
BEGIN
    -- the agent's live memory just before this one, backwards along the key (agent_id,
    -- id): the settings keep each statement on it, planned once, with no sort. The agent
    -- also as `= ANY (ARRAY[agent])`, which Citus routes to the agent's shard and the
    -- planner does not take for an equality (with one, the (id) index gives this order,
    -- and its generic plan walks it through every later row of other agents)
    IF memory_table = 'episodic_traces' THEN
        RETURN (SELECT ethos_asks(p.content) FROM episodic_traces AS p
                WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
    ELSIF memory_table = 'semantic_facts' THEN
        RETURN (SELECT ethos_asks(p.content) FROM semantic_facts AS p
                WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
    END IF;
    RETURN (SELECT ethos_asks(p.content) FROM memory_vectors AS p
            WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
            ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
END
$$;

-- The policy a new memory gets, and its automatic importance (NULL where none was
-- measured): the importance given, else one measured from its words, picks a tier
-- (ethos_importance_tier); without either, the agent's policy, else the default.
-- `measured`: false for a vector of an episode or fact (its source was measured).
-- The words are the agent's (ethos_informative_words) blended with the language's
-- (ethos_prior_words) by ethos_prior_share of the words it has written; an emotional
-- `tone` raises the importance as a second reason to keep it (1 - (1 - i)(1 - tone));
-- a memory the caller `stated` is measured only to live longer: never shorter than the
-- default policy (decision 0023).
CREATE FUNCTION ethos_new_policy(memory_table text, agent text, id uuid, importance float8,
                                 tsv tsvector, measured boolean, content text,
                                 stated boolean, tone float8,
                                 OUT policy text, OUT auto_importance float8,
                                 OUT auto_answer float8)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'  -- planned once a session, whatever the words
    AS $$
#variable_conflict use_variable
DECLARE
    s ethos_settings;
    agent_policy text := (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = agent);
    stats agent_text_stats;  -- the agent's words so far; NULL: none counted yet
    average float8;  -- the agent's memories' length on average, blended as its words
    share float8;  -- the prior's part of the words
    words float8;
    floor float8;  -- the default policy's tier: a stated memory's least importance
BEGIN
    SELECT * INTO s FROM ethos_settings;
    IF importance IS NULL AND agent_policy IS NULL AND measured AND s.auto_importance THEN
        SELECT * INTO stats FROM agent_text_stats AS t WHERE t.agent_id = agent;
        share := ethos_prior_share(stats.length);
        -- (the length too: a young agent's average is the prior's 10 words as much)
        average := share * 10 + (1 - share) * coalesce(stats.length::float8 / nullif(stats.docs, 0), 10);
        words := 0;
        IF share < 1 THEN
            words := (1 - share) * (SELECT w.words FROM ethos_informative_words(agent, tsv) AS w);
        END IF;
        IF share >= 0.01 THEN  -- (an agent of 5,000 words or more reads no prior)
            words := words + share * ethos_prior_words(content);
        END IF;
        IF s.auto_importance_answer > 1 AND ethos_previous_asks(memory_table, agent, id) THEN
            words := words * s.auto_importance_answer;
            auto_answer := s.auto_importance_answer;
        END IF;
        importance := ethos_auto_importance(words,
                                            ethos_auto_half(s.auto_importance_half, average));
        importance := 1 - (1 - importance) * (1 - least(greatest(coalesce(tone, 0), 0), 1));
        IF stated THEN
            floor := (SELECT t.min_importance FROM importance_tiers AS t
                      WHERE t.policy = s.default_policy);
            importance := greatest(importance, floor);
        END IF;
        auto_importance := importance;
    END IF;
    policy := CASE WHEN importance IS NOT NULL THEN ethos_importance_tier(importance)
                   ELSE coalesce(agent_policy, s.default_policy) END;
    -- (a default policy no tier names: a stated memory that reaches no tier takes it)
    IF stated AND auto_importance IS NOT NULL AND floor IS NULL
       AND policy = s.importance_otherwise THEN
        policy := s.default_policy;
    END IF;
END
$$;

-- Each row written: the steps in this order. (A step of vectors alone sits inside
-- `IF vectors`: PL/pgSQL would look for a vector's columns in an episode's row.)
CREATE FUNCTION ethos_write_row() RETURNS trigger
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
    tone float8;  -- an episode's emotional tone
    stated boolean := false;  -- a fact the caller states
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
                -- An agent role's vector of another agent: refused as the row policy
                -- (which runs after this trigger) refuses it, before the source is read:
                -- whether that agent holds the source is not for this one to know.
                IF NOT NEW.agent_id = ANY (ethos_role_agents(
                        coalesce(nullif(current_setting('role'), 'none'), session_user)))
                THEN
                    RAISE EXCEPTION
                        'new row violates row-level security policy for table "memory_vectors"'
                        USING ERRCODE = 'insufficient_privilege';
                END IF;
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
            IF memory_table = 'episodic_traces' THEN
                tone := NEW.emotional_tone;
            ELSIF memory_table = 'semantic_facts' THEN
                stated := NEW.stated;
            END IF;
            SELECT p.policy, p.auto_importance, p.auto_answer
            INTO NEW.policy, NEW.auto_importance, NEW.auto_answer
            FROM ethos_new_policy(memory_table, NEW.agent_id, NEW.id, NEW.importance,
                                  NEW.content_tsv, counted_new, NEW.content, stated,
                                  tone) AS p;
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
REVOKE ALL ON FUNCTION ethos_write_row() FROM PUBLIC;

-- The hints of rows added: which rows a sweep looks at first (`-infinity`: at once), as
-- the sweep's hints are kept, in groups of at most 500 of one slice of the table.
CREATE FUNCTION ethos_new_hints(ids uuid[], places tid[])
    RETURNS TABLE (prune boolean, slice smallint, n bigint, ids uuid[], places tid[])
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT prune, slice, count(*), array_agg(id), array_agg(place)
    FROM (SELECT g.*,
                 (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500 AS part
          FROM (SELECT kind.prune, r.id, r.place, ethos_slice(r.place) AS slice
                FROM unnest(ids, places) AS r (id, place)
                CROSS JOIN (VALUES (false), (true)) AS kind (prune)) AS g) AS g
    GROUP BY prune, slice, part
$$;

-- Each statement's rows added, at once. They are read into arrays first, and every
-- statement after names their agents (agent_id = ANY (r.agents)): on a Citus shard, where
-- this trigger fires for the shard's rows, a statement that reads the rows added beside
-- a distributed table cannot be planned, and one that names the agents runs on the
-- shard's colocated tables, as every agent of its rows hashes there (decision 0019).
CREATE FUNCTION ethos_rows_added() RETURNS trigger
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
REVOKE ALL ON FUNCTION ethos_rows_added() FROM PUBLIC;

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

-- Memories pruned or recovered by a statement: their vectors follow them, in one UPDATE.
-- A trigger with transition tables takes no column list, so this one runs after every
-- UPDATE of the table (a sweep's batch, an LTP flush) and returns at once unless some
-- row's pruned changed. Row by row (an UPDATE of the vectors a source), pruning 500
-- facts took 106 ms on one server against 27, and 238 ms against 21 on a Citus cluster.
-- As in ethos_rows_added, the rows are read into arrays first and the UPDATE names
-- their agents.
CREATE FUNCTION ethos_source_pruned() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    r record;  -- the rows whose pruned changed: ids, agents (each agent once), new state
BEGIN
    -- (most UPDATEs, a put's or LTP's, touch live memories only: 0.035 ms less a statement)
    IF NOT EXISTS (SELECT FROM became WHERE pruned UNION ALL SELECT FROM was WHERE pruned) THEN
        RETURN NULL;
    END IF;
    -- (grouped, not joined: the plan is kept across calls, and a nested loop chosen for
    -- a batch of 500 rows would compare every pair of an UPDATE of 100,000)
    SELECT array_agg(c.id) AS ids, array_agg(c.agent_id) AS owners,
           array_agg(DISTINCT c.agent_id) AS agents, array_agg(c.pruned) AS pruned,
           array_agg(c.pruned_at) AS pruned_at, array_agg(c.prune_reason) AS reasons
    INTO r
    FROM (SELECT u.agent_id, u.id, bool_or(u.pruned) FILTER (WHERE u.new) AS pruned,
                 max(u.pruned_at) FILTER (WHERE u.new) AS pruned_at,
                 max(u.prune_reason) FILTER (WHERE u.new) AS prune_reason
          FROM (SELECT agent_id, id, pruned, pruned_at, prune_reason, true AS new
                FROM became
                UNION ALL
                SELECT agent_id, id, pruned, NULL, NULL, false FROM was) AS u
          GROUP BY u.agent_id, u.id
          HAVING bool_or(u.pruned) <> bool_and(u.pruned)) AS c;
    IF r.ids IS NULL THEN
        RETURN NULL;
    END IF;

    UPDATE memory_vectors AS v
    SET pruned = s.pruned, pruned_at = s.pruned_at, prune_reason = s.reason
    FROM unnest(r.ids, r.owners, r.pruned, r.pruned_at, r.reasons)
         AS s (id, agent, pruned, pruned_at, reason)
    WHERE v.agent_id = ANY (r.agents) AND v.source_type = TG_ARGV[0]
      AND v.agent_id = s.agent AND v.source_id = s.id AND v.pruned <> s.pruned;
    RETURN NULL;
END
$$;

CREATE TRIGGER episodic_traces_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON episodic_traces FOR EACH ROW EXECUTE FUNCTION ethos_write_row('episodic_traces');
CREATE TRIGGER episodic_traces_added
    AFTER INSERT ON episodic_traces REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('episodic_traces');
CREATE TRIGGER episodic_traces_removed
    AFTER DELETE ON episodic_traces REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('episodic_traces');
CREATE TRIGGER episodic_traces_pruned
    AFTER UPDATE ON episodic_traces REFERENCING OLD TABLE AS was NEW TABLE AS became
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_source_pruned('episodic_traces');

CREATE TRIGGER semantic_facts_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON semantic_facts FOR EACH ROW EXECUTE FUNCTION ethos_write_row('semantic_facts');
CREATE TRIGGER semantic_facts_added
    AFTER INSERT ON semantic_facts REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('semantic_facts');
CREATE TRIGGER semantic_facts_removed
    AFTER DELETE ON semantic_facts REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('semantic_facts');
CREATE TRIGGER semantic_facts_pruned
    AFTER UPDATE ON semantic_facts REFERENCING OLD TABLE AS was NEW TABLE AS became
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_source_pruned('semantic_facts');

CREATE TRIGGER memory_vectors_write
    BEFORE INSERT
        OR UPDATE OF content, agent_id, metadata, content_tsv, embedding, source_type,
                     source_id, policy
    ON memory_vectors FOR EACH ROW EXECUTE FUNCTION ethos_write_row('memory_vectors');
CREATE TRIGGER memory_vectors_added
    AFTER INSERT ON memory_vectors REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('memory_vectors');
CREATE TRIGGER memory_vectors_removed
    AFTER DELETE ON memory_vectors REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('memory_vectors');

-- A hint is made by the transaction that writes it, on the node that keeps it: a full
-- sweep drops the hints made before it began by that node's transaction ids. (Not a
-- column default: Citus computes an INSERT's values on the coordinator when it sends the
-- INSERT through it, as an LTP flush's hints are, in the coordinator's ids.)
CREATE FUNCTION ethos_hint_made() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.made := pg_current_xact_id();
    RETURN NEW;
END
$$;

CREATE TRIGGER episodic_traces_due_made BEFORE INSERT ON episodic_traces_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER semantic_facts_due_made BEFORE INSERT ON semantic_facts_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER memory_vectors_due_made BEFORE INSERT ON memory_vectors_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();

-- Audit: a finished sweep or lifecycle run is final.
CREATE FUNCTION ethos_finished_runs_are_final() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status <> 'running' THEN
        RAISE EXCEPTION '% row % is %: a finished run is not changed', TG_TABLE_NAME, OLD.id,
            OLD.status USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.id, NEW.trigger, NEW.started_at) IS DISTINCT FROM (OLD.id, OLD.trigger, OLD.started_at)
    THEN
        RAISE EXCEPTION '% row %: a run''s id, trigger and start are not changed',
            TG_TABLE_NAME, OLD.id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER lifecycle_runs_finished_is_final BEFORE UPDATE ON lifecycle_runs
    FOR EACH ROW EXECUTE FUNCTION ethos_finished_runs_are_final();
CREATE TRIGGER sweep_runs_finished_is_final BEFORE UPDATE ON sweep_runs
    FOR EACH ROW EXECUTE FUNCTION ethos_finished_runs_are_final();
