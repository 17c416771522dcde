-- 0056: a statement's sources pruned or recovered take their vectors with them at once
-- (see 0056_sources_pruned_at_once.py).
-- (A distributed table takes a trigger only with this set; elsewhere it is a no-op.)
SET LOCAL citus.enable_unsafe_triggers = on;

DROP TRIGGER IF EXISTS episodic_traces_pruned ON episodic_traces;
DROP TRIGGER IF EXISTS semantic_facts_pruned ON semantic_facts;

-- Memories pruned or recovered by a statement: their vectors follow them, in one UPDATE.
-- A trigger with transition tables takes no column list, so this one runs after every
-- UPDATE of the table (a sweep's batch, an LTP flush) and returns at once unless some
-- row's pruned changed. Row by row (an UPDATE of the vectors a source), pruning 500
-- facts took 106 ms on one server against 27, and 238 ms against 21 on a Citus cluster.
-- As in ethos_rows_added, the rows are read into arrays first and the UPDATE names
-- their agents.
CREATE OR REPLACE FUNCTION ethos_source_pruned() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    r record;  -- the rows whose pruned changed: ids, agents (each agent once), new state
BEGIN
    -- (most UPDATEs, a put's or LTP's, touch live memories only: 0.035 ms less a statement)
    IF NOT EXISTS (SELECT FROM became WHERE pruned UNION ALL SELECT FROM was WHERE pruned) THEN
        RETURN NULL;
    END IF;
    -- (grouped, not joined: the plan is kept across calls, and a nested loop chosen for
    -- a batch of 500 rows would compare every pair of an UPDATE of 100,000)
    SELECT array_agg(c.id) AS ids, array_agg(c.agent_id) AS owners,
           array_agg(DISTINCT c.agent_id) AS agents, array_agg(c.pruned) AS pruned,
           array_agg(c.pruned_at) AS pruned_at, array_agg(c.prune_reason) AS reasons
    INTO r
    FROM (SELECT u.agent_id, u.id, bool_or(u.pruned) FILTER (WHERE u.new) AS pruned,
                 max(u.pruned_at) FILTER (WHERE u.new) AS pruned_at,
                 max(u.prune_reason) FILTER (WHERE u.new) AS prune_reason
          FROM (SELECT agent_id, id, pruned, pruned_at, prune_reason, true AS new
                FROM became
                UNION ALL
                SELECT agent_id, id, pruned, NULL, NULL, false FROM was) AS u
          GROUP BY u.agent_id, u.id
          HAVING bool_or(u.pruned) <> bool_and(u.pruned)) AS c;
    IF r.ids IS NULL THEN
        RETURN NULL;
    END IF;

    UPDATE memory_vectors AS v
    SET pruned = s.pruned, pruned_at = s.pruned_at, prune_reason = s.reason
    FROM unnest(r.ids, r.owners, r.pruned, r.pruned_at, r.reasons)
         AS s (id, agent, pruned, pruned_at, reason)
    WHERE v.agent_id = ANY (r.agents) AND v.source_type = TG_ARGV[0]
      AND v.agent_id = s.agent AND v.source_id = s.id AND v.pruned <> s.pruned;
    RETURN NULL;
END
$$;

CREATE TRIGGER episodic_traces_pruned
    AFTER UPDATE ON episodic_traces REFERENCING OLD TABLE AS was NEW TABLE AS became
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_source_pruned('episodic_traces');
CREATE TRIGGER semantic_facts_pruned
    AFTER UPDATE ON semantic_facts REFERENCING OLD TABLE AS was NEW TABLE AS became
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_source_pruned('semantic_facts');
