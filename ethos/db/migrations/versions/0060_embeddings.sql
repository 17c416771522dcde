-- 0060: an embedding is not a memory (issue 65; see 0060_embeddings.py). Run again on a
-- database at 0060, it changes nothing.

-- The embeddings of episodes and facts, searched by similarity: one per text embedded
-- (`field`: '$' the memory's text; a LangGraph item, each text of its index's fields).
-- No memory: no decay state, policy, hints or trigger. A row is written once and never
-- updated (a new text writes new ones in place of the old), so the heap is packed full.
-- It is live exactly while its source is: a search reads the source's state, never a
-- copy of it. Its source's hard delete takes it (ethos_rows_removed), as does a
-- source's rewrite.
CREATE TABLE IF NOT EXISTS memory_embeddings (
    agent_id text NOT NULL,
    source_id uuid NOT NULL,
    field text DEFAULT '$'::text NOT NULL,
    source_table text NOT NULL,
    embedding vector({dimension}) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_embeddings_pkey PRIMARY KEY (agent_id, source_id, field),
    CONSTRAINT memory_embeddings_source_table_check CHECK ((source_table = ANY (ARRAY['episodic_traces'::text, 'semantic_facts'::text])))
)
WITH (fillfactor='100');
CREATE INDEX IF NOT EXISTS memory_embeddings_embedding_hnsw ON memory_embeddings USING hnsw (embedding vector_cosine_ops);

-- On a database distributed already (`ethos distribute` ran before this migration), the
-- embeddings are distributed by agent beside their sources, before a row moves in.
DO $$
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN  -- (nested: one server lacks it)
        IF EXISTS (SELECT FROM pg_dist_partition
                   WHERE logicalrelid = 'episodic_traces'::regclass AND partmethod = 'h')
           AND NOT EXISTS (SELECT FROM pg_dist_partition
                           WHERE logicalrelid = 'memory_embeddings'::regclass) THEN
            PERFORM create_distributed_table('memory_embeddings'::regclass, 'agent_id',
                                             colocate_with => 'episodic_traces');
        END IF;
    END IF;
END $$;

-- The vectors of episodes and facts move over (a LangGraph item's several: '$', then
-- '$#2', '$#3', ... in the order they were written; its next put replaces them), then
-- leave memory_vectors, whose triggers as they were take them out of its statistics; the
-- agents' centres count them again as embeddings.
DO $$
BEGIN
    IF EXISTS (SELECT FROM information_schema.columns
               WHERE table_name = 'memory_vectors' AND column_name = 'source_id') THEN
        INSERT INTO memory_embeddings (agent_id, source_id, field, source_table, embedding,
                                       created_at)
        SELECT v.agent_id, v.source_id,
               CASE WHEN v.n = 1 THEN '$' ELSE '$#' || v.n END, v.source_type, v.embedding,
               v.created_at
        FROM (SELECT agent_id, source_id, source_type, embedding, created_at,
                     row_number() OVER (PARTITION BY agent_id, source_id ORDER BY id) AS n
              FROM memory_vectors WHERE source_id IS NOT NULL) AS v
        ON CONFLICT (agent_id, source_id, field) DO NOTHING;
        DELETE FROM memory_vectors WHERE source_id IS NOT NULL;
        PERFORM ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), 1)
        FROM memory_embeddings HAVING count(*) > 0;
    END IF;
END $$;

-- What existed for sourced vectors alone goes: their columns, checks and index, and the
-- trigger that pruned and recovered them with their source.
DROP TRIGGER IF EXISTS episodic_traces_pruned ON episodic_traces;
DROP TRIGGER IF EXISTS semantic_facts_pruned ON semantic_facts;
DROP FUNCTION IF EXISTS ethos_source_pruned();
DROP TRIGGER IF EXISTS memory_vectors_write ON memory_vectors;
DROP INDEX IF EXISTS memory_vectors_source_idx;
DROP INDEX IF EXISTS memory_vectors_content_tsv_idx;
ALTER TABLE memory_vectors DROP CONSTRAINT IF EXISTS memory_vectors_check;
ALTER TABLE memory_vectors DROP CONSTRAINT IF EXISTS memory_vectors_source_type_check;
ALTER TABLE memory_vectors DROP COLUMN IF EXISTS source_type;
ALTER TABLE memory_vectors DROP COLUMN IF EXISTS source_id;
CREATE INDEX IF NOT EXISTS memory_vectors_content_tsv_idx ON memory_vectors USING gin (content_tsv) WHERE (NOT pruned);
DROP FUNCTION IF EXISTS ethos_new_policy(text, text, uuid, float8, tsvector, boolean, text,
                                         boolean, float8);

