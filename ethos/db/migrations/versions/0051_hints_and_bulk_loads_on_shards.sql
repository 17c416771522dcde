-- 0051: hints and bulk loads on a Citus shard (see 0051_hints_and_bulk_loads_on_shards.py).
-- (A distributed table takes a trigger only with this set; elsewhere it is a no-op.)
SET LOCAL citus.enable_unsafe_triggers = on;

CREATE FUNCTION ethos_hint_made() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.made := pg_current_xact_id();
    RETURN NEW;
END
$$;

ALTER TABLE episodic_traces_due ALTER COLUMN made DROP DEFAULT;
ALTER TABLE semantic_facts_due ALTER COLUMN made DROP DEFAULT;
ALTER TABLE memory_vectors_due ALTER COLUMN made DROP DEFAULT;

CREATE TRIGGER episodic_traces_due_made BEFORE INSERT ON episodic_traces_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER semantic_facts_due_made BEFORE INSERT ON semantic_facts_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER memory_vectors_due_made BEFORE INSERT ON memory_vectors_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();

CREATE OR REPLACE FUNCTION ethos_rows_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    r record;  -- the rows added: their agents, each once; the live ones' ids and agents
    k float8;  -- how much particularity raises an importance (vectors only)
    v record;  -- vectors of episodes or facts: their sources, and how particular each is
    written record;
BEGIN
    SELECT array_agg(DISTINCT a.agent_id) AS agents,
           array_agg(a.id) FILTER (WHERE NOT a.pruned) AS ids,
           array_agg(a.agent_id) FILTER (WHERE NOT a.pruned) AS owners
    INTO r FROM added AS a;
    IF r.agents IS NULL THEN  -- an upsert that only updated: nothing to hint or count, and
        RETURN NULL;          -- a statement about no agent Citus cannot route
    END IF;

    -- 1. A vector of an episode or fact raises its source's automatic importance by how
    --    far it lies from its agent's other vectors (before they count it), once, while
    --    the source is as its insert left it. (Episodes and facts read no setting.) The
    --    new policy comes with the values (Citus refuses a STABLE function of the row
    --    written inside an UPDATE); the conditions hold on the row written.
    IF memory_table = 'memory_vectors' THEN
        k := (SELECT s.auto_importance_particularity FROM ethos_settings AS s);
    END IF;
    IF k > 0 THEN
        SELECT array_agg(a.source_type) AS types, array_agg(a.source_id) AS ids,
               array_agg(a.agent_id) AS agents,
               array_agg(ethos_particularity(a.agent_id, a.embedding)) AS ps
        INTO v FROM added AS a WHERE a.source_id IS NOT NULL;
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
    END IF;

    -- 2. Hints: the sweep looks at the live rows added at once (their physical places,
    --    which the statement's rows do not carry, read back by a probe by key for each:
    --    a join could hash the whole table where an ANALYZE during a bulk load left the
    --    planner sure it is empty), in one statement: a statement's start is much of
    --    what one row costs. A hint names an agent of its rows.
    IF memory_table = 'episodic_traces' THEN
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

    -- 3. The statistics count the rows added, in one pass (and how many there were);
    --    vectors of episodes or facts alone count no words, and call for none.
    IF memory_table = 'memory_vectors' THEN
        SELECT CASE WHEN bool_or(source_id IS NULL) THEN
                   ethos_text_stats_add(array_agg(agent_id) FILTER (WHERE source_id IS NULL),
                                        array_agg(content_tsv) FILTER (WHERE source_id IS NULL),
                                        array_agg(1) FILTER (WHERE source_id IS NULL))
               END AS added,
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
