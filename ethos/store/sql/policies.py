"""The statements of policies and settings: upserts, assignment, moves, tiers."""

from __future__ import annotations

from functools import cache

from ethos.store.core import Query, sql
from ethos.store.sql.fragments import (
    emotion_of,
    hint_all,
    hint_both_at,
    link_fades_at,
    policy_columns,
    salience_call,
    scheduled,
    strength_at_call,
)
from ethos.tables import TableSpec


@cache
def build_lock_rows_query(spec: TableSpec) -> Query:
    """Lock rows in id order (as sweep batches lock them, which keeps deadlocks rare)
    before a write that reads their policy: the write's own snapshot then sees them as
    they are, whatever wrote them last."""
    return sql(f"""
    SELECT count(*) FROM (
        SELECT 1 FROM {spec.name} WHERE id = ANY(%(ids)s::uuid[]) ORDER BY id FOR UPDATE
    ) AS locked
    """)


# The links settings changed: when each link fades, anew.
RESCHEDULE_LINKS = sql(f"""
UPDATE memory_links AS l SET fades_at = {link_fades_at("l.weight", "l.weighted_at")}
""")


@cache
def build_move_query(spec: TableSpec) -> Query:
    """Move one live memory to %(policy)s at %(now)s: its curve is re-anchored there
    (strength = its strength at that moment on the old curve), so its salience goes on
    from where it was, on the new curve."""
    at = {"anchor": "x.at", "n": "x.n", "at": "x.at", "alias": "x", "policy": "np"}
    fact_state = fact_values = fact_set = ""
    if spec.has_confidence:
        fact_state = f"""
               {strength_at_call("m.confidence_strength", at="%(now)s")} AS confidence_strength,"""
        fact_values = f"""
               {salience_call("x.confidence_strength", emotion="0", **at)} AS stored_confidence,"""
        fact_set = "confidence_strength = s.confidence_strength, confidence = s.stored_confidence,"
    return sql(f"""
    WITH x AS (
        SELECT m.id, m.policy AS old_policy, m.created_at, m.pinned, m.retrieval_count AS n,
               {emotion_of(spec)} AS emotion, greatest(m.anchor_at, %(now)s) AS at,
               {strength_at_call("m.strength", at="%(now)s")} AS strength,{fact_state}
               {"m.expires_at," if spec.has_expiry else ""} %(policy)s::text AS new_policy
        FROM {spec.name} AS m
        JOIN decay_policies AS p ON p.name = m.policy
        WHERE m.id = %(id)s AND NOT m.pruned
    ),
    s AS (
        {
        scheduled(
            spec,
            f'''
        SELECT x.*, x.at AS anchor_at, x.at AS reference, x.pinned OR np.never_decays AS frozen,
               {salience_call("x.strength", emotion="x.emotion", **at)} AS stored_salience,
               {fact_values} {policy_columns("np")}
        FROM x JOIN decay_policies AS np ON np.name = x.new_policy''',
        )
    }
    ),
    moved AS (
        UPDATE {spec.name} AS m
        SET strength = s.strength, {fact_set}
            salience = s.stored_salience, policy = s.new_policy, anchor_at = s.at,
            due_at = s.due_at, prune_at = s.prune_at
        FROM s
        WHERE m.id = s.id
        RETURNING m.id, s.old_policy, m.policy, m.salience, m.due_at, m.prune_at, m.ctid AS place
    ),
    hinted AS ({hint_all(spec, "moved")})
    SELECT * FROM moved
    """)


# Processes opening together write the same rows: one at a time.
SETTINGS_SYNC_LOCK_KEY = 0x45_54_48_4F_03
LOCK_SETTINGS_SYNC = sql("SELECT pg_advisory_xact_lock(%(key)s)")

# %(policies)s: a JSON array of policies.sql_row(). A row is written only when it
# differs, so changed_at says when a policy's curve or promotions last changed.
UPSERT_POLICIES = sql("""
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
    configured = true, changed_at = now()
WHERE NOT d.configured
   OR (d.curve, d.base_tau_days, d.ltp_multiplier, d.max_tau_days, d.frequency_weight,
       d.emotional_weight, d.prune_threshold, d.power_exponent, d.never_decays,
       d.promote_after, d.promote_to, d.promotion_counts, d.promotion_targets)
      IS DISTINCT FROM
      (excluded.curve, excluded.base_tau_days, excluded.ltp_multiplier, excluded.max_tau_days,
       excluded.frequency_weight, excluded.emotional_weight, excluded.prune_threshold,
       excluded.power_exponent, excluded.never_decays, excluded.promote_after,
       excluded.promote_to, excluded.promotion_counts, excluded.promotion_targets)
RETURNING name
""")

