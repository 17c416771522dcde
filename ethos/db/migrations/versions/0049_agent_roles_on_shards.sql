-- 0049: an agent role's row policies work on a Citus worker (see 0049_agent_roles_on_shards.py).
ALTER TABLE ethos_agent_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY ethos_own ON ethos_agent_roles FOR SELECT USING (role_name = CURRENT_USER);
GRANT SELECT ON TABLE ethos_agent_roles TO PUBLIC;

CREATE OR REPLACE FUNCTION ethos_own_agents() RETURNS text[]
    LANGUAGE sql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $$
    SELECT coalesce(array_agg(agent_id), '{}') FROM ethos_agent_roles WHERE role_name = CURRENT_USER
$$;

DROP VIEW ethos_own_agent_ids;

-- PL/pgSQL: Citus cannot plan an SQL function's parameter inside its query.
CREATE OR REPLACE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
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
