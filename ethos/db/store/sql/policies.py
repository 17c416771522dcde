"""The statements of policies and settings: upserts, assignment, moves, tiers."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    emotion_of,
    hint_all,
    hint_both_at,
    link_fades_at,
    policy_columns,
    salience_call,
    scheduled,
    strength_at_call,
)
from ethos.domain.tables import TableSpec

# The plain statements, in the .sql file of the same name beside this one. Each builder
# below makes a memory table's (its name, and the columns only some tables have, vary).
STATEMENTS = statements(__file__)


@cache
def build_lock_rows_query(spec: TableSpec) -> Query:
    """Lock rows of agent %(agent)s in id order (as sweep batches lock them, which keeps
    deadlocks rare) before a write that reads their policy: the write's own snapshot then
    sees them as they are, whatever wrote them last."""
    return sql(f"""
    SELECT count(*) FROM (
        SELECT 1 FROM {spec.name} WHERE agent_id = %(agent)s AND id = ANY(%(ids)s::uuid[])
        ORDER BY id FOR UPDATE
    ) AS locked
    """)


# The links settings changed: when each link fades, anew.
RESCHEDULE_LINKS = sql(f"""
UPDATE memory_links AS l SET fades_at = {link_fades_at("l.weight", "l.weighted_at")}
""")


@cache
def build_move_query(spec: TableSpec) -> Query:
    """Move one live memory of agent %(agent)s to %(policy)s at %(now)s: its curve is
    re-anchored there (strength = its strength at that moment on the old curve), so its
    salience goes on from where it was, on the new curve."""
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
        SELECT m.id, m.policy AS old_policy, m.created_at, m.pinned, m.reinforcement AS n,
               {emotion_of(spec)} AS emotion, greatest(m.anchor_at, %(now)s) AS at,
               {strength_at_call("m.strength", at="%(now)s")} AS strength,{fact_state}
               {"m.expires_at," if spec.has_expiry else ""} %(policy)s::text AS new_policy
        FROM {spec.name} AS m
        JOIN decay_policies AS p ON p.name = m.policy
        WHERE m.agent_id = %(agent)s AND m.id = %(id)s AND NOT m.pruned
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
        WHERE m.agent_id = %(agent)s AND m.id = s.id
        RETURNING m.id, s.old_policy, m.policy, m.salience, m.due_at, m.prune_at, m.ctid AS place,
                  m.agent_id
    ),
    hinted AS ({hint_all(spec, "moved")})
    SELECT * FROM moved
    """)


# Two `ethos settings apply` (or migrate) at once write the same rows: one at a time.
SETTINGS_APPLY_LOCK_KEY = 0x45_54_48_4F_03
LOCK_SETTINGS_APPLY = STATEMENTS["lock_settings_apply"]
UPSERT_POLICIES = STATEMENTS["upsert_policies"]
UNCONFIGURE_POLICIES = STATEMENTS["unconfigure_policies"]
UPSERT_ETHOS_SETTINGS = STATEMENTS["upsert_ethos_settings"]
ETHOS_SETTINGS = STATEMENTS["ethos_settings"]
IMPORTANCE_TIERS = STATEMENTS["importance_tiers"]
TEXT_CONFIG_EXISTS = STATEMENTS["text_config_exists"]


@cache
def build_reindex_text_query(spec: TableSpec) -> Query:
    """Every memory's text again, in a new text search configuration."""
    return sql(f"""
    UPDATE {spec.name} SET content_tsv = ethos_text_vector(%(config)s::regconfig, agent_id, content)
    """)


REPLACE_IMPORTANCE_TIERS = STATEMENTS["replace_importance_tiers"]
LIST_POLICIES = STATEMENTS["list_policies"]
FETCH_POLICY = STATEMENTS["fetch_policy"]
POLICY_AGENTS = STATEMENTS["policy_agents"]
ASSIGN_AGENT_POLICY = STATEMENTS["assign_agent_policy"]


@cache
def build_unschedule_query(spec: TableSpec) -> Query:
    """Every live row of %(policies)s unscheduled (-infinity), with a hint of each kind
    at once: their schedules were computed on the policies' old curves, and the next
    passes compute them anew."""
    return sql(f"""
    WITH unscheduled AS (
        UPDATE {spec.name} SET due_at = '-infinity', prune_at = '-infinity'
        WHERE policy = ANY(%(policies)s::text[]) AND NOT pruned
        RETURNING id, ctid AS place, agent_id
    )
    {hint_both_at(spec, "unscheduled", "'-infinity'")}
    """)


UNASSIGN_AGENT_POLICY = STATEMENTS["unassign_agent_policy"]
