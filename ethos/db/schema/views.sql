-- Monitoring views: what an operator reads with plain SQL (runbooks/operations.md).

CREATE VIEW ethos_memories AS
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
           FROM memory_vectors
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
           FROM episodic_traces
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
           FROM semantic_facts) m;

CREATE VIEW ethos_agent_counts AS
 SELECT table_name,
    agent_id,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM ethos_memories
  GROUP BY table_name, agent_id;

CREATE VIEW ethos_at_risk AS
 SELECT m.table_name,
    m.id,
    m.agent_id,
    "left"(m.content, 80) AS content,
    COALESCE(m.confidence, m.salience) AS value,
    p.prune_threshold,
    m.policy,
    m.retrieval_count,
    m.last_retrieved_at
   FROM ((ethos_memories m
     JOIN decay_policies p ON ((p.name = m.policy)))
     CROSS JOIN ethos_settings s)
  WHERE ((NOT m.pruned) AND (NOT m.pinned) AND (NOT p.never_decays) AND (COALESCE(m.confidence, m.salience) < (p.prune_threshold + s.at_risk_margin)))
  ORDER BY COALESCE(m.confidence, m.salience);

CREATE VIEW ethos_lifecycle_runs AS
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
   FROM lifecycle_runs
  ORDER BY started_at DESC;

CREATE VIEW ethos_counts AS
 SELECT table_name,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM ethos_memories
  GROUP BY table_name;

CREATE VIEW ethos_links AS
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
   FROM (memory_links l
     CROSS JOIN ethos_settings s)
  WHERE (l.fades_at > now());

CREATE VIEW ethos_ltp AS
 SELECT id AS daemon_id,
    role,
    heartbeat_at,
    ltp_backlog,
    ltp_dropped
   FROM daemons
  WHERE (stopped_at IS NULL);

CREATE VIEW ethos_most_retrieved AS
 SELECT table_name,
    id,
    agent_id,
    "left"(content, 80) AS content,
    retrieval_count,
    last_retrieved_at,
    salience
   FROM ethos_memories
  WHERE ((NOT pruned) AND (retrieval_count > 0))
  ORDER BY retrieval_count DESC, last_retrieved_at DESC;

CREATE VIEW ethos_policy_counts AS
 SELECT table_name,
    policy,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    avg(salience) FILTER (WHERE (NOT pruned)) AS avg_salience
   FROM ethos_memories m
  GROUP BY table_name, policy;

CREATE VIEW ethos_retrieval_queue AS
 SELECT count(*) AS backlog,
    min(enqueued_at) AS oldest_enqueued_at,
    date_part('epoch'::text, (now() - min(enqueued_at))) AS oldest_age_seconds
   FROM retrieval_queue;

CREATE VIEW ethos_salience_by_age AS
 SELECT table_name,
    age_bucket,
    avg(salience) AS avg_salience,
    count(*) AS count
   FROM ethos_memories
  WHERE (NOT pruned)
  GROUP BY table_name, age_bucket;

CREATE VIEW ethos_sweep_history AS
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
   FROM sweep_runs
  ORDER BY started_at DESC;
