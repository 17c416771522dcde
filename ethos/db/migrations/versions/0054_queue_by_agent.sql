-- 0054: a queued retrieval names its agent where the caller knows it (see
-- 0054_queue_by_agent.py).
ALTER TABLE retrieval_queue ADD COLUMN agent_id text;
ALTER TABLE retrieval_dead_letters ADD COLUMN agent_id text;

DROP FUNCTION ethos_record_retrieval(text, uuid[], timestamp with time zone);
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
