-- 0059: what callers mean, and no tenant reaching another (issues 63 and 64; see
-- 0059_callers_and_tenants.py). Run again on a database at 0059, it changes nothing.

-- Automatic importance knows the language, the emotional tone, and what is stated.

ALTER TABLE semantic_facts ADD COLUMN IF NOT EXISTS stated boolean DEFAULT true NOT NULL;

CREATE TABLE IF NOT EXISTS word_prior (
    word text NOT NULL,
    zipf real NOT NULL,
    CONSTRAINT word_prior_zipf_check CHECK (((zipf >= (0)::double precision) AND (zipf <= (9)::double precision))),
    CONSTRAINT word_prior_pkey PRIMARY KEY (word)
);

-- On a database distributed already (`ethos distribute` ran before this migration), the
-- prior is a reference table like the other shared ones (cluster.py's REFERENCE): the
-- functions below read it on the shards, on every node. Made so before they are, so
-- Citus puts them on the workers with their table. Nothing on one server.
DO $$
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN  -- (nested: one server lacks it)
        IF EXISTS (SELECT FROM pg_dist_partition
                   WHERE logicalrelid = 'episodic_traces'::regclass AND partmethod = 'h')
           AND NOT EXISTS (SELECT FROM pg_dist_partition
                           WHERE logicalrelid = 'word_prior'::regclass) THEN
            PERFORM create_reference_table('word_prior'::regclass);
        END IF;
    END IF;
END $$;

-- What ethos knows of a text's words before their agent writes any: each word's share of
-- the information of a word never seen (how rare it is in English, word_prior: its
-- surprisal, 9 - zipf, over that of the list's rarest, 9 - 4), stop words included (a
-- short statement is more than its rarest word: "I am vegetarian" says more than "haha
-- nice"); a word not listed, or a number, counts 1. Words as the 'simple' configuration
-- splits them, whatever the text configuration.
CREATE OR REPLACE FUNCTION ethos_prior_words(content text) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(least((9 - coalesce(p.zipf, 4)) / 5, 1)), 0)
    FROM unnest(tsvector_to_array(to_tsvector('simple', content))) AS u (word)
    LEFT JOIN word_prior AS p ON p.word = u.word
$$;

-- How much the prior weighs beside the agent's own statistics, by the words the agent
-- has written: all of it before any, half at 50, a tenth at 450.
CREATE OR REPLACE FUNCTION ethos_prior_share(length bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 50 / (50 + greatest(coalesce(length, 0), 0)::float8) $$;

DROP FUNCTION IF EXISTS ethos_new_policy(memory_table text, agent text, id uuid,
    importance double precision, tsv tsvector, measured boolean);

-- The policy a new memory gets, and its automatic importance (NULL where none was
-- measured): the importance given, else one measured from its words, picks a tier
-- (ethos_importance_tier); without either, the agent's policy, else the default.
-- `measured`: false for a vector of an episode or fact (its source was measured).
-- The words are the agent's (ethos_informative_words) blended with the language's
-- (ethos_prior_words) by ethos_prior_share of the words it has written; an emotional
-- `tone` raises the importance as a second reason to keep it (1 - (1 - i)(1 - tone));
-- a memory the caller `stated` is measured only to live longer: never shorter than the
-- default policy (decision 0023).
CREATE OR REPLACE FUNCTION ethos_new_policy(memory_table text, agent text, id uuid, importance float8,
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


-- The write trigger: the prior and the floor for what is stated (above), and an agent
-- role's vector of another agent refused before its source is read.
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

-- The source check does not tell one agent what another holds; the definer functions
-- belong to a role made for them.

CREATE OR REPLACE FUNCTION ethos_role_agents(role_name text) RETURNS text[]
    LANGUAGE sql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $_$
    SELECT array_agg(r.agent_id) FROM ethos_agent_roles AS r WHERE r.role_name = $1
$_$;
REVOKE ALL ON FUNCTION ethos_role_agents(text) FROM PUBLIC;


-- The SECURITY DEFINER functions run as ethos_definer, a role made for them (NOLOGIN: no
-- one connects as it), with the rights they need and no more: a flaw in one would not
-- run with the owner's rights (a superuser's, on the embedded server). The owner is made
-- a member, so that later migrations can replace them; ALTER ... OWNER needs the new
-- owner to have CREATE on the schema. ANALYZE needs ownership of the table before
-- PostgreSQL 17 (MAINTAIN since): there ethos_text_stats_analyze, which takes nothing
-- and analyzes two fixed tables, stays the owner's. Where the owner may not create roles
-- and the role does not exist, the functions stay the owner's, and a notice says so.
-- Under row security (agent roles) `ethos roles` gives the role a policy on each table.
DO $do$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ethos_definer') THEN
        IF NOT (SELECT r.rolsuper OR r.rolcreaterole FROM pg_roles AS r
                WHERE r.rolname = current_user) THEN
            RAISE NOTICE 'the SECURITY DEFINER functions stay the owner''s: % may not create the role ethos_definer',
                current_user;
            RETURN;
        END IF;
        CREATE ROLE ethos_definer NOLOGIN;
    END IF;
    IF NOT pg_has_role(current_user, 'ethos_definer', 'USAGE') THEN
        GRANT ethos_definer TO CURRENT_USER;
    END IF;
    GRANT USAGE, CREATE ON SCHEMA public TO ethos_definer;
    GRANT SELECT ON memory_vectors, ethos_settings, importance_tiers, agent_policies,
                    ethos_agent_roles, word_prior TO ethos_definer;
    GRANT SELECT, UPDATE (auto_importance, auto_particularity, policy)
        ON episodic_traces, semantic_facts TO ethos_definer;
    GRANT SELECT, INSERT ON episodic_traces_due, semantic_facts_due, memory_vectors_due
        TO ethos_definer;
    GRANT SELECT, INSERT, UPDATE, DELETE ON lexeme_stats, agent_text_stats, agent_vector_stats
        TO ethos_definer;
    GRANT SELECT, INSERT, DELETE ON memory_revisions TO ethos_definer;
    IF NOT EXISTS (SELECT FROM pg_policies WHERE tablename = 'ethos_agent_roles'
                                             AND policyname = 'ethos_definer') THEN
        CREATE POLICY ethos_definer ON ethos_agent_roles FOR SELECT TO ethos_definer
            USING (true);
    END IF;
    ALTER FUNCTION ethos_role_agents(text) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_vector_stats_add(text[], vector[], integer) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_vector_stats_rebuild() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_text_stats_add(text[], tsvector[], integer[]) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_text_stats_rebuild() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_write_row() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_added() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_removed() OWNER TO ethos_definer;
    IF current_setting('server_version_num')::int >= 170000 THEN
        EXECUTE 'GRANT MAINTAIN ON lexeme_stats, agent_text_stats TO ethos_definer';
        ALTER FUNCTION ethos_text_stats_analyze() OWNER TO ethos_definer;
    ELSE
        GRANT EXECUTE ON FUNCTION ethos_text_stats_analyze() TO ethos_definer;
    END IF;
END
$do$;

-- A recovery says whether it finished.
ALTER TABLE recoveries ADD COLUMN IF NOT EXISTS status text DEFAULT 'completed' NOT NULL;
ALTER TABLE recoveries DROP CONSTRAINT IF EXISTS recoveries_status_check;
ALTER TABLE recoveries ADD CONSTRAINT recoveries_status_check
    CHECK (status = ANY (ARRAY['completed'::text, 'interrupted'::text, 'failed'::text]));

-- The durable queue takes the event kind 'unmatched'.
ALTER TABLE retrieval_queue DROP CONSTRAINT IF EXISTS retrieval_queue_kind_check;
ALTER TABLE retrieval_queue ADD CONSTRAINT retrieval_queue_kind_check
    CHECK (kind = ANY (ARRAY['retrieval'::text, 'surfaced'::text, 'unmatched'::text,
                             'useful'::text, 'wrong'::text]));
