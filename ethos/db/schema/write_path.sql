-- The write path: what happens when a row of a memory table is written, by ethos or by
-- plain SQL (an INSERT, a COPY, an UPDATE by hand), in one place per event:
--
--   <table>_write    BEFORE INSERT or UPDATE (of what it derives from), each row:
--                    ethos_write_row() takes its steps in the order written there.
--   <table>_added    AFTER INSERT, once a statement, over the rows it added:
--                    ethos_rows_added(): what is done for many rows at once.
--   <table>_removed  AFTER DELETE, once a statement, over the rows it deleted (purge,
--                    erase, a DELETE by hand): ethos_rows_removed().
--
--   <table>_due_made BEFORE INSERT on a table's hints, each row: ethos_hint_made().
--
--   memory_embeddings_added/_removed: ethos_embeddings_written(), what an embedding
--                    written or deleted derives (the agent's centre, its memory's
--                    importance). An embedding follows its memory by no trigger: a
--                    search reads whether the memory is live.
--
-- A sweep's or LTP's UPDATE writes none of the columns the first trigger names: the
-- frequent writes pay for no trigger. Each trigger passes its
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
-- The words are the agent's (ethos_informative_words) blended with the language's
-- (ethos_prior_words) by ethos_prior_share of the words it has written; an emotional
-- `tone` raises the importance as a second reason to keep it (1 - (1 - i)(1 - tone));
-- a memory the caller `stated` is measured only to live longer: never shorter than the
-- default policy (decision 0023).
CREATE FUNCTION ethos_new_policy(memory_table text, agent text, id uuid, importance float8,
                                 tsv tsvector, content text,
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
    IF importance IS NULL AND agent_policy IS NULL AND s.auto_importance THEN
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
    rewritten boolean;  -- a new row, or its content or agent changed
    tone float8;  -- an episode's emotional tone
    stated boolean := false;  -- a fact the caller states
BEGIN
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

    -- 3. A new memory's decay state: its curve starts at its salience when it is
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
                                  NEW.content_tsv, NEW.content, stated,
                                  tone) AS p;
        END IF;
        RETURN NEW;
    END IF;

    -- 4. A text or metadata replaced: the one before is kept (memory_revisions).
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.metadata IS DISTINCT FROM OLD.metadata
    THEN
        INSERT INTO memory_revisions (table_name, memory_id, agent_id, content, metadata,
                                      revised_by)
        VALUES (memory_table, OLD.id, OLD.agent_id, OLD.content, OLD.metadata, session_user);
    END IF;

    -- 5. The statistics follow the words (and, for vectors, the direction) that changed.
    IF NEW.content_tsv <> OLD.content_tsv THEN
        PERFORM ethos_text_stats_add(ARRAY[OLD.agent_id, NEW.agent_id],
                                     ARRAY[OLD.content_tsv, NEW.content_tsv], ARRAY[-1, 1]);
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
               -- ones a sweep may find due
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

    -- 1. Hints: the sweep looks at once at the live rows added that may fall due (their
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

    -- 2. The statistics count the rows added, in one pass (and how many there were).
    IF memory_table = 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
                   AS added,
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
-- revisions, embeddings and their share of the statistics go with them. As in ethos_rows_added, the
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

    PERFORM ethos_text_stats_add(array_agg(d.agent_id), array_agg(d.content_tsv),
                                 array_agg(-1))
    FROM removed AS d;
    IF memory_table = 'memory_vectors' THEN
        PERFORM ethos_vector_stats_add(array_agg(d.agent_id), array_agg(d.embedding), -1)
        FROM removed AS d;
    ELSE  -- (no key to cascade on: the embeddings name their source's table in a column)
        DELETE FROM memory_embeddings AS e
        USING unnest(r.ids, r.owners) AS d (id, agent)
        WHERE e.agent_id = ANY (r.agents) AND e.agent_id = d.agent AND e.source_id = d.id;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_rows_removed() FROM PUBLIC;

-- The embeddings of memories in `memory_table`, a row each of owners (their agents),
-- ids, fields and embeddings (what ethos writes them with), where the memory has none
-- under that field; first, all those of the memories `cleared` (of `cleared_owners`)
-- give way (a new text's take their place). One call a statement, whatever agents it
-- names: a batch of puts is one INSERT of embeddings, one firing of their trigger. An id
-- that is not its owner's memory there gets none (an agent role sees its own agents'
-- alone). Returns how many were written.
CREATE FUNCTION ethos_embed(memory_table text, owners text[], ids uuid[], fields text[],
                            embeddings vector[], cleared_owners text[], cleared uuid[])
    RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
DECLARE
    -- the memories among (owners, ids) in memory_table: their agents and ids, read first
    -- (on a Citus cluster a statement beside the INSERT's, which then reads no table)
    found_agents text[];
    found_ids uuid[];
    written integer;
BEGIN
    IF memory_table = 'episodic_traces' THEN
        SELECT array_agg(m.agent_id), array_agg(m.id) INTO found_agents, found_ids
        FROM episodic_traces AS m WHERE m.agent_id = ANY (owners) AND m.id = ANY (ids);
    ELSIF memory_table = 'semantic_facts' THEN
        SELECT array_agg(m.agent_id), array_agg(m.id) INTO found_agents, found_ids
        FROM semantic_facts AS m WHERE m.agent_id = ANY (owners) AND m.id = ANY (ids);
    ELSE
        RAISE EXCEPTION 'no embeddings of %: only of episodic_traces or semantic_facts',
            memory_table USING ERRCODE = 'check_violation';
    END IF;
    IF cardinality(cleared) > 0 THEN
        DELETE FROM memory_embeddings AS e
        WHERE e.agent_id = ANY (cleared_owners) AND e.source_id = ANY (cleared)
          AND (e.agent_id, e.source_id) IN (SELECT * FROM unnest(cleared_owners, cleared));
    END IF;
    INSERT INTO memory_embeddings (agent_id, source_id, field, source_table, embedding)
    SELECT u.agent, u.id, u.field, memory_table, u.embedding
    FROM unnest(owners, ids, fields, embeddings) AS u (agent, id, field, embedding)
    WHERE (u.agent, u.id) IN (SELECT * FROM unnest(found_agents, found_ids))
    ON CONFLICT (agent_id, source_id, field) DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

-- Each statement's embeddings written or deleted, at once (on a Citus shard, where the
-- agent's other tables are: what the write derives is written there, as for memories).
-- The agent's centre counts them. An insert first raises each memory's automatic
-- importance by how far its first embedding lies from the agent's other vectors (before
-- they count it), once, while the memory is as its insert left it. The new policy comes
-- with the values (Citus refuses a STABLE function of the row written inside an
-- UPDATE); the conditions hold on the row written.
CREATE FUNCTION ethos_embeddings_written() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    k float8;  -- how much particularity raises an importance
    r record;  -- the rows: their agents (each once, and each row's), directions
    v record;  -- each memory's first embedding: its table, id, agent, particularity
BEGIN
    SELECT array_agg(DISTINCT e.agent_id) AS agents, array_agg(e.agent_id) AS owners,
           array_agg(e.embedding) AS embeddings
    INTO r FROM rows AS e;
    IF r.agents IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM ethos_vector_stats_add(r.owners, r.embeddings, -1);
        RETURN NULL;
    END IF;
    k := (SELECT s.auto_importance_particularity FROM ethos_settings AS s);
    IF k > 0 THEN
        SELECT array_agg(f.source_table) AS types, array_agg(f.source_id) AS ids,
               array_agg(f.agent_id) AS agents,
               array_agg(ethos_particularity(f.agent_id, f.embedding)) AS ps
        INTO v
        FROM (SELECT DISTINCT ON (e.agent_id, e.source_id) e.*
              FROM rows AS e ORDER BY e.agent_id, e.source_id, e.field) AS f;
    END IF;
    PERFORM ethos_vector_stats_add(r.owners, r.embeddings, 1);
    IF NOT k > 0 THEN
        RETURN NULL;
    END IF;
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
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_embeddings_written() FROM PUBLIC;

CREATE TRIGGER memory_embeddings_added
    AFTER INSERT ON memory_embeddings REFERENCING NEW TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();
CREATE TRIGGER memory_embeddings_removed
    AFTER DELETE ON memory_embeddings REFERENCING OLD TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();

CREATE TRIGGER episodic_traces_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON episodic_traces FOR EACH ROW EXECUTE FUNCTION ethos_write_row('episodic_traces');
CREATE TRIGGER episodic_traces_added
    AFTER INSERT ON episodic_traces REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('episodic_traces');
CREATE TRIGGER episodic_traces_removed
    AFTER DELETE ON episodic_traces REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('episodic_traces');

CREATE TRIGGER semantic_facts_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON semantic_facts FOR EACH ROW EXECUTE FUNCTION ethos_write_row('semantic_facts');
CREATE TRIGGER semantic_facts_added
    AFTER INSERT ON semantic_facts REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('semantic_facts');
CREATE TRIGGER semantic_facts_removed
    AFTER DELETE ON semantic_facts REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('semantic_facts');

CREATE TRIGGER memory_vectors_write
    BEFORE INSERT
        OR UPDATE OF content, agent_id, metadata, content_tsv, embedding
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
