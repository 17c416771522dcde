-- 0057: the retrieval queue keyed by agent (see 0057_queue_by_agent_key.py). Run again on
-- a database at 0057 (a test that re-runs earlier migrations does), it changes nothing.

-- The functions first: Citus runs no function command after a read of many shards in
-- the same transaction.
CREATE OR REPLACE FUNCTION ethos_memory_is_visible(table_name text, id uuid, agent text) RETURNS boolean
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

CREATE OR REPLACE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN ethos_memory_is_visible(table_name, id, NULL);
END
$$;

CREATE OR REPLACE FUNCTION ethos_record_retrieval(table_name text, ids uuid[], at timestamp with time zone DEFAULT now(), agent text DEFAULT NULL) RETURNS integer
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

-- The queue's row policy, where `ethos roles` made one, names the event's agent.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_policy
               WHERE polrelid = 'retrieval_queue'::regclass AND polname = 'ethos_agent') THEN
        ALTER POLICY ethos_agent ON retrieval_queue
            WITH CHECK (agent_id = ANY (ethos_own_agents())
                        AND ethos_memory_is_visible(table_name, memory_id, agent_id)
                        AND at <= now() + interval '5 minutes');
    END IF;
END
$$;

-- Dead letters key themselves: the queue's key is no longer a sequence.
DO $$
BEGIN
    IF (SELECT atttypid FROM pg_attribute
        WHERE attrelid = 'retrieval_dead_letters'::regclass AND attname = 'id') = 'bigint'::regtype
    THEN
        ALTER TABLE retrieval_dead_letters ALTER COLUMN id TYPE uuid USING gen_random_uuid();
        ALTER TABLE retrieval_dead_letters ALTER COLUMN id SET DEFAULT gen_random_uuid();
    END IF;
    IF (SELECT atttypid FROM pg_attribute
        WHERE attrelid = 'retrieval_queue'::regclass AND attname = 'id') = 'bigint'::regtype
    THEN
        ALTER TABLE retrieval_queue ALTER COLUMN id DROP IDENTITY IF EXISTS;
        ALTER TABLE retrieval_queue ALTER COLUMN id TYPE uuid USING gen_random_uuid();
        ALTER TABLE retrieval_queue ALTER COLUMN id SET DEFAULT gen_random_uuid();
    END IF;
END
$$;

-- An event that named no agent reached every memory of its id: it is queued again for
-- each, named by the memory's agent; one whose memory is gone (no event named for it
-- now) is set aside. The unnamed events are read first: Citus joins no table of the
-- coordinator to a distributed one directly.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM retrieval_queue WHERE agent_id IS NULL) THEN
        RETURN;
    END IF;
    INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at, kind, grp, enqueued_at)
    WITH unnamed AS MATERIALIZED (
        SELECT table_name, memory_id, at, kind, grp, enqueued_at
        FROM retrieval_queue WHERE agent_id IS NULL
    )
    SELECT m.agent_id, q.table_name, q.memory_id, q.at, q.kind, q.grp, q.enqueued_at
    FROM unnamed AS q
    JOIN (SELECT 'memory_vectors' AS table_name, agent_id, id FROM memory_vectors
          UNION ALL SELECT 'episodic_traces', agent_id, id FROM episodic_traces
          UNION ALL SELECT 'semantic_facts', agent_id, id FROM semantic_facts) AS m
      ON m.table_name = q.table_name AND m.id = q.memory_id;
    INSERT INTO retrieval_dead_letters
        (table_name, memory_id, at, kind, grp, enqueued_at, reason)
    SELECT q.table_name, q.memory_id, q.at, q.kind, q.grp, q.enqueued_at,
           'no memory of the id: the event named no agent (migration 0057)'
    FROM retrieval_queue AS q
    WHERE q.agent_id IS NULL
      AND NOT EXISTS (SELECT FROM retrieval_queue AS named
                      WHERE named.agent_id IS NOT NULL AND named.table_name = q.table_name
                        AND named.memory_id = q.memory_id
                        AND named.enqueued_at = q.enqueued_at);
    DELETE FROM retrieval_queue WHERE agent_id IS NULL;
END
$$;

ALTER TABLE retrieval_queue ALTER COLUMN agent_id SET NOT NULL;

ALTER TABLE retrieval_queue DROP CONSTRAINT retrieval_queue_pkey,
    ADD CONSTRAINT retrieval_queue_pkey PRIMARY KEY (agent_id, id);

CREATE INDEX IF NOT EXISTS retrieval_queue_enqueued_at_idx ON retrieval_queue USING btree (enqueued_at);

-- An agent role names the id of an event ethos_record_retrieval writes for it.
DO $$
DECLARE
    agents regrole;
BEGIN
    FOR agents IN SELECT r::regrole FROM pg_policy AS p, unnest(p.polroles) AS r
                  WHERE p.polrelid = 'retrieval_queue'::regclass AND p.polname = 'ethos_agent'
                    AND r <> 0 LOOP
        EXECUTE format('GRANT INSERT (id) ON retrieval_queue TO %s', agents);
    END LOOP;
END
$$;
