"""The statements of the lifecycle: merges, forgetting, purge, erase, recovery,
lifecycle runs."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    COUNT_CAP,
    emotion_of,
    hint_all,
    hint_both_at,
    hint_live_rows,
    identity,
    policy_columns,
    pruned_set,
    salience_call,
    salience_expr,
    scheduled,
    strength_at_call,
)
from ethos.domain.tables import TableSpec

# The plain statements, in the .sql file of the same name beside this one. Each builder
# below makes a memory table's (its name, and the columns only some tables have, vary).
STATEMENTS = statements(__file__)

# The agent a statement is of: %(agent)s, or any when NULL (in the agent's session: on
# Citus, on its node); %(agent)s alone, which a Citus coordinator routes to its shard.
_ANY_AGENT = "(%(agent)s::text IS NULL OR agent_id = %(agent)s)"
_ONE_AGENT = "agent_id = %(agent)s"


def _recovery_filter() -> str:
    """Pruned rows matching a selector, each part NULL when not given (the agent too: in
    the agent's session, on Citus on its shard, the statement is of its rows alone)."""
    return f"""
    pruned
    AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s))
    AND {_ANY_AGENT}
    AND (%(since)s::timestamptz IS NULL OR pruned_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR pruned_at < %(until)s)
    AND (%(reason)s::text IS NULL OR prune_reason = %(reason)s)
"""


@cache
def build_recovery_candidates_query(spec: TableSpec) -> Query:
    """The next %(limit)s pruned rows a selector matches after id %(after)s, in id order:
    a recovery's batch."""
    return sql(f"""
    SELECT id, agent_id, left(content, 80) AS content, pruned_at, prune_reason
    FROM {spec.name}
    WHERE {_recovery_filter()} AND id > %(after)s
    ORDER BY id LIMIT %(limit)s
    """)


@cache
def build_recovery_count_query(spec: TableSpec) -> Query:
    """How many pruned rows a selector matches: a recovery's total, shown as it goes."""
    return sql(f"SELECT count(*) FROM {spec.name} WHERE {_recovery_filter()}")


@cache
def build_recover_batch_query(spec: TableSpec) -> Query:
    """Bring back the memories %(owners)s, %(ids)s (each its agent and id: a batch of
    build_recovery_candidates_query) of agents %(agents)s that are still pruned, with a
    fresh start: %(strength)s anchored at %(now)s, and its values stored as they are
    then; content, embedding, policy, retrieval count and history stay. An expired row
    loses its expiry, or the next sweep would prune it again at once. It is scheduled
    anew."""
    at = {"anchor": "b.anchor_at", "n": "b.n", "at": "b.anchor_at", "alias": "b"}
    fact_values = fact_set = ""
    if spec.has_confidence:
        fact_values = f"""b.strength AS confidence_strength,
               {salience_call("b.strength", emotion="0", **at)} AS stored_confidence,"""
        fact_set = "confidence_strength = r.strength, confidence = r.stored_confidence,"
    kept_expiry = (
        "CASE WHEN expires_at <= %(now)s THEN NULL ELSE expires_at END AS expires_at,"
        if spec.has_expiry
        else ""
    )
    return sql(f"""
    WITH batch AS (
        SELECT id, agent_id, policy, created_at, pinned, reinforcement AS n,
               {spec.emotion_column or "0"} AS emotion,
               {kept_expiry}
               %(strength)s::float8 AS strength, %(now)s::timestamptz AS anchor_at
        FROM {spec.name}
        WHERE agent_id = ANY (%(agents)s::text[]) AND pruned
          AND (agent_id, id) IN (SELECT * FROM unnest(%(owners)s::text[], %(ids)s::uuid[]))
        ORDER BY id
        FOR UPDATE
    ),
    fresh AS (
        {
        scheduled(
            spec,
            f'''
        SELECT b.*, b.anchor_at AS reference, b.pinned OR p.never_decays AS frozen,
               {salience_call("b.strength", emotion="b.emotion", **at)} AS stored_salience,
               {fact_values} {policy_columns("p")}
        FROM batch AS b JOIN decay_policies AS p ON p.name = b.policy''',
        )
    }
    ),
    recovered AS (
        UPDATE {spec.name} AS m
        SET pruned = false, pruned_at = NULL, prune_reason = NULL, merged_into = NULL,
            {fact_set}
            {"expires_at = r.expires_at," if spec.has_expiry else ""}
            strength = r.strength, salience = r.stored_salience, anchor_at = r.anchor_at,
            due_at = r.due_at, prune_at = r.prune_at
        FROM fresh AS r
        WHERE m.agent_id = r.agent_id AND m.id = r.id
        RETURNING m.id, m.ctid AS place, m.agent_id, m.due_at, m.prune_at
    ),
    hinted AS ({hint_all(spec, "recovered")})
    SELECT id FROM recovered
    """)


RECORD_RECOVERY = STATEMENTS["record_recovery"]


@cache
def build_duplicate_groups_query(spec: TableSpec) -> Query:
    """The next %(limit)s groups of live memories of one agent (of %(agent)s; any when
    NULL) with one normalised content and one identity (fragments.identity: an item's
    key, its mem0 owners; vectors: and one embedding), after the key %(after_agent)s,
    %(after_key)s, %(after_identity)s: each group's ids, the earliest first. Read through
    the (agent_id, content_key) index, in key order, a batch at a time."""
    embedding = ", embedding" if spec.has_embedding else ""
    return sql(f"""
    SELECT agent_id, content_key, {identity()} AS identity,
           array_agg(id ORDER BY created_at, id) AS ids, count(*) AS n
    FROM {spec.name} AS m
    WHERE NOT pruned AND (agent_id, content_key) >= (%(after_agent)s, %(after_key)s)
      AND (agent_id, content_key, {identity()})
          > (%(after_agent)s, %(after_key)s, %(after_identity)s::jsonb)
      AND {_ANY_AGENT}
    GROUP BY agent_id, content_key, {identity()}{embedding}
    HAVING count(*) > 1
    ORDER BY agent_id, content_key, {identity()}
    LIMIT %(limit)s
    """)


NEAR_DUPLICATES = STATEMENTS["near_duplicates"]
NEAR_DUPLICATE_EMBEDDINGS = STATEMENTS["near_duplicate_embeddings"]

NEAR_DUPLICATE_SEARCH_SETTINGS = "SET LOCAL hnsw.ef_search = 20"


@cache
def build_merge_query(spec: TableSpec) -> Query:
    """Merge groups of live memories, each of one agent (members %(agents)s, %(ids)s,
    group numbers %(groups)s; each part names the agent of the rows it reads or writes:
    two agents may hold one id) at %(now)s: the earliest of each group survives; its
    retrieval count (and surfaced, useful, wrong counts) becomes the sum of the group's,
    and its curve that of the member with the highest salience now, re-anchored now (its
    strength then, its policy). The others are pruned, reason 'merged', merged_into the
    survivor (its embeddings stay its own, dead with it); the merged memories' links move
    to it. The survivor is pinned if any member was. The survivor
    is due at once (the next pass schedules it). Members of different identities
    (fragments.identity) are never one memory."""
    fact_best = ", m.confidence_strength AS conf" if spec.has_confidence else ""
    fact_state = (
        f", {strength_at_call('b.conf', at='%(now)s', alias='b')} AS confidence_strength"
        if spec.has_confidence
        else ""
    )
    # The survivor's stored values, from its new state (its own age and emotion).
    new_state = {"anchor": "%(now)s", "n": "g.reinforcement", "at": "%(now)s", "policy": "gp"}
    fact_set = (
        f"""confidence_strength = g.confidence_strength,
            confidence = {salience_call("g.confidence_strength", emotion="0", **new_state)},"""
        if spec.has_confidence
        else ""
    )
    return sql(f"""
    WITH members AS MATERIALIZED (
        SELECT m.id, g.n AS grp, m.agent_id, m.created_at, m.retrieval_count, m.reinforcement,
               m.surfaced_count, m.useful_count, m.wrong_count, m.last_retrieved_at,
               m.strength, m.anchor_at, m.pinned, m.policy{fact_best},
               {salience_expr(spec)} AS salience_now, {identity()} AS identity
        FROM unnest(%(agents)s::text[], %(ids)s::uuid[], %(groups)s::int[]) AS g(agent, id, n)
        JOIN {spec.name} AS m ON m.agent_id = g.agent AND m.id = g.id
        JOIN decay_policies AS p ON p.name = m.policy
        WHERE NOT m.pruned
        ORDER BY m.id
        FOR UPDATE OF m
    ),
    ranked AS (
        SELECT members.*,
               first_value(id) OVER (one ORDER BY created_at, id) AS survivor,
               first_value(id) OVER (one ORDER BY salience_now DESC, id) AS best,
               count(*) OVER one AS size
        FROM members
        -- a group given is one memory only where its members share an identity: those
        -- that do not (near-duplicate vectors, the rows they embed) make groups of each
        WINDOW one AS (PARTITION BY grp, identity)
    ),
    groups AS (
        SELECT r.agent_id, r.survivor,  -- counts summed, at most the tables' cap
               least(sum(r.retrieval_count), {COUNT_CAP})::int AS retrieval_count,
               least(sum(r.reinforcement), {COUNT_CAP}) AS reinforcement,
               least(sum(r.surfaced_count), {COUNT_CAP})::int AS surfaced_count,
               least(sum(r.useful_count), {COUNT_CAP})::int AS useful_count,
               least(sum(r.wrong_count), {COUNT_CAP})::int AS wrong_count,
               max(r.last_retrieved_at) AS last_retrieved_at,
               bool_or(r.pinned) AS pinned,  -- a pin on any member stays with the memory
               (array_agg(r.best))[1] AS best  -- one value per group
        FROM ranked AS r WHERE r.size > 1 GROUP BY r.agent_id, r.survivor
    ),
    best AS (
        SELECT g.*, {strength_at_call("b.strength", at="%(now)s", alias="b")} AS strength,
               b.policy{fact_state}
        FROM groups AS g
        JOIN ranked AS b ON b.id = g.best
        JOIN decay_policies AS p ON p.name = b.policy
    ),
    survived AS (
        UPDATE {spec.name} AS m
        SET retrieval_count = g.retrieval_count, reinforcement = g.reinforcement,
            surfaced_count = g.surfaced_count,
            useful_count = g.useful_count, wrong_count = g.wrong_count,
            last_retrieved_at = g.last_retrieved_at, strength = g.strength, {fact_set}
            pinned = g.pinned, policy = g.policy, anchor_at = %(now)s,
            salience = {salience_call("g.strength", emotion=emotion_of(spec), **new_state)},
            due_at = %(now)s, prune_at = %(now)s
        FROM best AS g JOIN decay_policies AS gp ON gp.name = g.policy
        WHERE m.agent_id = g.agent_id AND m.id = g.survivor
        RETURNING m.id, m.ctid AS place, m.agent_id
    ),
    hinted AS ({hint_both_at(spec, "survived", "%(now)s")}),
    merged AS (
        UPDATE {spec.name} AS m
        SET {pruned_set("merged")}, merged_into = r.survivor
        FROM ranked AS r
        WHERE m.agent_id = r.agent_id AND m.id = r.id AND r.id <> r.survivor AND r.size > 1
        RETURNING m.id, m.agent_id, m.merged_into
    ),
    moved AS (
        INSERT INTO memory_links AS l (agent_id, a_table, a_id, b_table, b_id, weight,
                                       weighted_at, co_retrievals, useful_count, wrong_count,
                                       fades_at, created_at)
        SELECT o.agent_id,
               CASE WHEN o.survivor < o.other_id THEN '{spec.name}' ELSE o.other_table END,
               least(o.survivor, o.other_id),
               CASE WHEN o.survivor < o.other_id THEN o.other_table ELSE '{spec.name}' END,
               greatest(o.survivor, o.other_id),
               o.weight, o.weighted_at, o.co_retrievals, o.useful_count, o.wrong_count,
               o.fades_at, o.created_at
        FROM (
            SELECT DISTINCT ON (least(mg.merged_into, other.id), greatest(mg.merged_into, other.id))
                   l.agent_id, mg.merged_into AS survivor, other.id AS other_id,
                   other.tbl AS other_table, l.weight, l.weighted_at, l.co_retrievals,
                   l.useful_count, l.wrong_count, l.fades_at, l.created_at
            FROM merged AS mg
            JOIN LATERAL (
                SELECT * FROM memory_links WHERE agent_id = mg.agent_id AND a_id = mg.id
                UNION ALL
                SELECT * FROM memory_links WHERE agent_id = mg.agent_id AND b_id = mg.id
            ) AS l ON true
            CROSS JOIN LATERAL (
                SELECT CASE WHEN l.a_id = mg.id THEN l.b_id ELSE l.a_id END AS id,
                       CASE WHEN l.a_id = mg.id THEN l.b_table ELSE l.a_table END AS tbl
            ) AS other
            WHERE other.id <> mg.merged_into
            ORDER BY least(mg.merged_into, other.id), greatest(mg.merged_into, other.id),
                     l.weight DESC
        ) AS o
        ON CONFLICT (agent_id, a_id, b_id) DO UPDATE
        SET weight = greatest(l.weight, excluded.weight),
            weighted_at = greatest(l.weighted_at, excluded.weighted_at),
            co_retrievals = l.co_retrievals + excluded.co_retrievals,
            useful_count = l.useful_count + excluded.useful_count,
            wrong_count = l.wrong_count + excluded.wrong_count,
            fades_at = greatest(l.fades_at, excluded.fades_at)
        RETURNING 1
    ),
    {_unlink("merged")}
    SELECT (SELECT count(*) FROM survived) AS groups, (SELECT count(*) FROM merged) AS merged,
           (SELECT count(*) FROM moved) AS links_moved
    """)


@cache
def build_forget_query(spec: TableSpec) -> Query:
    """Soft-delete live memories %(ids)s of %(agent)s on request (on a Citus cluster,
    on the agent's shard): reason 'manual', recoverable."""
    return sql(f"""
    UPDATE {spec.name}
    SET {pruned_set("manual")}
    WHERE agent_id = %(agent)s AND id = ANY(%(ids)s::uuid[]) AND NOT pruned
    RETURNING id
    """)


def _purge_filter(agent: str) -> str:
    """Pruned rows a purge selects, of the agent `agent` says, the reason NULL when not
    given."""
    return f"""
    pruned AND pruned_at < %(before)s AND {agent}
    AND (%(reason)s::text IS NULL OR prune_reason = %(reason)s)
"""


@cache
def build_purge_count_query(spec: TableSpec) -> Query:
    """What a purge would delete, by reason (a dry run)."""
    return sql(f"""
    SELECT prune_reason AS reason, count(*) AS n FROM {spec.name}
    WHERE {_purge_filter(_ANY_AGENT)} GROUP BY prune_reason
    """)


def _unlink(rows: str, *, of_one_agent: bool = False) -> str:
    """CTEs deleting the links of the memories of CTE `rows` (id, agent_id), of their
    agents (`of_one_agent`: of %(agent)s, as a Citus coordinator routes it): one index
    each way (arrays, so that the planner, which cannot know how many rows there are,
    probes the indexes; a link's agent is its memories')."""
    agents = (
        _ONE_AGENT
        if of_one_agent
        else f"agent_id = ANY (ARRAY(SELECT DISTINCT agent_id FROM {rows}))"
    )
    return f"""
    unlinked_a AS (DELETE FROM memory_links
                   WHERE a_id = ANY (ARRAY(SELECT id FROM {rows})) AND {agents}),
    unlinked_b AS (DELETE FROM memory_links
                   WHERE b_id = ANY (ARRAY(SELECT id FROM {rows})) AND {agents})"""


@cache
def build_purge_batch_query(spec: TableSpec, *, of_one_agent: bool) -> Query:
    """Hard-delete a batch of %(limit)s pruned rows selected by _purge_filter (through the
    pruned_at index, oldest first), with their links: the reasons of what was deleted.
    Their due hints are left to drop out when popped (a hint without a row is skipped).
    A row is its agent and id: another agent's memory of the same id stays.
    `of_one_agent`: of %(agent)s, each DELETE naming it. A hard delete runs through the
    server's pool (store.lifecycle's purge), on Citus the coordinator, which routes a
    statement to one shard only by such an equality (it varies for that alone)."""
    agent = _ONE_AGENT if of_one_agent else "true"
    return sql(f"""
    WITH gone AS (
        DELETE FROM {spec.name} WHERE (agent_id, id) IN (
            SELECT agent_id, id FROM {spec.name} WHERE {_purge_filter(agent)}
            ORDER BY pruned_at LIMIT %(limit)s) AND {agent}
        RETURNING id, agent_id, prune_reason
    ),{_unlink("gone", of_one_agent=of_one_agent)}
    SELECT prune_reason AS reason, count(*) AS n FROM gone GROUP BY prune_reason
    """)


@cache
def build_erase_count_query(spec: TableSpec) -> Query:
    return sql(f"SELECT count(*) FROM {spec.name} WHERE agent_id = %(agent)s")


@cache
def build_erase_batch_query(spec: TableSpec) -> Query:
    """Hard-delete the next %(limit)s of an agent's memories (live or pruned) after id
    %(after)s, and their links: how many, and the last id (hints drop out as above); the
    audit row %(run_id)s counts them (_tally: its key is the table's name). It runs where
    the audit row is, on a Citus coordinator: there the DELETE's own `agent_id =` (not its
    subquery's) routes it to the agent's shard."""
    return sql(f"""
    WITH gone AS (
        DELETE FROM {spec.name} WHERE (agent_id, id) IN (
            SELECT agent_id, id FROM {spec.name} WHERE agent_id = %(agent)s AND id > %(after)s
            ORDER BY id LIMIT %(limit)s) AND {_ONE_AGENT}
        RETURNING id, agent_id
    ),{_unlink("gone", of_one_agent=True)},{_tally(spec.name)}
    SELECT count(*) AS n, (SELECT id FROM gone ORDER BY id DESC LIMIT 1) AS last_id FROM gone
    """)


def _tally(key: str) -> str:
    """A CTE adding the rows of CTE `gone` to the audit row %(run_id)s's count `key`, in
    the transaction that deletes them: after a kill, the audit still adds up."""
    return f"""
    tally AS (
        UPDATE lifecycle_runs
        SET counts = counts || jsonb_build_object(
            '{key}', coalesce((counts ->> '{key}')::bigint, 0) + (SELECT count(*) FROM gone))
        WHERE id = %(run_id)s
    )"""


ERASE_AGENT_LINKS = sql(f"""
WITH gone AS (DELETE FROM memory_links WHERE agent_id = %(agent)s RETURNING 1),
{_tally("memory_links")}
SELECT count(*) FROM gone
""")
ERASE_AGENT_POLICY = sql(f"""
WITH gone AS (DELETE FROM agent_policies WHERE agent_id = %(agent)s RETURNING 1),
{_tally("agent_policies")}
SELECT count(*) FROM gone
""")


@cache
def build_drop_agent_hints_query(spec: TableSpec) -> Query:
    """After an erase, the hints that name %(agent)s (an agent of their rows, decision
    0019) go: the ids they held, whose rows are left (build_rehint_rows_query). A hint's
    agent is its shard's on Citus, which refuses to update it."""
    return sql(f"""
    WITH named AS (DELETE FROM {spec.due_table} WHERE agent_id = %(agent)s RETURNING ids)
    SELECT coalesce(array_agg(DISTINCT i), '{{}}') FROM named CROSS JOIN unnest(named.ids) AS i
    """)


@cache
def build_rehint_rows_query(spec: TableSpec) -> Query:
    """The live rows among %(ids)s hinted anew from their own moments: what a dropped
    hint held of other agents' (on one server a hint holds rows of any agent; on Citus,
    of its shard's agents)."""
    return sql(hint_live_rows(spec, "id = ANY (%(ids)s::uuid[])"))


UNDELETABLE_TABLES = STATEMENTS["undeletable_tables"]
COUNT_AGENT_LINKS = STATEMENTS["count_agent_links"]
COUNT_AGENT_POLICY = STATEMENTS["count_agent_policy"]
START_CONSOLIDATION_RUN = STATEMENTS["start_lifecycle_run"]
FINISH_CONSOLIDATION_RUN = STATEMENTS["finish_lifecycle_run"]
RECOVERIES_OF = STATEMENTS["recoveries_of"]


@cache
def build_forget_agent_query(spec: TableSpec) -> Query:
    """Soft-delete every live memory of %(agent)s on request: reason 'manual'."""
    return sql(f"""
    WITH gone AS (
        UPDATE {spec.name} SET {pruned_set("manual")}
        WHERE agent_id = %(agent)s AND NOT pruned
        RETURNING 1
    )
    SELECT count(*) FROM gone
    """)
