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

-- PL/pgSQL: Citus cannot plan an SQL function's parameter inside its query.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
#variable_conflict use_variable
BEGIN
    RETURN CASE table_name
        WHEN 'memory_vectors' THEN EXISTS (SELECT 1 FROM memory_vectors AS m WHERE m.id = id)
        WHEN 'episodic_traces' THEN EXISTS (SELECT 1 FROM episodic_traces AS m WHERE m.id = id)
        WHEN 'semantic_facts' THEN EXISTS (SELECT 1 FROM semantic_facts AS m WHERE m.id = id)
        ELSE false
    END;
END
$$;

-- The one door for recording retrievals from plain SQL: events of `agent`'s memories of
-- the ids (none named: of every memory of each id), applied by the daemon's drain; it
-- returns how many it queued. Under row security (an agent role), an id the caller cannot
-- see is left out when no agent is named (the events are named by the memories found),
-- and refuses the whole call when one is (the queue's row policy checks each event).
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
    IF agent IS NULL AND row_security_active(target) THEN
        -- a connection under row security: the memories of the ids it sees, each event
        -- named by its memory's agent (an agent role's queue takes its own agents' only)
        EXECUTE format(
            'INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at)
             SELECT m.agent_id, $1, m.id, $2 FROM unnest($3) AS e (id) JOIN %I AS m ON m.id = e.id',
            target) USING target, at, ids;
    ELSE
        INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at)
        SELECT agent, target, memory_id, at FROM unnest(ids) AS memory_id
        WHERE memory_id IS NOT NULL;
    END IF;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$_$;
