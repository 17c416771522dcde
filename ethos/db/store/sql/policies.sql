-- The statements of policies and settings: upserts, assignment, moves, tiers.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name. A moment an upsert sets comes from the row it proposes
-- (excluded.*, the column's default): Citus refuses now() in DO UPDATE SET.

-- name: lock_settings_apply
SELECT pg_advisory_xact_lock(%(key)s);

-- name: upsert_policies
-- %(policies)s: a JSON array of policies.sql_row(). A row is written only when it
-- differs, so changed_at says when a policy's curve or promotions last changed.
INSERT INTO decay_policies AS d (
    name, curve, base_tau_days, ltp_multiplier, max_tau_days, frequency_weight,
    emotional_weight, prune_threshold, power_exponent, never_decays, promote_after,
    promote_to, promotion_counts, promotion_targets, lifetime_days)
SELECT *
FROM jsonb_to_recordset(%(policies)s::jsonb) AS p(
    name text, curve text, base_tau_days float8, ltp_multiplier float8, max_tau_days float8,
    frequency_weight float8, emotional_weight float8, prune_threshold float8,
    power_exponent float8, never_decays boolean, promote_after int, promote_to text,
    promotion_counts int[], promotion_targets text[], lifetime_days float8)
ON CONFLICT (name) DO UPDATE
SET curve = excluded.curve, base_tau_days = excluded.base_tau_days,
    ltp_multiplier = excluded.ltp_multiplier, max_tau_days = excluded.max_tau_days,
    frequency_weight = excluded.frequency_weight, emotional_weight = excluded.emotional_weight,
    prune_threshold = excluded.prune_threshold, power_exponent = excluded.power_exponent,
    never_decays = excluded.never_decays, promote_after = excluded.promote_after,
    promote_to = excluded.promote_to, promotion_counts = excluded.promotion_counts,
    promotion_targets = excluded.promotion_targets, lifetime_days = excluded.lifetime_days,
    configured = true, changed_at = excluded.changed_at
WHERE NOT d.configured
   OR (d.curve, d.base_tau_days, d.ltp_multiplier, d.max_tau_days, d.frequency_weight,
       d.emotional_weight, d.prune_threshold, d.power_exponent, d.never_decays,
       d.promote_after, d.promote_to, d.promotion_counts, d.promotion_targets)
      IS DISTINCT FROM
      (excluded.curve, excluded.base_tau_days, excluded.ltp_multiplier, excluded.max_tau_days,
       excluded.frequency_weight, excluded.emotional_weight, excluded.prune_threshold,
       excluded.power_exponent, excluded.never_decays, excluded.promote_after,
       excluded.promote_to, excluded.promotion_counts, excluded.promotion_targets)
RETURNING name;

-- name: unconfigure_policies
-- A policy gone from the settings stays for the memories that still have it.
UPDATE decay_policies SET configured = false
WHERE configured AND name <> ALL(%(names)s::text[]);

-- name: upsert_ethos_settings
-- Its parameters are the table's columns (ethos.store.policies.DATABASE_SETTINGS).
INSERT INTO ethos_settings AS s (id, default_policy, importance_otherwise, at_risk_margin,
                                 links_tau_days, links_prune_weight, text_config,
                                 auto_importance, auto_importance_half,
                                 auto_importance_particularity, auto_importance_answer)
VALUES (true, %(default_policy)s, %(importance_otherwise)s, %(at_risk_margin)s,
        %(links_tau_days)s, %(links_prune_weight)s, %(text_config)s::regconfig,
        %(auto_importance)s, %(auto_importance_half)s, %(auto_importance_particularity)s,
        %(auto_importance_answer)s)
ON CONFLICT (id) DO UPDATE
SET default_policy = excluded.default_policy,
    importance_otherwise = excluded.importance_otherwise,
    at_risk_margin = excluded.at_risk_margin, links_tau_days = excluded.links_tau_days,
    links_prune_weight = excluded.links_prune_weight, text_config = excluded.text_config,
    auto_importance = excluded.auto_importance,
    auto_importance_half = excluded.auto_importance_half,
    auto_importance_particularity = excluded.auto_importance_particularity,
    auto_importance_answer = excluded.auto_importance_answer, updated_at = excluded.updated_at;

-- name: ethos_settings
-- What the sweep, the insert trigger and the views read of the settings.
SELECT default_policy, importance_otherwise, at_risk_margin, links_tau_days,
       links_prune_weight, text_config::text AS text_config, auto_importance,
       auto_importance_half, auto_importance_particularity, auto_importance_answer
FROM ethos_settings;

-- name: importance_tiers
SELECT policy, min_importance FROM importance_tiers;

-- name: text_config_exists
SELECT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = %(config)s);

-- name: replace_importance_tiers
-- %(tiers)s: {policy: minimum importance}.
WITH given AS (
    SELECT key AS policy, value::float8 AS min_importance
    FROM jsonb_each_text(%(tiers)s::jsonb)
),
gone AS (
    DELETE FROM importance_tiers AS t
    WHERE NOT EXISTS (SELECT 1 FROM given AS g WHERE g.policy = t.policy)
)
INSERT INTO importance_tiers AS t (policy, min_importance)
SELECT policy, min_importance FROM given
ON CONFLICT (policy) DO UPDATE SET min_importance = excluded.min_importance
WHERE t.min_importance <> excluded.min_importance;

-- name: list_policies
SELECT * FROM decay_policies ORDER BY name;

-- name: fetch_policy
SELECT * FROM decay_policies WHERE name = %(name)s;

-- name: policy_agents
SELECT agent_id, assigned_at FROM agent_policies WHERE policy = %(name)s ORDER BY agent_id;

-- name: assign_agent_policy
INSERT INTO agent_policies (agent_id, policy) VALUES (%(agent)s, %(policy)s)
ON CONFLICT (agent_id) DO UPDATE SET policy = excluded.policy, assigned_at = excluded.assigned_at;

-- name: unassign_agent_policy
DELETE FROM agent_policies WHERE agent_id = %(agent)s RETURNING policy;
