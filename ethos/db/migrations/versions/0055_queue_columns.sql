-- 0055: an agent role queues events of its own memories, and no group of them (see
-- 0055_queue_columns.py). A database without agent roles has no such policy: nothing
-- to do.
DO $$
DECLARE
    agents regrole;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_policy
                   WHERE polrelid = 'retrieval_queue'::regclass AND polname = 'ethos_agent') THEN
        RETURN;
    END IF;
    ALTER POLICY ethos_agent ON retrieval_queue
        WITH CHECK (agent_id = ANY (ethos_own_agents())
                    AND ethos_memory_is_visible(table_name, memory_id)
                    AND at <= now() + interval '5 minutes');
    FOR agents IN SELECT r::regrole FROM pg_policy AS p, unnest(p.polroles) AS r
                  WHERE p.polrelid = 'retrieval_queue'::regclass AND p.polname = 'ethos_agent'
                    AND r <> 0 LOOP
        EXECUTE format('REVOKE INSERT ON retrieval_queue FROM %s', agents);
        EXECUTE format('GRANT INSERT (agent_id, table_name, memory_id, at, kind)'
                       ' ON retrieval_queue TO %s', agents);
    END LOOP;
END
$$;