-- The write path without sources: every vector counts its words; the embeddings are
-- written by ethos_embed alone, and go with their source's hard delete.
CREATE OR REPLACE FUNCTION ethos_new_policy(memory_table text, agent text, id uuid, importance float8,
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

CREATE OR REPLACE FUNCTION ethos_write_row() RETURNS trigger
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

CREATE OR REPLACE FUNCTION ethos_rows_added() RETURNS trigger
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

CREATE OR REPLACE FUNCTION ethos_rows_removed() RETURNS trigger
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

CREATE OR REPLACE FUNCTION ethos_embed(memory_table text, agent text, ids uuid[], fields text[],
                            embeddings vector[], cleared uuid[]) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
DECLARE
    found uuid[];  -- the ids that are the agent's memories in memory_table
    written integer;
BEGIN
    IF memory_table = 'episodic_traces' THEN
        found := ARRAY(SELECT m.id FROM episodic_traces AS m
                       WHERE m.agent_id = agent AND m.id = ANY (ids));
    ELSIF memory_table = 'semantic_facts' THEN
        found := ARRAY(SELECT m.id FROM semantic_facts AS m
                       WHERE m.agent_id = agent AND m.id = ANY (ids));
    ELSE
        RAISE EXCEPTION 'no embeddings of %: only of episodic_traces or semantic_facts',
            memory_table USING ERRCODE = 'check_violation';
    END IF;
    IF cleared IS NOT NULL THEN
        DELETE FROM memory_embeddings AS e
        WHERE e.agent_id = agent AND e.source_id = ANY (cleared);
    END IF;
    INSERT INTO memory_embeddings (agent_id, source_id, field, source_table, embedding)
    SELECT agent, u.id, u.field, memory_table, u.embedding
    FROM unnest(ids, fields, embeddings) AS u (id, field, embedding)
    WHERE u.id = ANY (found)
    ON CONFLICT (agent_id, source_id, field) DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

CREATE OR REPLACE FUNCTION ethos_embeddings_written() RETURNS trigger
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
DROP TRIGGER IF EXISTS memory_embeddings_added ON memory_embeddings;
CREATE TRIGGER memory_embeddings_added
    AFTER INSERT ON memory_embeddings REFERENCING NEW TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();
DROP TRIGGER IF EXISTS memory_embeddings_removed ON memory_embeddings;
CREATE TRIGGER memory_embeddings_removed
    AFTER DELETE ON memory_embeddings REFERENCING OLD TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();
CREATE TRIGGER memory_vectors_write
    BEFORE INSERT
        OR UPDATE OF content, agent_id, metadata, content_tsv, embedding
    ON memory_vectors FOR EACH ROW EXECUTE FUNCTION ethos_write_row('memory_vectors');

-- The statistics rebuilt by hand read the embeddings, and every vector's words.
CREATE OR REPLACE FUNCTION ethos_vector_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM agent_vector_stats;
    INSERT INTO agent_vector_stats (agent_id, vectors, total)
    SELECT agent_id, count(*), sum(l2_normalize(embedding))
    FROM (SELECT agent_id, embedding FROM memory_vectors
          UNION ALL SELECT agent_id, embedding FROM memory_embeddings) AS v
    GROUP BY agent_id;
$$;
REVOKE ALL ON FUNCTION ethos_vector_stats_rebuild() FROM PUBLIC;

CREATE OR REPLACE FUNCTION ethos_text_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM lexeme_stats;
    DELETE FROM agent_text_stats;
    SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
    FROM (SELECT agent_id, content_tsv FROM episodic_traces
          UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
          UNION ALL SELECT agent_id, content_tsv FROM memory_vectors
         ) AS m;
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_rebuild() FROM PUBLIC;

-- The definer deletes embeddings (ethos_rows_removed) and owns the trigger function of
-- the embeddings, where the schema made it (access.sql).
DO $do$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'ethos_definer') THEN
        GRANT SELECT, DELETE ON memory_embeddings TO ethos_definer;
        ALTER FUNCTION ethos_embeddings_written() OWNER TO ethos_definer;
    END IF;
END
$do$;