# A policy gone from the settings stays for the memories that still have it.
UNCONFIGURE_POLICIES = sql("""
UPDATE decay_policies SET configured = false
WHERE configured AND name <> ALL(%(names)s::text[])
""")

UPSERT_ETHOS_SETTINGS = sql("""
INSERT INTO ethos_settings AS s (id, default_policy, importance_otherwise, at_risk_margin,
                                 links_tau_days, links_prune_weight, text_config,
                                 auto_importance, auto_importance_half)
VALUES (true, %(default_policy)s, %(importance_otherwise)s, %(at_risk_margin)s,
        %(links_tau)s, %(links_prune)s, %(text_config)s::regconfig, %(auto)s, %(auto_half)s)
ON CONFLICT (id) DO UPDATE
SET default_policy = excluded.default_policy,
    importance_otherwise = excluded.importance_otherwise,
    at_risk_margin = excluded.at_risk_margin, links_tau_days = excluded.links_tau_days,
    links_prune_weight = excluded.links_prune_weight, text_config = excluded.text_config,
    auto_importance = excluded.auto_importance,
    auto_importance_half = excluded.auto_importance_half, updated_at = now()
WHERE (s.default_policy, s.importance_otherwise, s.at_risk_margin, s.links_tau_days,
       s.links_prune_weight, s.text_config, s.auto_importance, s.auto_importance_half)
      IS DISTINCT FROM (excluded.default_policy, excluded.importance_otherwise,
                        excluded.at_risk_margin, excluded.links_tau_days,
                        excluded.links_prune_weight, excluded.text_config,
                        excluded.auto_importance, excluded.auto_importance_half)
""")

TEXT_CONFIG = sql("SELECT text_config::text FROM ethos_settings")
TEXT_CONFIG_EXISTS = sql("SELECT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = %(config)s)")


@cache
def build_reindex_text_query(spec: TableSpec) -> Query:
    """Every memory's text again, in a new text search configuration."""
    return sql(f"""
    UPDATE {spec.name} SET content_tsv = ethos_text_vector(%(config)s::regconfig, agent_id, content)
    """)


LINK_SETTINGS = sql("SELECT links_tau_days, links_prune_weight FROM ethos_settings")

# %(tiers)s: {policy: minimum importance}.
REPLACE_IMPORTANCE_TIERS = sql("""
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
WHERE t.min_importance <> excluded.min_importance
""")

LIST_POLICIES = sql("SELECT * FROM decay_policies ORDER BY name")
FETCH_POLICY = sql("SELECT * FROM decay_policies WHERE name = %(name)s")
POLICY_AGENTS = sql(
    "SELECT agent_id, assigned_at FROM agent_policies WHERE policy = %(name)s ORDER BY agent_id"
)

ASSIGN_AGENT_POLICY = sql("""
INSERT INTO agent_policies (agent_id, policy) VALUES (%(agent)s, %(policy)s)
ON CONFLICT (agent_id) DO UPDATE SET policy = excluded.policy, assigned_at = now()
""")


@cache
def build_unschedule_query(spec: TableSpec) -> Query:
    """Every live row of %(policies)s unscheduled (-infinity), with a hint of each kind
    at once: their schedules were computed on the policies' old curves, and the next
    passes compute them anew."""
    return sql(f"""
    WITH unscheduled AS (
        UPDATE {spec.name} SET due_at = '-infinity', prune_at = '-infinity'
        WHERE policy = ANY(%(policies)s::text[]) AND NOT pruned
        RETURNING id, ctid AS place
    )
    {hint_both_at(spec, "unscheduled", "'-infinity'")}
    """)


UNASSIGN_AGENT_POLICY = sql(
    "DELETE FROM agent_policies WHERE agent_id = %(agent)s RETURNING policy"
)
