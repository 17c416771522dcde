-- What an agent's own PostgreSQL role may reach: its agents (ethos_agent_roles), the
-- memories it can see, and the one door for recording retrievals from plain SQL.
-- `ethos roles` creates the roles and the row policies that call these functions.

-- On a Citus worker the row policies call it inside the shard's query, where Citus
-- refuses a read of another table unless told: ethos_agent_roles is a reference table,
-- whole on every node, so the read is local and right wherever the shard moves.
CREATE FUNCTION ethos_own_agents() RETURNS text[]
    LANGUAGE sql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $$
    SELECT coalesce(array_agg(agent_id), '{}') FROM ethos_agent_roles WHERE role_name = CURRENT_USER
$$;

-- Whether the caller sees a memory of the id (of `agent`'s, where one is named). The
-- queue's row policy names the event's agent: on a Citus cluster it runs on the queue's
-- shard, and reads the agent's memories in the colocated shard there (the setting lets a
-- statement on a shard run another, which is right where it names one agent). PL/pgSQL,
-- and the table's statement made for the values (EXECUTE): Citus routes a statement by
-- the agent it names, and cannot plan an SQL function's parameter inside its query.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid, agent text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $_$
DECLARE
    found boolean;
BEGIN
    IF table_name NOT IN ('memory_vectors', 'episodic_traces', 'semantic_facts') THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM %I AS m'
                   ' WHERE m.id = $1 AND ($2::text IS NULL OR m.agent_id = $2))', table_name)
        INTO found USING id, agent;
    RETURN found;
END
$_$;

-- The same, of any agent.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN ethos_memory_is_visible(table_name, id, NULL);
END
$$;

-- The one door for recording retrievals from plain SQL: events of `agent`'s memories of
-- the ids (none named: of every memory of each id), applied by the daemon's drain; it
-- returns how many it queued. An id of no such memory, or of none the caller sees (an
-- agent role, under row security), is left out. Each event is named by its memory's
-- agent and keyed by this call and its place in it: Citus writes the set on the agents'
-- shards as one INSERT ... SELECT there, which a key from a sequence or a random
-- default would make a COPY through the coordinator, and row security refuses COPY.
CREATE FUNCTION ethos_record_retrieval(table_name text, ids uuid[], at timestamp with time zone DEFAULT now(), agent text DEFAULT NULL) RETURNS integer
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
    EXECUTE format(
        'INSERT INTO retrieval_queue (agent_id, id, table_name, memory_id, at)
         SELECT m.agent_id, md5($5::text || e.n)::uuid, $1, m.id, $2
         FROM unnest($3) WITH ORDINALITY AS e (id, n)
         JOIN %I AS m ON m.id = e.id AND ($4::text IS NULL OR m.agent_id = $4)',
        target) USING target, at, ids, agent, gen_random_uuid();
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$_$;

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
                    word_prior TO ethos_definer;
    GRANT SELECT, UPDATE (auto_importance, auto_particularity, policy)
        ON episodic_traces, semantic_facts TO ethos_definer;
    GRANT SELECT, INSERT ON episodic_traces_due, semantic_facts_due, memory_vectors_due
        TO ethos_definer;
    GRANT SELECT, INSERT, UPDATE, DELETE ON lexeme_stats, agent_text_stats, agent_vector_stats
        TO ethos_definer;
    GRANT SELECT, INSERT, DELETE ON memory_revisions TO ethos_definer;
    GRANT SELECT, DELETE ON memory_embeddings TO ethos_definer;
    ALTER FUNCTION ethos_vector_stats_add(text[], vector[], integer) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_text_stats_add(text[], tsvector[], integer[]) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_write_row() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_added() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_removed() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_embeddings_written() OWNER TO ethos_definer;
    IF current_setting('server_version_num')::int >= 170000 THEN
        EXECUTE 'GRANT MAINTAIN ON lexeme_stats, agent_text_stats TO ethos_definer';
        ALTER FUNCTION ethos_text_stats_analyze() OWNER TO ethos_definer;
    ELSE
        GRANT EXECUTE ON FUNCTION ethos_text_stats_analyze() TO ethos_definer;
    END IF;
END
$do$;
