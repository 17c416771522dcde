SET LOCAL check_function_bodies = off;

CREATE EXTENSION IF NOT EXISTS vector;

CREATE FUNCTION public.ethos_agent_lexeme(agent text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 'ethos_agent_' || md5(agent) $$;

CREATE FUNCTION public.ethos_asks(content text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT (strpos(content, '?') > 0 AND content ~ '\?([^[:alnum:]_=&%/+-]|$)')
        OR strpos(content, '？') > 0
$_$;

CREATE FUNCTION public.ethos_auto_half(half double precision, average double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT half * greatest(coalesce(average, 10), 5) / 10
$$;

CREATE FUNCTION public.ethos_auto_importance(words double precision, half double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 1 - power(2, -least(words / half, 1000)) $$;

CREATE FUNCTION public.ethos_check_new_rows() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    bad uuid;
BEGIN
    IF TG_TABLE_NAME = 'episodic_traces' THEN
        SELECT id INTO bad FROM new_rows
        WHERE NOT (created_at >= '1900-01-01 00:00+00' AND created_at < '2200-01-01 00:00+00'
               AND anchor_at >= '1900-01-01 00:00+00' AND anchor_at < '2200-01-01 00:00+00'
               AND (last_retrieved_at IS NULL OR last_retrieved_at >= '1900-01-01 00:00+00' AND last_retrieved_at < '2200-01-01 00:00+00'))
        LIMIT 1;
    ELSIF TG_TABLE_NAME = 'semantic_facts' THEN
        SELECT id INTO bad FROM new_rows
        WHERE NOT (created_at >= '1900-01-01 00:00+00' AND created_at < '2200-01-01 00:00+00'
               AND anchor_at >= '1900-01-01 00:00+00' AND anchor_at < '2200-01-01 00:00+00'
               AND (last_retrieved_at IS NULL OR last_retrieved_at >= '1900-01-01 00:00+00' AND last_retrieved_at < '2200-01-01 00:00+00')
               AND (expires_at IS NULL OR expires_at >= '1900-01-01 00:00+00' AND expires_at < '2200-01-01 00:00+00'))
        LIMIT 1;
    ELSIF TG_TABLE_NAME = 'memory_vectors' THEN
        SELECT id INTO bad FROM new_rows
        WHERE NOT (created_at >= '1900-01-01 00:00+00' AND created_at < '2200-01-01 00:00+00'
               AND anchor_at >= '1900-01-01 00:00+00' AND anchor_at < '2200-01-01 00:00+00'
               AND (embedding IS NULL OR vector_norm(embedding) > 0)
               AND (last_retrieved_at IS NULL OR last_retrieved_at >= '1900-01-01 00:00+00' AND last_retrieved_at < '2200-01-01 00:00+00')
               AND (expires_at IS NULL OR expires_at >= '1900-01-01 00:00+00' AND expires_at < '2200-01-01 00:00+00'))
        LIMIT 1;
    ELSE
        EXECUTE format('SELECT id FROM new_rows WHERE NOT (%s) LIMIT 1', TG_ARGV[0]) INTO bad;
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%: row % has a moment outside 1900..2199 or an all-zero embedding',
            TG_TABLE_NAME, bad USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_content_derived() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
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
    -- A vector with no direction in float32 (all zeros, or 1e-30s whose squares vanish):
    -- its cosine to itself is NaN, as to every query (vector_norm, in double, passes it).
    IF TG_TABLE_NAME = 'memory_vectors' AND TG_OP = 'INSERT' THEN
        IF NEW.embedding IS NOT NULL AND (NEW.embedding <=> NEW.embedding) = 'NaN' THEN
            RAISE EXCEPTION 'embedding has no direction: its float32 norm is 0 or infinite'
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    -- (the anchor defaults to the creation, filled by a later trigger)
    IF TG_OP = 'INSERT' AND coalesce(NEW.anchor_at, NEW.created_at) > now() + interval '5 minutes'
       AND row_security_active(TG_RELID) THEN
        RAISE EXCEPTION 'a memory of % starts when it is written, not ahead of now',
            coalesce(NEW.anchor_at, NEW.created_at) USING ERRCODE = 'check_violation';
    END IF;
    NEW.content_key := ethos_content_key(NEW.content);
    NEW.content_tsv := ethos_text_vector(ethos_text_config(), NEW.agent_id, NEW.content);
    RETURN NEW;
END
$$;

DO $do$
BEGIN
    IF current_setting('server_version_num')::int >= 180000 THEN
        EXECUTE $key$CREATE FUNCTION public.ethos_content_key(content text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT md5(btrim(regexp_replace(regexp_replace(casefold(normalize(content, NFKC) COLLATE pg_unicode_fast),
        '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]', '', 'g'), '[[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' '))::uuid
$$$key$;
    ELSE
        EXECUTE $key$CREATE FUNCTION public.ethos_content_key(content text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT md5(btrim(regexp_replace(regexp_replace(replace(lower(normalize(content, NFKC)), 'ß', 'ss'),
        '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]', '', 'g'), '[[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' '))::uuid
$$$key$;
    END IF;
END
$do$;

CREATE FUNCTION public.ethos_drop_revisions() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    DELETE FROM memory_revisions AS r USING gone
    WHERE r.table_name = TG_TABLE_NAME AND r.memory_id = gone.id;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_finished_runs_are_final() RETURNS trigger
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

CREATE FUNCTION public.ethos_hint_new_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'episodic_traces' THEN
        INSERT INTO episodic_traces_due (prune, at, slice, n, ids, places)
        SELECT prune, '-infinity', slice, count(*), array_agg(id), array_agg(place)
        FROM (SELECT g.*,
                     (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                         AS part
              FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                    FROM added
                    CROSS JOIN LATERAL (SELECT t.ctid AS place FROM episodic_traces AS t
                                        WHERE t.id = added.id LIMIT 1) AS at
                    CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                    WHERE NOT added.pruned) AS g) AS g
        GROUP BY prune, slice, part;
    ELSIF TG_TABLE_NAME = 'semantic_facts' THEN
        INSERT INTO semantic_facts_due (prune, at, slice, n, ids, places)
        SELECT prune, '-infinity', slice, count(*), array_agg(id), array_agg(place)
        FROM (SELECT g.*,
                     (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                         AS part
              FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                    FROM added
                    CROSS JOIN LATERAL (SELECT t.ctid AS place FROM semantic_facts AS t
                                        WHERE t.id = added.id LIMIT 1) AS at
                    CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                    WHERE NOT added.pruned) AS g) AS g
        GROUP BY prune, slice, part;
    ELSIF TG_TABLE_NAME = 'memory_vectors' THEN
        INSERT INTO memory_vectors_due (prune, at, slice, n, ids, places)
        SELECT prune, '-infinity', slice, count(*), array_agg(id), array_agg(place)
        FROM (SELECT g.*,
                     (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                         AS part
              FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                    FROM added
                    CROSS JOIN LATERAL (SELECT t.ctid AS place FROM memory_vectors AS t
                                        WHERE t.id = added.id LIMIT 1) AS at
                    CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                    WHERE NOT added.pruned) AS g) AS g
        GROUP BY prune, slice, part;
    ELSE
        EXECUTE format(
        'INSERT INTO %I (prune, at, slice, n, ids, places)
         SELECT prune, ''-infinity'', slice, count(*), array_agg(id), array_agg(place)
         FROM (SELECT g.*,
                      (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                          AS part
               FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                     FROM added
                     CROSS JOIN LATERAL (SELECT t.ctid AS place FROM %I AS t
                                         WHERE t.id = added.id LIMIT 1) AS at
                     CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                     WHERE NOT added.pruned) AS g) AS g
         GROUP BY prune, slice, part', TG_TABLE_NAME || '_due', TG_TABLE_NAME);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_idf(docs bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ln(1 + (greatest(docs, df) - df + 0.5::float8) / (df + 0.5::float8))
$$;

CREATE FUNCTION public.ethos_importance_raised(importance double precision, p double precision, k double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN importance >= 1 THEN 1
                ELSE 1 - exp(-least(-ln(1 - importance) * power(least(p, 1000), k), 700))
           END
$$;

CREATE FUNCTION public.ethos_importance_tier(importance double precision) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(
        (SELECT t.policy FROM importance_tiers AS t WHERE t.min_importance <= importance
         ORDER BY t.min_importance DESC LIMIT 1),
        (SELECT s.importance_otherwise FROM ethos_settings AS s))
$$;

CREATE FUNCTION public.ethos_informative_words(agent text, tsv tsvector) RETURNS TABLE(words double precision)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(ethos_word_weight(u.lexeme, coalesce(a.docs, 0), coalesce(l.docs, 0))),
                    0)
    FROM unnest(array_remove(tsvector_to_array(tsv), ethos_agent_lexeme(agent))) AS u (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN LATERAL (SELECT s.docs FROM lexeme_stats AS s
                       WHERE s.agent_id = agent AND s.lexeme = u.lexeme
                         AND u.lexeme !~ '^[0-9]'
                       LIMIT 1) AS l ON true
$$;

CREATE FUNCTION public.ethos_init_decay_state() RETURNS trigger
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_sort TO 'off'
    SET enable_incremental_sort TO 'off'
    AS $_$
DECLARE
    auto boolean;
    half float8;
    answer float8;
    otherwise text;
    fallback text;
    agent_policy text;
    average float8;
    words float8;
    asked boolean;
    importance float8 := NEW.importance;
    measured boolean := true;
BEGIN
    NEW.strength := coalesce(NEW.strength, NEW.salience);
    NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
    IF TG_TABLE_NAME = 'semantic_facts' THEN
        NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
    END IF;
    IF NEW.policy IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        measured := NEW.source_id IS NULL;  -- the vector of an episode or fact: its own
    END IF;
    -- One query: the settings (none yet: the defaults), the agent's own policy, and the
    -- length of its memories on average (NULL: the statistics do not count it yet).
    SELECT s.auto_importance, s.auto_importance_half, s.auto_importance_answer,
           s.importance_otherwise, s.default_policy,
           (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id),
           (SELECT t.length::float8 / nullif(t.docs, 0) FROM agent_text_stats AS t
            WHERE t.agent_id = NEW.agent_id)
    INTO auto, half, answer, otherwise, fallback, agent_policy, average
    FROM (SELECT) AS one LEFT JOIN ethos_settings AS s ON true;
    answer := coalesce(answer, 4);
    IF importance IS NULL AND agent_policy IS NULL AND measured AND coalesce(auto, true) THEN
        IF average IS NULL THEN  -- every word is new to the agent: each counts 1
            words := ethos_text_length(NEW.content_tsv);
        ELSE
            SELECT w.words INTO words
            FROM ethos_informative_words(NEW.agent_id, NEW.content_tsv) AS w;
        END IF;
        IF answer > 1 THEN  -- does it answer the agent's previous memory?
            IF TG_TABLE_NAME = 'episodic_traces' THEN
                SELECT ethos_asks(p.content) INTO asked FROM episodic_traces AS p
                WHERE p.agent_id >= NEW.agent_id AND NOT p.pruned
                  AND (p.agent_id, p.id) < (NEW.agent_id, NEW.id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1;
            ELSIF TG_TABLE_NAME = 'semantic_facts' THEN
                SELECT ethos_asks(p.content) INTO asked FROM semantic_facts AS p
                WHERE p.agent_id >= NEW.agent_id AND NOT p.pruned
                  AND (p.agent_id, p.id) < (NEW.agent_id, NEW.id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1;
            ELSIF TG_TABLE_NAME = 'memory_vectors' THEN
                SELECT ethos_asks(p.content) INTO asked FROM memory_vectors AS p
                WHERE p.agent_id >= NEW.agent_id AND NOT p.pruned
                  AND (p.agent_id, p.id) < (NEW.agent_id, NEW.id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1;
            ELSE
                EXECUTE format('SELECT ethos_asks(p.content) FROM %I AS p
                                WHERE p.agent_id >= $1 AND NOT p.pruned AND (p.agent_id, p.id) < ($1, $2)
                                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1', TG_TABLE_NAME)
                INTO asked USING NEW.agent_id, NEW.id;
            END IF;
            IF asked THEN
                words := words * answer;
                NEW.auto_answer := answer;
            END IF;
        END IF;
        importance := ethos_auto_importance(words, ethos_auto_half(coalesce(half, 4.25), average));
        NEW.auto_importance := importance;
    END IF;
    IF importance IS NOT NULL THEN
        NEW.policy := (SELECT t.policy FROM importance_tiers AS t
                       WHERE t.min_importance <= importance
                       ORDER BY t.min_importance DESC LIMIT 1);
    END IF;
    NEW.policy := coalesce(NEW.policy, CASE WHEN importance IS NOT NULL THEN otherwise END,
                           agent_policy, fallback, 'standard');
    RETURN NEW;
END
$_$;

CREATE FUNCTION public.ethos_keep_revision() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO memory_revisions (table_name, memory_id, agent_id, content, metadata, revised_by)
    VALUES (TG_TABLE_NAME, OLD.id, OLD.agent_id, OLD.content, OLD.metadata, session_user);
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_log_decay(t_days double precision, tau double precision, curve text, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN curve = 'power'
                THEN -power_exponent
                     * ln(1 + (power(0.9, -1 / power_exponent) - 1) * t_days / tau)
                ELSE -t_days / tau
           END
$$;

CREATE FUNCTION public.ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
    LANGUAGE sql STABLE
    AS $_$
    SELECT CASE table_name
        WHEN 'memory_vectors' THEN EXISTS (SELECT 1 FROM memory_vectors AS m WHERE m.id = $2)
        WHEN 'episodic_traces' THEN EXISTS (SELECT 1 FROM episodic_traces AS m WHERE m.id = $2)
        WHEN 'semantic_facts' THEN EXISTS (SELECT 1 FROM semantic_facts AS m WHERE m.id = $2)
        ELSE false
    END
$_$;

CREATE FUNCTION public.ethos_own_agents() RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(array_agg(agent_id), '{}') FROM ethos_own_agent_ids
$$;

CREATE FUNCTION public.ethos_particularity(agent text, embedding public.vector) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT greatest(embedding <=> s.total, 0)
           / greatest(1 - vector_norm(s.total) / s.vectors, 0.001)
    FROM agent_vector_stats AS s
    WHERE s.agent_id = agent AND s.vectors >= 10
$$;

CREATE FUNCTION public.ethos_record_retrieval(table_name text, ids uuid[], at timestamp with time zone DEFAULT now()) RETURNS integer
    LANGUAGE plpgsql
    AS $_$
#variable_conflict use_variable
DECLARE
    target text := CASE table_name WHEN 'vector' THEN 'memory_vectors'
                                   WHEN 'episode' THEN 'episodic_traces'
                                   WHEN 'fact' THEN 'semantic_facts'
                                   ELSE table_name END;
    queued integer;
BEGIN
    IF target IS NULL OR target NOT IN ('memory_vectors', 'episodic_traces', 'semantic_facts')
    THEN
        RAISE EXCEPTION 'unknown table %: use memory_vectors, episodic_traces or semantic_facts',
            coalesce(table_name, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF at IS NULL THEN
        RAISE EXCEPTION 'at must be a moment, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT (at >= '1900-01-01 00:00+00' AND at <= now() + interval '5 minutes') THEN
        RAISE EXCEPTION 'at % is outside 1900 .. now: a retrieval is recorded when it happens', at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF row_security_active(target) THEN  -- an agent's own connection
        -- (migration 0022): its rows only
        EXECUTE format('SELECT array_agg(id) FROM %I WHERE id = ANY ($1)', target)
            INTO ids USING ids;
    END IF;
    INSERT INTO retrieval_queue (table_name, memory_id, at)
    SELECT target, memory_id, at FROM unnest(ids) AS memory_id WHERE memory_id IS NOT NULL;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$_$;

CREATE FUNCTION public.ethos_salience(strength double precision, anchor_at timestamp with time zone, created_at timestamp with time zone, n double precision, emotion double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, frequency_weight double precision, emotional_weight double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(1, S × D(t) × (1 + α·f) × (1 + β·E)), f = min(n / days_alive, 1)
    SELECT CASE WHEN frozen THEN strength ELSE least(1.0,
        ethos_strength_at(strength, anchor_at, n, false, at, curve,
                          base_tau_days, ltp_multiplier, max_tau_days, power_exponent)
        * (1 + frequency_weight
               * least(n / greatest(date_part('epoch', at - created_at) / 86400.0, 1), 1))
        * (1 + emotional_weight * least(greatest(emotion, 0), 1)))
    END
$$;

CREATE FUNCTION public.ethos_slice(place tid) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ((place::text::point)[0]::bigint / 64 % 16)::smallint
$$;

CREATE FUNCTION public.ethos_source_pruned() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE memory_vectors
    SET pruned = NEW.pruned, pruned_at = NEW.pruned_at, prune_reason = NEW.prune_reason
    WHERE source_type = TG_TABLE_NAME AND source_id = NEW.id AND agent_id = NEW.agent_id
      AND pruned <> NEW.pruned;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_spaced_gain(strength double precision, decayed double precision, n double precision, frozen boolean, prune_threshold double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN frozen THEN 0
        WHEN n = 0 OR strength <= prune_threshold THEN 1
        ELSE 0.1 + 0.9 * least(greatest((strength - decayed) / (strength - prune_threshold),
                                        0), 1)
    END
$$;

CREATE FUNCTION public.ethos_strength_at(strength double precision, anchor_at timestamp with time zone, n double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- S × D(t), computed as exp(ln S + ln D) floored at e^−700 so that very old rows
    -- cannot raise PostgreSQL's float underflow error. Frozen: pinned, or a policy
    -- that never decays.
    SELECT CASE
        WHEN frozen OR strength = 0 THEN strength
        ELSE exp(greatest(
            ln(strength) + ethos_log_decay(
                greatest(date_part('epoch', at - anchor_at), 0) / 86400.0,
                ethos_tau_days(n, base_tau_days, ltp_multiplier, max_tau_days),
                curve, power_exponent),
            -700))
    END
$$;

CREATE FUNCTION public.ethos_tau_days(n double precision, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(base × multiplier^n, max), in log space so a large n cannot overflow
    SELECT base_tau_days * exp(least(n * ln(ltp_multiplier), ln(max_tau_days / base_tau_days)))
$$;

CREATE FUNCTION public.ethos_text_config() RETURNS regconfig
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce((SELECT text_config FROM ethos_settings), 'english'::regconfig)
$$;

CREATE FUNCTION public.ethos_text_idf(agent text, tsv tsvector) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(ethos_idf(coalesce(a.docs, 0), coalesce(l.docs, 0))), 0)
    FROM unnest(tsvector_to_array(tsv)) AS w (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN lexeme_stats AS l ON l.agent_id = agent AND l.lexeme = w.lexeme
    WHERE w.lexeme <> ethos_agent_lexeme(agent)
$$;

CREATE FUNCTION public.ethos_text_length(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT greatest(length(tsv) - 1, 0) $$;

CREATE FUNCTION public.ethos_text_query(config regconfig, query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT string_agg(quote_literal(word), ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector(config, query))) AS word
$$;

CREATE FUNCTION public.ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
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

    DELETE FROM lexeme_stats AS s
    USING unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
          unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.lexeme = w.lexeme AND s.docs <= 0;

    DELETE FROM agent_text_stats AS s
    USING unnest(agents, signs) AS d (agent, sign)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
$$;

CREATE FUNCTION public.ethos_text_stats_analyze() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    ANALYZE lexeme_stats, agent_text_stats;
END
$$;

CREATE FUNCTION public.ethos_text_stats_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    written record;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_text_stats_rebuild();
        RETURN NULL;
    END IF;
    -- One pass over the rows: their counts added, and how many the statement wrote.
    IF TG_OP = 'INSERT' AND TG_TABLE_NAME = 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id) FILTER (WHERE source_id IS NULL),
                                    array_agg(content_tsv) FILTER (WHERE source_id IS NULL),
                                    array_agg(1) FILTER (WHERE source_id IS NULL)) AS added,
               count(*) AS n
        INTO written FROM new_rows;
    ELSIF TG_OP = 'INSERT' AND TG_TABLE_NAME <> 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id),
                                    array_agg(content_tsv),
                                    array_agg(1)) AS added,
               count(*) AS n
        INTO written FROM new_rows;
    ELSIF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id) FILTER (WHERE source_id IS NULL),
                                    array_agg(content_tsv) FILTER (WHERE source_id IS NULL),
                                    array_agg(-1) FILTER (WHERE source_id IS NULL)) AS added,
               count(*) AS n
        INTO written FROM old_rows;
    ELSIF TG_OP = 'DELETE' AND TG_TABLE_NAME <> 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id),
                                    array_agg(content_tsv),
                                    array_agg(-1)) AS added,
               count(*) AS n
        INTO written FROM old_rows;
    END IF;
    IF written.n >= 10000 THEN
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_text_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM lexeme_stats;
    DELETE FROM agent_text_stats;
    SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
    FROM (SELECT agent_id, content_tsv FROM episodic_traces
          UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
          UNION ALL SELECT agent_id, content_tsv FROM memory_vectors WHERE source_id IS NULL
         ) AS m;
$$;

CREATE FUNCTION public.ethos_text_stats_updated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    counted_old boolean := true;
    counted_new boolean := true;
BEGIN
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        counted_old := OLD.source_id IS NULL;
        counted_new := NEW.source_id IS NULL;
    END IF;
    PERFORM ethos_text_stats_add(
        array_remove(ARRAY[CASE WHEN counted_old THEN OLD.agent_id END,
                           CASE WHEN counted_new THEN NEW.agent_id END], NULL),
        array_remove(ARRAY[CASE WHEN counted_old THEN OLD.content_tsv END,
                           CASE WHEN counted_new THEN NEW.content_tsv END], NULL),
        array_remove(ARRAY[CASE WHEN counted_old THEN -1 END,
                           CASE WHEN counted_new THEN 1 END], NULL));
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_text_vector(config regconfig, agent text, content text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT to_tsvector(config, content) || array_to_tsvector(ARRAY[ethos_agent_lexeme(agent)])
$$;

CREATE FUNCTION public.ethos_tier_by_vector() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    k float8 := coalesce((SELECT s.auto_importance_particularity FROM ethos_settings AS s), 2);
    p float8;
BEGIN
    IF k = 0 THEN
        RETURN NULL;
    END IF;
    p := ethos_particularity(NEW.agent_id, NEW.embedding);
    IF p IS NULL THEN
        RETURN NULL;
    END IF;
    -- only a source of the vector's own agent, as its insert left it, once
    IF NEW.source_type = 'episodic_traces' THEN
        UPDATE episodic_traces
        SET auto_importance = ethos_importance_raised(auto_importance, p, k),
            auto_particularity = p,
            policy = ethos_importance_tier(ethos_importance_raised(auto_importance, p, k))
        WHERE id = NEW.source_id AND agent_id = NEW.agent_id
          AND auto_importance IS NOT NULL AND auto_particularity IS NULL
          AND NOT pruned AND retrieval_count = 0 AND due_at = '-infinity'
          AND policy = ethos_importance_tier(auto_importance);
    ELSIF NEW.source_type = 'semantic_facts' THEN
        UPDATE semantic_facts
        SET auto_importance = ethos_importance_raised(auto_importance, p, k),
            auto_particularity = p,
            policy = ethos_importance_tier(ethos_importance_raised(auto_importance, p, k))
        WHERE id = NEW.source_id AND agent_id = NEW.agent_id
          AND auto_importance IS NOT NULL AND auto_particularity IS NULL
          AND NOT pruned AND retrieval_count = 0 AND due_at = '-infinity'
          AND policy = ethos_importance_tier(auto_importance);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_uuid_v7() RETURNS uuid
    LANGUAGE plpgsql PARALLEL SAFE
    AS $$
DECLARE
    us bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
BEGIN
    RETURN encode(
        overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send(us / 1000) FROM 3)
                        || int2send((28672 + (us % 1000) * 4096 / 1000)::int2)
                FROM 1 FOR 8),
        'hex')::uuid;
END
$$;

CREATE FUNCTION public.ethos_vector_follows_source() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    found boolean;
BEGIN
    IF NEW.source_type = 'episodic_traces' THEN
        found := EXISTS (SELECT 1 FROM episodic_traces
                         WHERE id = NEW.source_id AND agent_id = NEW.agent_id);
    ELSE
        found := EXISTS (SELECT 1 FROM semantic_facts
                         WHERE id = NEW.source_id AND agent_id = NEW.agent_id);
    END IF;
    IF NOT found THEN
        RAISE EXCEPTION 'the vector''s source % % is not a memory of agent %',
            NEW.source_type, NEW.source_id, NEW.agent_id USING ERRCODE = 'foreign_key_violation';
    END IF;
    NEW.policy := 'permanent';
    RETURN NEW;
END
$$;

CREATE FUNCTION public.ethos_vector_stats_add(agents text[], embeddings public.vector[], sign integer) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
    INSERT INTO agent_vector_stats AS s (agent_id, vectors, total)
    SELECT d.agent, sign * count(*), sum(l2_normalize(d.embedding))
    FROM unnest(agents, embeddings) AS d (agent, embedding)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET vectors = s.vectors + excluded.vectors,
        total = CASE WHEN sign > 0 THEN s.total + excluded.total
                     ELSE s.total - excluded.total END;

    DELETE FROM agent_vector_stats AS s
    WHERE sign < 0 AND s.agent_id = ANY (agents) AND s.vectors <= 0;
$$;

CREATE FUNCTION public.ethos_vector_stats_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_vector_stats_rebuild();
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), 1)
        FROM new_rows;
    ELSE
        PERFORM ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), -1)
        FROM old_rows;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_vector_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM agent_vector_stats;
    INSERT INTO agent_vector_stats (agent_id, vectors, total)
    SELECT agent_id, count(*), sum(l2_normalize(embedding))
    FROM memory_vectors
    GROUP BY agent_id;
$$;

CREATE FUNCTION public.ethos_vector_stats_updated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM ethos_vector_stats_add(ARRAY[OLD.agent_id], ARRAY[OLD.embedding], -1);
    PERFORM ethos_vector_stats_add(ARRAY[NEW.agent_id], ARRAY[NEW.embedding], 1);
    RETURN NULL;
END
$$;

CREATE FUNCTION public.ethos_vector_stays_with_source() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'the vector % follows its source (% %): move the source instead',
        NEW.id, NEW.source_type, NEW.source_id USING ERRCODE = 'check_violation';
END
$$;

CREATE FUNCTION public.ethos_word_weight(lexeme text, total bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN lexeme ~ '^[0-9]' THEN 1
                ELSE ethos_idf(total, df) / ethos_idf(total, 0) END
$$;

CREATE TABLE public.agent_policies (
    agent_id text NOT NULL,
    policy text NOT NULL,
    assigned_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.agent_text_stats (
    agent_id text NOT NULL,
    docs bigint NOT NULL,
    length bigint NOT NULL
);

CREATE TABLE public.agent_vector_stats (
    agent_id text NOT NULL,
    vectors bigint NOT NULL,
    total public.vector NOT NULL
);

CREATE TABLE public.consolidation_runs (
    id bigint NOT NULL,
    kind text NOT NULL,
    trigger text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    as_of timestamp with time zone NOT NULL,
    selector jsonb DEFAULT '{}'::jsonb NOT NULL,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    error text,
    owner text,
    CONSTRAINT consolidation_runs_kind_check CHECK ((kind = ANY (ARRAY['merge'::text, 'forget'::text, 'purge'::text, 'erase'::text]))),
    CONSTRAINT consolidation_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'completed'::text, 'interrupted'::text, 'failed'::text]))),
    CONSTRAINT consolidation_runs_trigger_check CHECK ((trigger = ANY (ARRAY['manual'::text, 'daemon'::text, 'api'::text])))
);

ALTER TABLE public.consolidation_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.consolidation_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.daemons (
    id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    role text NOT NULL,
    lock_backend_pid integer,
    next_sweep_due timestamp with time zone,
    ltp_backlog bigint DEFAULT 0 NOT NULL,
    ltp_dropped bigint DEFAULT 0 NOT NULL,
    CONSTRAINT daemons_role_check CHECK ((role = ANY (ARRAY['starting'::text, 'leader'::text, 'standby'::text])))
);

CREATE TABLE public.decay_policies (
    name text NOT NULL,
    curve text NOT NULL,
    base_tau_days double precision NOT NULL,
    ltp_multiplier double precision NOT NULL,
    max_tau_days double precision NOT NULL,
    frequency_weight double precision NOT NULL,
    emotional_weight double precision NOT NULL,
    prune_threshold double precision NOT NULL,
    power_exponent double precision NOT NULL,
    never_decays boolean NOT NULL,
    promote_after integer,
    promote_to text,
    promotion_counts integer[] DEFAULT '{}'::integer[] NOT NULL,
    promotion_targets text[] DEFAULT '{}'::text[] NOT NULL,
    lifetime_days double precision,
    configured boolean DEFAULT true NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT decay_policies_base_tau_days_check CHECK ((base_tau_days > (0)::double precision)),
    CONSTRAINT decay_policies_check CHECK ((max_tau_days >= base_tau_days)),
    CONSTRAINT decay_policies_check1 CHECK (((promote_after IS NULL) = (promote_to IS NULL))),
    CONSTRAINT decay_policies_curve_check CHECK ((curve = ANY (ARRAY['exponential'::text, 'power'::text]))),
    CONSTRAINT decay_policies_emotional_weight_check CHECK ((emotional_weight >= (0)::double precision)),
    CONSTRAINT decay_policies_frequency_weight_check CHECK ((frequency_weight >= (0)::double precision)),
    CONSTRAINT decay_policies_ltp_multiplier_check CHECK ((ltp_multiplier >= (1)::double precision)),
    CONSTRAINT decay_policies_name_check CHECK ((name ~ '^[a-z][a-z0-9_]*$'::text)),
    CONSTRAINT decay_policies_power_exponent_check CHECK ((power_exponent > (0)::double precision)),
    CONSTRAINT decay_policies_promote_after_check CHECK ((promote_after >= 1)),
    CONSTRAINT decay_policies_prune_threshold_check CHECK (((prune_threshold > (0)::double precision) AND (prune_threshold < (1)::double precision)))
);

CREATE TABLE public.episodic_traces (
    id uuid DEFAULT public.ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    emotional_tone double precision DEFAULT 0 NOT NULL,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    CONSTRAINT episodic_traces_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT episodic_traces_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_emotional_tone_check CHECK (((emotional_tone >= (0)::double precision) AND (emotional_tone <= (1)::double precision))),
    CONSTRAINT episodic_traces_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT episodic_traces_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT episodic_traces_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT episodic_traces_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT episodic_traces_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT episodic_traces_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT episodic_traces_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT episodic_traces_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT episodic_traces_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT episodic_traces_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT episodic_traces_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT episodic_traces_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT episodic_traces_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');

CREATE TABLE public.episodic_traces_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');

CREATE TABLE public.memory_vectors (
    id uuid DEFAULT public.ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    embedding public.vector({dimension}) NOT NULL,
    expires_at timestamp with time zone,
    source_type text,
    source_id uuid,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    CONSTRAINT memory_vectors_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT memory_vectors_check CHECK (((source_type IS NULL) = (source_id IS NULL))),
    CONSTRAINT memory_vectors_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_expires_at_1900_to_2199 CHECK (((expires_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (expires_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT memory_vectors_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT memory_vectors_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT memory_vectors_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT memory_vectors_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT memory_vectors_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT memory_vectors_source_type_check CHECK ((source_type = ANY (ARRAY['episodic_traces'::text, 'semantic_facts'::text]))),
    CONSTRAINT memory_vectors_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT memory_vectors_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT memory_vectors_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT memory_vectors_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT memory_vectors_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT memory_vectors_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT memory_vectors_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');

CREATE TABLE public.semantic_facts (
    id uuid DEFAULT public.ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    confidence double precision DEFAULT 1.0 NOT NULL,
    confidence_strength double precision NOT NULL,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    expires_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    CONSTRAINT semantic_facts_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT semantic_facts_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT semantic_facts_confidence_strength_check CHECK (((confidence_strength >= (0)::double precision) AND (confidence_strength <= (1)::double precision))),
    CONSTRAINT semantic_facts_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_expires_at_1900_to_2199 CHECK (((expires_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (expires_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT semantic_facts_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT semantic_facts_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT semantic_facts_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT semantic_facts_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT semantic_facts_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT semantic_facts_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT semantic_facts_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT semantic_facts_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT semantic_facts_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT semantic_facts_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT semantic_facts_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT semantic_facts_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');

CREATE VIEW public.ethos_memories AS
 SELECT table_name,
    id,
    agent_id,
    content,
    salience,
    confidence,
    retrieval_count,
    last_retrieved_at,
    created_at,
    pruned,
    pruned_at,
    prune_reason,
    pinned,
        CASE
            WHEN (created_at > (now() - '1 day'::interval)) THEN '<1d'::text
            WHEN (created_at > (now() - '7 days'::interval)) THEN '1-7d'::text
            WHEN (created_at > (now() - '30 days'::interval)) THEN '7-30d'::text
            ELSE '>30d'::text
        END AS age_bucket,
    policy,
    importance
   FROM ( SELECT 'memory_vectors'::text AS table_name,
            memory_vectors.id,
            memory_vectors.agent_id,
            memory_vectors.content,
            memory_vectors.salience,
            NULL::double precision AS confidence,
            memory_vectors.retrieval_count,
            memory_vectors.last_retrieved_at,
            memory_vectors.created_at,
            memory_vectors.pruned,
            memory_vectors.pruned_at,
            memory_vectors.prune_reason,
            memory_vectors.pinned,
            memory_vectors.policy,
            memory_vectors.importance
           FROM public.memory_vectors
        UNION ALL
         SELECT 'episodic_traces'::text,
            episodic_traces.id,
            episodic_traces.agent_id,
            episodic_traces.content,
            episodic_traces.salience,
            NULL::double precision,
            episodic_traces.retrieval_count,
            episodic_traces.last_retrieved_at,
            episodic_traces.created_at,
            episodic_traces.pruned,
            episodic_traces.pruned_at,
            episodic_traces.prune_reason,
            episodic_traces.pinned,
            episodic_traces.policy,
            episodic_traces.importance
           FROM public.episodic_traces
        UNION ALL
         SELECT 'semantic_facts'::text,
            semantic_facts.id,
            semantic_facts.agent_id,
            semantic_facts.content,
            semantic_facts.salience,
            semantic_facts.confidence,
            semantic_facts.retrieval_count,
            semantic_facts.last_retrieved_at,
            semantic_facts.created_at,
            semantic_facts.pruned,
            semantic_facts.pruned_at,
            semantic_facts.prune_reason,
            semantic_facts.pinned,
            semantic_facts.policy,
            semantic_facts.importance
           FROM public.semantic_facts) m;

CREATE VIEW public.ethos_agent_counts AS
 SELECT table_name,
    agent_id,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM public.ethos_memories
  GROUP BY table_name, agent_id;

CREATE TABLE public.ethos_agent_roles (
    role_name text NOT NULL,
    agent_id text NOT NULL
);

CREATE TABLE public.ethos_settings (
    id boolean DEFAULT true NOT NULL,
    default_policy text NOT NULL,
    importance_otherwise text NOT NULL,
    at_risk_margin double precision NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    links_tau_days double precision DEFAULT 30 NOT NULL,
    links_prune_weight double precision DEFAULT 0.05 NOT NULL,
    text_config regconfig DEFAULT 'english'::regconfig NOT NULL,
    auto_importance boolean DEFAULT true NOT NULL,
    auto_importance_half double precision DEFAULT 4.25 NOT NULL,
    auto_importance_particularity double precision DEFAULT 2 NOT NULL,
    auto_importance_answer double precision DEFAULT 4 NOT NULL,
    CONSTRAINT ethos_settings_auto_importance_answer_check CHECK (((auto_importance_answer >= (1)::double precision) AND (auto_importance_answer <= (100)::double precision))),
    CONSTRAINT ethos_settings_auto_importance_half_check CHECK ((auto_importance_half > (0)::double precision)),
    CONSTRAINT ethos_settings_id_check CHECK (id)
);

CREATE VIEW public.ethos_at_risk AS
 SELECT m.table_name,
    m.id,
    m.agent_id,
    "left"(m.content, 80) AS content,
    COALESCE(m.confidence, m.salience) AS value,
    p.prune_threshold,
    m.policy,
    m.retrieval_count,
    m.last_retrieved_at
   FROM ((public.ethos_memories m
     JOIN public.decay_policies p ON ((p.name = m.policy)))
     CROSS JOIN public.ethos_settings s)
  WHERE ((NOT m.pruned) AND (NOT m.pinned) AND (NOT p.never_decays) AND (COALESCE(m.confidence, m.salience) < (p.prune_threshold + s.at_risk_margin)))
  ORDER BY COALESCE(m.confidence, m.salience);

CREATE VIEW public.ethos_consolidation_runs AS
 SELECT id,
    kind,
    trigger,
    status,
    started_at,
    finished_at,
    as_of,
    selector,
    counts,
    (date_part('epoch'::text, (finished_at - started_at)) * (1000)::double precision) AS duration_ms,
    error
   FROM public.consolidation_runs
  ORDER BY started_at DESC;

CREATE VIEW public.ethos_counts AS
 SELECT table_name,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM public.ethos_memories
  GROUP BY table_name;

CREATE TABLE public.memory_links (
    agent_id text NOT NULL,
    a_table text NOT NULL,
    a_id uuid NOT NULL,
    b_table text NOT NULL,
    b_id uuid NOT NULL,
    weight double precision NOT NULL,
    weighted_at timestamp with time zone NOT NULL,
    co_retrievals integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    fades_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_links_check CHECK ((a_id < b_id)),
    CONSTRAINT memory_links_weight_check CHECK (((weight > (0)::double precision) AND (weight <= (1)::double precision)))
);

CREATE VIEW public.ethos_links AS
 SELECT l.agent_id,
    l.a_table,
    l.a_id,
    l.b_table,
    l.b_id,
    (l.weight * exp(GREATEST((((- date_part('epoch'::text, (now() - l.weighted_at))) / (86400.0)::double precision) / s.links_tau_days), ('-700'::integer)::double precision))) AS weight,
    l.co_retrievals,
    l.useful_count,
    l.wrong_count,
    l.weighted_at,
    l.created_at,
    rank() OVER (PARTITION BY l.agent_id ORDER BY (l.weight * exp(GREATEST((((- date_part('epoch'::text, (now() - l.weighted_at))) / (86400.0)::double precision) / s.links_tau_days), ('-700'::integer)::double precision))) DESC) AS rank_in_agent
   FROM (public.memory_links l
     CROSS JOIN public.ethos_settings s)
  WHERE (l.fades_at > now());

CREATE VIEW public.ethos_ltp AS
 SELECT id AS daemon_id,
    role,
    heartbeat_at,
    ltp_backlog,
    ltp_dropped
   FROM public.daemons
  WHERE (stopped_at IS NULL);

CREATE VIEW public.ethos_most_retrieved AS
 SELECT table_name,
    id,
    agent_id,
    "left"(content, 80) AS content,
    retrieval_count,
    last_retrieved_at,
    salience
   FROM public.ethos_memories
  WHERE ((NOT pruned) AND (retrieval_count > 0))
  ORDER BY retrieval_count DESC, last_retrieved_at DESC;

CREATE VIEW public.ethos_own_agent_ids AS
 SELECT agent_id
   FROM public.ethos_agent_roles
  WHERE (role_name = CURRENT_USER);

CREATE VIEW public.ethos_policy_counts AS
 SELECT table_name,
    policy,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    avg(salience) FILTER (WHERE (NOT pruned)) AS avg_salience
   FROM public.ethos_memories m
  GROUP BY table_name, policy;

CREATE TABLE public.retrieval_queue (
    id bigint NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    kind text DEFAULT 'retrieval'::text NOT NULL,
    grp uuid,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT retrieval_queue_at_window CHECK (((at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT retrieval_queue_kind_check CHECK ((kind = ANY (ARRAY['retrieval'::text, 'surfaced'::text, 'useful'::text, 'wrong'::text]))),
    CONSTRAINT retrieval_queue_table_name_check CHECK ((table_name = ANY (ARRAY['memory_vectors'::text, 'episodic_traces'::text, 'semantic_facts'::text])))
);

CREATE VIEW public.ethos_retrieval_queue AS
 SELECT count(*) AS backlog,
    min(enqueued_at) AS oldest_enqueued_at,
    date_part('epoch'::text, (now() - min(enqueued_at))) AS oldest_age_seconds
   FROM public.retrieval_queue;

CREATE VIEW public.ethos_salience_by_age AS
 SELECT table_name,
    age_bucket,
    avg(salience) AS avg_salience,
    count(*) AS count
   FROM public.ethos_memories
  WHERE (NOT pruned)
  GROUP BY table_name, age_bucket;

CREATE TABLE public.sweep_runs (
    id bigint NOT NULL,
    trigger text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    swept_at timestamp with time zone NOT NULL,
    agent_id text,
    scanned bigint DEFAULT 0 NOT NULL,
    updated bigint DEFAULT 0 NOT NULL,
    pruned bigint DEFAULT 0 NOT NULL,
    tables jsonb DEFAULT '{}'::jsonb NOT NULL,
    error text,
    daemon_id text,
    mode text DEFAULT 'due'::text NOT NULL,
    owner text,
    CONSTRAINT sweep_runs_mode_check CHECK ((mode = ANY (ARRAY['due'::text, 'full'::text, 'prune'::text]))),
    CONSTRAINT sweep_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'completed'::text, 'interrupted'::text, 'failed'::text]))),
    CONSTRAINT sweep_runs_trigger_check CHECK ((trigger = ANY (ARRAY['manual'::text, 'daemon'::text, 'api'::text])))
);

CREATE VIEW public.ethos_sweep_history AS
 SELECT id,
    trigger,
    status,
    daemon_id,
    agent_id,
    started_at,
    finished_at,
    swept_at,
    (date_part('epoch'::text, (finished_at - started_at)) * (1000)::double precision) AS duration_ms,
    scanned,
    updated,
    pruned,
    ((scanned)::double precision / NULLIF(date_part('epoch'::text, (finished_at - started_at)), (0)::double precision)) AS rows_per_second,
    tables,
    error
   FROM public.sweep_runs
  ORDER BY started_at DESC;

CREATE TABLE public.importance_tiers (
    policy text NOT NULL,
    min_importance double precision NOT NULL,
    CONSTRAINT importance_tiers_min_importance_check CHECK (((min_importance >= (0)::double precision) AND (min_importance <= (1)::double precision)))
);

CREATE TABLE public.lexeme_stats (
    agent_id text NOT NULL,
    lexeme text NOT NULL,
    docs bigint NOT NULL,
    max_tf integer,
    min_length integer
);

CREATE TABLE public.ltp_flushes (
    id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.memory_revisions (
    id bigint NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    revised_at timestamp with time zone DEFAULT now() NOT NULL,
    revised_by text DEFAULT CURRENT_USER NOT NULL,
    metadata jsonb
);

ALTER TABLE public.memory_revisions ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.memory_revisions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.memory_vectors_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');

CREATE TABLE public.recoveries (
    id bigint NOT NULL,
    recovered_at timestamp with time zone DEFAULT now() NOT NULL,
    recovered_as_of timestamp with time zone NOT NULL,
    table_name text NOT NULL,
    selector jsonb NOT NULL,
    command text NOT NULL,
    recovered bigint NOT NULL,
    strength double precision NOT NULL
);

ALTER TABLE public.recoveries ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.recoveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.retrieval_activity (
    id boolean DEFAULT true NOT NULL,
    last_retrieval_at timestamp with time zone NOT NULL,
    CONSTRAINT retrieval_activity_id_check CHECK (id)
);

CREATE TABLE public.retrieval_dead_letters (
    id bigint NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    kind text NOT NULL,
    grp uuid,
    enqueued_at timestamp with time zone NOT NULL,
    reason text NOT NULL,
    dead_at timestamp with time zone DEFAULT now() NOT NULL,
    n integer DEFAULT 1 NOT NULL,
    CONSTRAINT retrieval_dead_letters_n_check CHECK ((n >= 1))
);

ALTER TABLE public.retrieval_queue ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.retrieval_queue_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.semantic_facts_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');

ALTER TABLE public.sweep_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.sweep_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY public.agent_policies
    ADD CONSTRAINT agent_policies_pkey PRIMARY KEY (agent_id);

ALTER TABLE ONLY public.agent_text_stats
    ADD CONSTRAINT agent_text_stats_pkey PRIMARY KEY (agent_id);

ALTER TABLE ONLY public.agent_vector_stats
    ADD CONSTRAINT agent_vector_stats_pkey PRIMARY KEY (agent_id);

ALTER TABLE ONLY public.consolidation_runs
    ADD CONSTRAINT consolidation_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.daemons
    ADD CONSTRAINT daemons_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.decay_policies
    ADD CONSTRAINT decay_policies_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.episodic_traces
    ADD CONSTRAINT episodic_traces_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.ethos_agent_roles
    ADD CONSTRAINT ethos_agent_roles_pkey PRIMARY KEY (role_name, agent_id);

ALTER TABLE ONLY public.ethos_settings
    ADD CONSTRAINT ethos_settings_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.importance_tiers
    ADD CONSTRAINT importance_tiers_pkey PRIMARY KEY (policy);

ALTER TABLE ONLY public.lexeme_stats
    ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (agent_id, lexeme);

ALTER TABLE ONLY public.ltp_flushes
    ADD CONSTRAINT ltp_flushes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.memory_links
    ADD CONSTRAINT memory_links_pkey PRIMARY KEY (a_id, b_id);

ALTER TABLE ONLY public.memory_revisions
    ADD CONSTRAINT memory_revisions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.memory_vectors
    ADD CONSTRAINT memory_vectors_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recoveries
    ADD CONSTRAINT recoveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.retrieval_activity
    ADD CONSTRAINT retrieval_activity_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.retrieval_dead_letters
    ADD CONSTRAINT retrieval_dead_letters_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.retrieval_queue
    ADD CONSTRAINT retrieval_queue_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.semantic_facts
    ADD CONSTRAINT semantic_facts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sweep_runs
    ADD CONSTRAINT sweep_runs_pkey PRIMARY KEY (id);

CREATE INDEX consolidation_runs_running_idx ON public.consolidation_runs USING btree (id) WHERE (status = 'running'::text);

CREATE INDEX consolidation_runs_started_at_idx ON public.consolidation_runs USING btree (started_at);

CREATE INDEX daemons_heartbeat_at_idx ON public.daemons USING btree (heartbeat_at);

CREATE INDEX episodic_traces_agent_live_idx ON public.episodic_traces USING btree (agent_id, id) WHERE (NOT pruned);

CREATE UNIQUE INDEX episodic_traces_client_key_idx ON public.episodic_traces USING btree (agent_id, client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));

CREATE INDEX episodic_traces_content_key_idx ON public.episodic_traces USING btree (agent_id, content_key) WHERE (NOT pruned);

CREATE INDEX episodic_traces_content_tsv_idx ON public.episodic_traces USING gin (content_tsv) WHERE (NOT pruned);

CREATE INDEX episodic_traces_due_idx ON public.episodic_traces_due USING btree (prune, slice, at);

CREATE INDEX episodic_traces_live_id_idx ON public.episodic_traces USING btree (id) WHERE (NOT pruned);

CREATE INDEX episodic_traces_pruned_at_idx ON public.episodic_traces USING btree (pruned_at) WHERE pruned;

CREATE INDEX ltp_flushes_applied_at_idx ON public.ltp_flushes USING btree (applied_at);

CREATE INDEX memory_links_b_idx ON public.memory_links USING btree (b_id);

CREATE INDEX memory_links_fades_at_idx ON public.memory_links USING btree (fades_at);

CREATE INDEX memory_revisions_agent_idx ON public.memory_revisions USING btree (agent_id);

CREATE INDEX memory_revisions_memory_idx ON public.memory_revisions USING btree (table_name, memory_id);

CREATE INDEX memory_vectors_agent_live_idx ON public.memory_vectors USING btree (agent_id, id) WHERE (NOT pruned);

CREATE UNIQUE INDEX memory_vectors_client_key_idx ON public.memory_vectors USING btree (agent_id, client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));

CREATE INDEX memory_vectors_content_key_idx ON public.memory_vectors USING btree (agent_id, content_key) WHERE (NOT pruned);

CREATE INDEX memory_vectors_content_tsv_idx ON public.memory_vectors USING gin (content_tsv) WHERE (NOT pruned);

CREATE INDEX memory_vectors_due_idx ON public.memory_vectors_due USING btree (prune, slice, at);

CREATE INDEX memory_vectors_embedding_hnsw ON public.memory_vectors USING hnsw (embedding public.vector_cosine_ops) WHERE (NOT pruned);

CREATE INDEX memory_vectors_live_id_idx ON public.memory_vectors USING btree (id) WHERE (NOT pruned);

CREATE INDEX memory_vectors_pruned_at_idx ON public.memory_vectors USING btree (pruned_at) WHERE pruned;

CREATE INDEX memory_vectors_source_idx ON public.memory_vectors USING btree (source_type, source_id) WHERE (source_id IS NOT NULL);

CREATE INDEX semantic_facts_agent_live_idx ON public.semantic_facts USING btree (agent_id, id) WHERE (NOT pruned);

CREATE UNIQUE INDEX semantic_facts_client_key_idx ON public.semantic_facts USING btree (agent_id, client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));

CREATE INDEX semantic_facts_content_key_idx ON public.semantic_facts USING btree (agent_id, content_key) WHERE (NOT pruned);

CREATE INDEX semantic_facts_content_tsv_idx ON public.semantic_facts USING gin (content_tsv) WHERE (NOT pruned);

CREATE INDEX semantic_facts_due_idx ON public.semantic_facts_due USING btree (prune, slice, at);

CREATE INDEX semantic_facts_live_id_idx ON public.semantic_facts USING btree (id) WHERE (NOT pruned);

CREATE INDEX semantic_facts_pruned_at_idx ON public.semantic_facts USING btree (pruned_at) WHERE pruned;

CREATE INDEX sweep_runs_running_idx ON public.sweep_runs USING btree (id) WHERE (status = 'running'::text);

CREATE INDEX sweep_runs_started_at_idx ON public.sweep_runs USING btree (started_at);

CREATE TRIGGER consolidation_runs_finished_is_final BEFORE UPDATE ON public.consolidation_runs FOR EACH ROW EXECUTE FUNCTION public.ethos_finished_runs_are_final();

CREATE TRIGGER episodic_traces_check_new_rows AFTER INSERT ON public.episodic_traces REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_check_new_rows();

CREATE TRIGGER episodic_traces_content_derived BEFORE INSERT OR UPDATE OF content, agent_id ON public.episodic_traces FOR EACH ROW EXECUTE FUNCTION public.ethos_content_derived();

CREATE TRIGGER episodic_traces_drop_revisions AFTER DELETE ON public.episodic_traces REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_drop_revisions();

CREATE TRIGGER episodic_traces_hint_new_rows AFTER INSERT ON public.episodic_traces REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_hint_new_rows();

CREATE TRIGGER episodic_traces_init_decay_state BEFORE INSERT ON public.episodic_traces FOR EACH ROW EXECUTE FUNCTION public.ethos_init_decay_state();

CREATE TRIGGER episodic_traces_keep_revision AFTER UPDATE OF content, metadata ON public.episodic_traces FOR EACH ROW WHEN (((old.content IS DISTINCT FROM new.content) OR (old.metadata IS DISTINCT FROM new.metadata))) EXECUTE FUNCTION public.ethos_keep_revision();

CREATE TRIGGER episodic_traces_text_stats_delete AFTER DELETE ON public.episodic_traces REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER episodic_traces_text_stats_insert AFTER INSERT ON public.episodic_traces REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER episodic_traces_text_stats_truncate AFTER TRUNCATE ON public.episodic_traces FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER episodic_traces_text_stats_update AFTER UPDATE OF content, agent_id, content_tsv ON public.episodic_traces FOR EACH ROW WHEN ((old.content_tsv <> new.content_tsv)) EXECUTE FUNCTION public.ethos_text_stats_updated();

CREATE TRIGGER episodic_traces_vector_follows AFTER UPDATE OF pruned ON public.episodic_traces FOR EACH ROW WHEN ((old.pruned <> new.pruned)) EXECUTE FUNCTION public.ethos_source_pruned();

CREATE TRIGGER memory_vectors_check_new_rows AFTER INSERT ON public.memory_vectors REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_check_new_rows();

CREATE TRIGGER memory_vectors_content_derived BEFORE INSERT OR UPDATE OF content, agent_id ON public.memory_vectors FOR EACH ROW EXECUTE FUNCTION public.ethos_content_derived();

CREATE TRIGGER memory_vectors_drop_revisions AFTER DELETE ON public.memory_vectors REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_drop_revisions();

CREATE TRIGGER memory_vectors_follow_source BEFORE INSERT OR UPDATE OF source_type, source_id, agent_id ON public.memory_vectors FOR EACH ROW WHEN ((new.source_id IS NOT NULL)) EXECUTE FUNCTION public.ethos_vector_follows_source();

CREATE TRIGGER memory_vectors_hint_new_rows AFTER INSERT ON public.memory_vectors REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_hint_new_rows();

CREATE TRIGGER memory_vectors_init_decay_state BEFORE INSERT ON public.memory_vectors FOR EACH ROW EXECUTE FUNCTION public.ethos_init_decay_state();

CREATE TRIGGER memory_vectors_keep_revision AFTER UPDATE OF content, metadata ON public.memory_vectors FOR EACH ROW WHEN (((old.content IS DISTINCT FROM new.content) OR (old.metadata IS DISTINCT FROM new.metadata))) EXECUTE FUNCTION public.ethos_keep_revision();

CREATE TRIGGER memory_vectors_stay_with_source BEFORE UPDATE OF policy ON public.memory_vectors FOR EACH ROW WHEN (((new.source_id IS NOT NULL) AND (new.policy <> 'permanent'::text))) EXECUTE FUNCTION public.ethos_vector_stays_with_source();

CREATE TRIGGER memory_vectors_text_stats_delete AFTER DELETE ON public.memory_vectors REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER memory_vectors_text_stats_insert AFTER INSERT ON public.memory_vectors REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER memory_vectors_text_stats_truncate AFTER TRUNCATE ON public.memory_vectors FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER memory_vectors_text_stats_update AFTER UPDATE OF content, agent_id, content_tsv, source_id ON public.memory_vectors FOR EACH ROW WHEN (((old.content_tsv <> new.content_tsv) OR (old.source_id IS DISTINCT FROM new.source_id))) EXECUTE FUNCTION public.ethos_text_stats_updated();

CREATE TRIGGER memory_vectors_tier_source AFTER INSERT ON public.memory_vectors FOR EACH ROW WHEN ((new.source_id IS NOT NULL)) EXECUTE FUNCTION public.ethos_tier_by_vector();

CREATE TRIGGER memory_vectors_vector_stats_delete AFTER DELETE ON public.memory_vectors REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_vector_stats_changed();

CREATE TRIGGER memory_vectors_vector_stats_insert AFTER INSERT ON public.memory_vectors REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_vector_stats_changed();

CREATE TRIGGER memory_vectors_vector_stats_truncate AFTER TRUNCATE ON public.memory_vectors FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_vector_stats_changed();

CREATE TRIGGER memory_vectors_vector_stats_update AFTER UPDATE OF embedding, agent_id ON public.memory_vectors FOR EACH ROW WHEN (((old.embedding OPERATOR(public.<>) new.embedding) OR (old.agent_id <> new.agent_id))) EXECUTE FUNCTION public.ethos_vector_stats_updated();

CREATE TRIGGER semantic_facts_check_new_rows AFTER INSERT ON public.semantic_facts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_check_new_rows();

CREATE TRIGGER semantic_facts_content_derived BEFORE INSERT OR UPDATE OF content, agent_id ON public.semantic_facts FOR EACH ROW EXECUTE FUNCTION public.ethos_content_derived();

CREATE TRIGGER semantic_facts_drop_revisions AFTER DELETE ON public.semantic_facts REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_drop_revisions();

CREATE TRIGGER semantic_facts_hint_new_rows AFTER INSERT ON public.semantic_facts REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_hint_new_rows();

CREATE TRIGGER semantic_facts_init_decay_state BEFORE INSERT ON public.semantic_facts FOR EACH ROW EXECUTE FUNCTION public.ethos_init_decay_state();

CREATE TRIGGER semantic_facts_keep_revision AFTER UPDATE OF content, metadata ON public.semantic_facts FOR EACH ROW WHEN (((old.content IS DISTINCT FROM new.content) OR (old.metadata IS DISTINCT FROM new.metadata))) EXECUTE FUNCTION public.ethos_keep_revision();

CREATE TRIGGER semantic_facts_text_stats_delete AFTER DELETE ON public.semantic_facts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER semantic_facts_text_stats_insert AFTER INSERT ON public.semantic_facts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER semantic_facts_text_stats_truncate AFTER TRUNCATE ON public.semantic_facts FOR EACH STATEMENT EXECUTE FUNCTION public.ethos_text_stats_changed();

CREATE TRIGGER semantic_facts_text_stats_update AFTER UPDATE OF content, agent_id, content_tsv ON public.semantic_facts FOR EACH ROW WHEN ((old.content_tsv <> new.content_tsv)) EXECUTE FUNCTION public.ethos_text_stats_updated();

CREATE TRIGGER semantic_facts_vector_follows AFTER UPDATE OF pruned ON public.semantic_facts FOR EACH ROW WHEN ((old.pruned <> new.pruned)) EXECUTE FUNCTION public.ethos_source_pruned();

CREATE TRIGGER sweep_runs_finished_is_final BEFORE UPDATE ON public.sweep_runs FOR EACH ROW EXECUTE FUNCTION public.ethos_finished_runs_are_final();

ALTER TABLE ONLY public.agent_policies
    ADD CONSTRAINT agent_policies_policy_fkey FOREIGN KEY (policy) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.decay_policies
    ADD CONSTRAINT decay_policies_promote_to_fkey FOREIGN KEY (promote_to) REFERENCES public.decay_policies(name) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.episodic_traces
    ADD CONSTRAINT episodic_traces_policy_fkey FOREIGN KEY (policy) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.ethos_settings
    ADD CONSTRAINT ethos_settings_default_policy_fkey FOREIGN KEY (default_policy) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.ethos_settings
    ADD CONSTRAINT ethos_settings_importance_otherwise_fkey FOREIGN KEY (importance_otherwise) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.importance_tiers
    ADD CONSTRAINT importance_tiers_policy_fkey FOREIGN KEY (policy) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.memory_vectors
    ADD CONSTRAINT memory_vectors_policy_fkey FOREIGN KEY (policy) REFERENCES public.decay_policies(name);

ALTER TABLE ONLY public.semantic_facts
    ADD CONSTRAINT semantic_facts_policy_fkey FOREIGN KEY (policy) REFERENCES public.decay_policies(name);

REVOKE ALL ON FUNCTION public.ethos_drop_revisions() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_hint_new_rows() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_keep_revision() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_text_stats_analyze() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_text_stats_changed() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_text_stats_rebuild() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_text_stats_updated() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_tier_by_vector() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_vector_stats_add(agents text[], embeddings public.vector[], sign integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_vector_stats_changed() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_vector_stats_rebuild() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.ethos_vector_stats_updated() FROM PUBLIC;

GRANT SELECT ON TABLE public.ethos_own_agent_ids TO PUBLIC;

INSERT INTO public.decay_policies (name, curve, base_tau_days, ltp_multiplier, max_tau_days,
    frequency_weight, emotional_weight, prune_threshold, power_exponent, never_decays,
    lifetime_days)
VALUES ('standard', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, false, 7 * ln(20)),
       ('permanent', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, true, NULL);
INSERT INTO public.ethos_settings (default_policy, importance_otherwise, at_risk_margin)
VALUES ('standard', 'standard', 0.05);
