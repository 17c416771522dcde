"""The statements of LTP: strengthening, the durable queue, flush claims, links."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    COUNT_CAP,
    above_threshold,
    emotion_of,
    held,
    hint_moments,
    insert_hints,
    link_fades_at,
    salience_call,
    salience_expr,
    spaced_gain_call,
    strength_at_call,
)
from ethos.domain.decay import (
    MIN_EXPONENT,
    MIN_GAIN,
    SECONDS_PER_DAY,
)
from ethos.domain.tables import TableSpec

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)


@cache
def build_ltp_query(spec: TableSpec) -> Query:
    """One round of what happened to rows of spec's table, each id at most once, at its
    moment `at`: n retrievals (reinforcing: searches, record_retrieval, useful feedback),
    u of them useful, w wrong (long-term depression), c surfaced. Computed from the
    row's current state inside the UPDATE, so a concurrent sweep batch cannot lose it.

    strength ← min(1, (S_t + g·(S − S_t)) × boost^n) × wrong_factor^w on the row's
    policy's curve, S_t the strength at `at` and g the spaced gain of the first of the
    retrievals (reference_decay.ltp_strength): a retrieval at the point of forgetting gives back
    what the memory lost since its anchor, one right after it only the boost. The
    reinforcement (τ's n) grows by g and MIN_GAIN for each of the others, which follow
    the first at once (reference_decay.spaced_gains).
    Facts: confidence likewise, + the bonus per retrieval. The anchor moves to `at`:
    that equals the retrievals applied one after another at that moment, then the
    wrongs. A retrieval count that reaches the policy's promote_after
    moves the row to promote_to (along the chain, if one write reaches several rules);
    the stored values are then those of the new policy's curve, which starts at this
    strength and moment. A row that wrongs bring below its threshold is pruned here,
    reason 'feedback'.

    The row is due at `at`: the next sweep schedules it (once, however often it was
    retrieved meanwhile), and nothing here computes the schedule on the retrieval's
    path. Its prune moment stands (a retrieval only strengthens), unless a wrong or a
    new policy may have brought it forward: then it is due at `at` too.

    The policy is read in the SET's sub-select, from the row being written: if another
    write changed the row (and its policy) meanwhile, PostgreSQL re-evaluates it on the
    row as that write left it. `before` is the row as this statement first saw it: only
    to report what it had.

    Each id is that of owners[i]'s memory, a memory in one round once; the owners are
    among the agents %(agents)s the statement names (LtpFlush.agent_groups). A builder:
    the table varies, and a fact's confidence is written beside its strength.
    """
    at = {"anchor": "h.at", "n": "m.reinforcement + s.gain", "at": "h.at", "policy": "np"}
    depress = "power(%(wrong_factor)s::float8, h.w)"
    fact_state = fact_values = fact_set = fact_new = ""
    deciding = "stored_salience"
    if spec.has_confidence:
        fact_state = f"""
                   least(1.0, {strength_at_call("m.confidence_strength", at="h.at")}
                              + %(confidence_bonus)s::float8 * h.n) * {depress}
                       AS confidence_strength,"""
        fact_values = f"""s.confidence_strength,
                   {salience_call("s.confidence_strength", emotion="0", **at)}
                       AS stored_confidence,"""
        fact_set = "confidence_strength, confidence, "
        fact_new = "x.confidence_strength, x.stored_confidence, "
        deciding = "stored_confidence"
    pruned = f"(h.w > 0 AND NOT (m.pinned OR x.never_decays) AND x.{deciding} < x.prune_threshold)"
    return sql(f"""
    WITH strengthened AS (
        UPDATE {spec.name} AS m
        SET (strength, {fact_set}salience, policy, reinforcement, due_at, prune_at,
             pruned, pruned_at, prune_reason) = (
                SELECT x.strength, {fact_new}x.stored_salience, x.new_policy,
                       least(m.reinforcement + x.gain, {COUNT_CAP}),
                       CASE WHEN NOT {pruned} THEN h.at END,
                       CASE WHEN {pruned} THEN NULL
                            WHEN h.w > 0 OR x.new_policy <> m.policy THEN h.at
                            ELSE m.prune_at END,
                       {pruned}, CASE WHEN {pruned} THEN h.at END,
                       CASE WHEN {pruned} THEN 'feedback' END
                FROM (
                    SELECT s.strength, {fact_values}
                           {salience_call("s.strength", emotion=emotion_of(spec), **at)}
                               AS stored_salience,
                           s.policy AS new_policy, s.gain, np.never_decays, np.prune_threshold
                    FROM (
                        SELECT least(1.0, (p.decayed + p.first * (m.strength - p.decayed))
                                          * power(%(boost)s::float8, h.n)) * {depress}
                                   AS strength,{fact_state}
                               p.first + {MIN_GAIN} * greatest(h.n - 1, 0) AS gain,
                               coalesce(
                                   (SELECT u.target
                                    FROM unnest(p.promotion_counts, p.promotion_targets)
                                         AS u(reached, target)
                                    WHERE u.reached <= m.retrieval_count + h.n
                                    ORDER BY u.reached DESC LIMIT 1),
                                   p.name) AS policy
                        FROM (SELECT p.*, CASE WHEN h.n > 0
                                                   THEN {spaced_gain_call("p.decayed")}
                                                   ELSE 0 END AS first
                              FROM (SELECT p.*,
                                           {strength_at_call("m.strength", at="h.at")}
                                               AS decayed
                                    FROM decay_policies AS p WHERE p.name = m.policy) AS p
                             ) AS p
                    ) AS s
                    JOIN decay_policies AS np ON np.name = s.policy
                    OFFSET 0
                ) AS x),
            retrieval_count = least(m.retrieval_count + h.n, {COUNT_CAP}),
            useful_count = least(m.useful_count + h.u, {COUNT_CAP}),
            wrong_count = least(m.wrong_count + h.w, {COUNT_CAP}),
            surfaced_count = least(m.surfaced_count + h.c, {COUNT_CAP}),
            anchor_at = greatest(m.anchor_at, h.at),
            last_retrieved_at = CASE WHEN h.n > 0 THEN greatest(m.last_retrieved_at, h.at)
                                     ELSE m.last_retrieved_at END
        FROM unnest(%(ids)s::uuid[], %(owners)s::text[], %(counts)s::int[], %(useful)s::int[],
                    %(wrong)s::int[], %(surfaced)s::int[], %(moments)s::timestamptz[])
                 AS h(id, agent, n, u, w, c, at)
        JOIN {spec.name} AS before
          ON before.agent_id = h.agent AND before.id = h.id
             AND before.agent_id = ANY(%(agents)s::text[])
        WHERE m.agent_id = before.agent_id AND m.id = h.id AND NOT m.pruned
          AND m.agent_id = ANY(%(agents)s::text[])
        RETURNING m.id, m.agent_id, h.n, h.at, m.pruned, before.policy AS old_policy, m.policy,
                  m.due_at, m.prune_at, before.due_at AS old_due,
                  before.prune_at AS old_prune, m.ctid AS place
    ),
    -- A hint for each moment set to the retrieval's, and for a moment earlier than the
    -- one the row had (whose hint stands for a later one). `before` may be older than
    -- the version written (a sweep wrote it meanwhile, and a full sweep drops the hints
    -- older than itself): only a moment kept from the row (m.prune_at) relies on a hint
    -- of the version written.
    hinted AS ({
        insert_hints(spec, hint_moments("strengthened", earlier=True, set_at="at"), since=None)
    })
    SELECT * FROM strengthened
    """)


@cache
def build_lock_query(spec: TableSpec) -> Query:
    """A flush's rows %(ids)s of agents %(agents)s in one table, locked in id order
    before any is written: its rounds and its counted hits write them in several
    statements, and a writer of several rows (a sweep batch, a search moving TTLs) locks
    in id order too, so neither can hold a row the other waits for while it waits for
    one the other holds. Rows another transaction holds are skipped, not waited for (an
    agent role may hold its own rows as long as it likes: decision 0022): the statement
    returns them, and the flush leaves their agents' events for a later one. A builder:
    the table varies."""
    rows = f"""SELECT id, agent_id FROM {spec.name}
        WHERE agent_id = ANY(%(agents)s::text[]) AND id = ANY(%(ids)s::uuid[])"""
    return sql(f"""
    WITH locked AS (
        {rows}
        ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
    )
    {rows}
    EXCEPT ALL SELECT id, agent_id FROM locked
    """)


@cache
def build_surfaced_query(spec: TableSpec) -> Query:
    """Search hits that only count (ltp.on_search = "count"): the row's curve is left
    alone. Owners and agents as build_ltp_query's; a builder: the table varies."""
    return sql(f"""
    UPDATE {spec.name} AS m SET surfaced_count = least(m.surfaced_count + h.c, {COUNT_CAP})
    FROM unnest(%(ids)s::uuid[], %(owners)s::text[], %(counts)s::int[]) AS h(id, agent, c)
    WHERE m.agent_id = h.agent AND m.id = h.id AND NOT m.pruned
      AND m.agent_id = ANY(%(agents)s::text[])
    RETURNING m.id, m.agent_id
    """)


@cache
def build_agents_query(spec: TableSpec) -> Query:
    """The agents of the live memories with these ids (an id may be two agents'): of
    the agents %(agents)s, or (NULL) of any agent, for the statements that follow to
    name. A builder: the table varies."""
    return sql(
        f"SELECT id, agent_id FROM {spec.name} WHERE id = ANY(%(ids)s::uuid[]) AND NOT pruned"
        " AND (agent_id = ANY(%(agents)s::text[]) OR %(agents)s::text[] IS NULL)"
    )


# A link's weight now: its weight when set, decaying as a memory does (τ in days).
def link_weight_at(at: str, alias: str = "l", tau: str = "%(links_tau)s::float8") -> str:
    return (
        f"{alias}.weight * exp(greatest("
        f"-greatest(date_part('epoch', {at} - {alias}.weighted_at), 0)"
        f" / {SECONDS_PER_DAY} / {tau}, {MIN_EXPONENT}))"
    )


LINK_PAIRS = """unnest(%(agents)s::text[], %(a_tables)s::text[], %(a_ids)s::uuid[],
                 %(b_tables)s::text[], %(b_ids)s::uuid[], %(co)s::int[], %(useful)s::int[],
                 %(wrong)s::int[], %(moments)s::timestamptz[])
          AS u(agent, a_table, a_id, b_table, b_id, co, useful, wrong, at)"""


@cache
def build_strengthen_links_query(
    links_tau: float, links_prune: float, learning_rate: float, wrong_factor: float
) -> Query:
    """Pairs recalled together (co), or confirmed useful together: w ← w + η·(1 − w)
    each, from the weight decayed to that moment; a new link starts at η. Then the wrongs
    of that moment: w ← w · wrong_factor. One round: each pair at most once.

    The settings are written into the text as numbers (floats of validated settings, as
    a batch size is): Citus loses a bind parameter of an upsert's DO UPDATE SET ("could
    not determine data type of parameter")."""
    tau, prune, rate, wrong = (
        f"{float(v)!r}::float8" for v in (links_tau, links_prune, learning_rate, wrong_factor)
    )
    strengthened = (
        f"(1 - (1 - {link_weight_at('excluded.weighted_at', tau=tau)})"
        f" * power(1 - {rate}, excluded.co_retrievals + excluded.useful_count))"
        f" * power({wrong}, excluded.wrong_count)"
    )
    fades = "greatest(l.weighted_at, excluded.weighted_at)"
    return sql(f"""
    INSERT INTO memory_links AS l (agent_id, a_table, a_id, b_table, b_id, weight, weighted_at,
                                   co_retrievals, useful_count, wrong_count, fades_at)
    SELECT u.agent, u.a_table, u.a_id, u.b_table, u.b_id, x.weight, u.at, u.co, u.useful,
           u.wrong, {link_fades_at("x.weight", "u.at", prune=prune, tau=tau)}
    FROM {LINK_PAIRS}
    CROSS JOIN LATERAL (
        SELECT (1 - power(1 - {rate}, u.co + u.useful)) * power({wrong}, u.wrong) AS weight
    ) AS x
    WHERE u.co + u.useful > 0
    ON CONFLICT (agent_id, a_id, b_id) DO UPDATE
    SET weight = {strengthened},
        weighted_at = {fades},
        co_retrievals = l.co_retrievals + excluded.co_retrievals,
        useful_count = l.useful_count + excluded.useful_count,
        wrong_count = l.wrong_count + excluded.wrong_count,
        fades_at = {link_fades_at(strengthened, fades, prune=prune, tau=tau)}
    RETURNING 1
    """)


# Pairs only marked wrong together: existing links weaken; none is created.
WEAKEN_LINKS = sql(f"""
UPDATE memory_links AS l
SET weight = {link_weight_at("u.at")} * power(%(wrong_factor)s::float8, u.wrong),
    weighted_at = greatest(l.weighted_at, u.at),
    wrong_count = l.wrong_count + u.wrong,
    fades_at = {
    link_fades_at(
        f"{link_weight_at('u.at')} * power(%(wrong_factor)s::float8, u.wrong)",
        "greatest(l.weighted_at, u.at)",
    )
}
FROM {LINK_PAIRS}
WHERE u.co + u.useful = 0 AND l.agent_id = u.agent AND l.a_id = u.a_id AND l.b_id = u.b_id
RETURNING 1
""")


# A memory's links (either end; the memory's agent's), with their weight at %(now)s,
# strongest first.
MEMORY_LINKS = sql(f"""
SELECT CASE WHEN l.a_table = %(table)s AND l.a_id = %(id)s THEN l.b_table ELSE l.a_table END
           AS table_name,
       CASE WHEN l.a_table = %(table)s AND l.a_id = %(id)s THEN l.b_id ELSE l.a_id END AS id,
       {link_weight_at("%(now)s")} AS weight, l.weighted_at, l.co_retrievals, l.useful_count,
       l.wrong_count
FROM memory_links AS l
WHERE l.agent_id = %(agent)s
  AND ((l.a_table = %(table)s AND l.a_id = %(id)s) OR (l.b_table = %(table)s AND l.b_id = %(id)s))
  AND {link_weight_at("%(now)s")} >= %(links_prune)s::float8
ORDER BY weight DESC
""")

# The live links of search hits %(ids)s of %(table)s: the memory at the other end, the
# hit it came through, and the link's weight at %(now)s.
NEIGHBOURS = sql(f"""
SELECT CASE WHEN l.a_table = %(table)s AND l.a_id = ANY(%(ids)s::uuid[]) THEN l.b_table
            ELSE l.a_table END AS table_name,
       CASE WHEN l.a_table = %(table)s AND l.a_id = ANY(%(ids)s::uuid[]) THEN l.b_id
            ELSE l.a_id END AS id,
       CASE WHEN l.a_table = %(table)s AND l.a_id = ANY(%(ids)s::uuid[]) THEN l.a_id
            ELSE l.b_id END AS via,
       {link_weight_at("%(now)s")} AS weight
FROM memory_links AS l
WHERE l.agent_id = %(agent)s
  AND ((l.a_table = %(table)s AND l.a_id = ANY(%(ids)s::uuid[]))
       OR (l.b_table = %(table)s AND l.b_id = ANY(%(ids)s::uuid[])))
  AND {link_weight_at("%(now)s")} >= %(links_prune)s::float8
""")


@cache
def build_neighbour_rows_query(spec: TableSpec) -> Query:
    """Live memories %(ids)s of one agent (none below its prune threshold) holding one
    of mem0's terms %(matching)s (any when NULL), with their salience at %(now)s."""
    return sql(f"""
    SELECT m.id, m.content, m.metadata, m.created_at, m.updated_at,
           {salience_expr(spec)} AS salience
    FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy
    WHERE m.id = ANY(%(ids)s::uuid[]) AND m.agent_id = %(agent)s AND NOT m.pruned
      AND {held()} AND {above_threshold(spec)}
    """)


@cache
def build_enqueue_query(spec: TableSpec, *, receipt: bool) -> Query:
    """Events of agent %(agent)s's memories of the ids (NULL: of every memory of each
    id) into the durable queue, each named by its memory's agent and keyed by the call
    %(call)s and its place in it, as ethos_record_retrieval keys them: Citus writes them
    on the agents' shards, where a random key would make it COPY them through the
    coordinator (refused under row security). An id of no such memory is left out.
    With `receipt`, the statement also writes the call's flush receipt (one round trip
    on one server; Citus would COPY the events beside a write of the coordinator's)."""
    return sql(f"""
    {"WITH receipt AS (INSERT INTO ltp_flushes (id) VALUES (%(call)s::uuid))" if receipt else ""}
    INSERT INTO retrieval_queue (agent_id, id, table_name, memory_id, at, kind, grp)
    SELECT m.agent_id, md5(%(call)s::uuid::text || e.n)::uuid, '{spec.name}', m.id, %(at)s,
           %(kind)s, %(grp)s::uuid
    FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS e (id, n)
    JOIN {spec.name} AS m ON m.id = e.id AND (%(agent)s::text IS NULL OR m.agent_id = %(agent)s)
    """)


CLAIM_LTP_FLUSH = STATEMENTS["claim_ltp_flush"]
FORGET_LTP_FLUSHES = STATEMENTS["forget_ltp_flushes"]
POP_RETRIEVAL_QUEUE = STATEMENTS["pop_retrieval_queue"]
SET_ASIDE_EVENTS = STATEMENTS["set_aside_events"]
OLDEST_QUEUED_AGENT = STATEMENTS["oldest_queued_agent"]
RETRIEVAL_QUEUE_BACKLOG = STATEMENTS["retrieval_queue_backlog"]
MAINTENANCE_LOCK_TIMEOUT = STATEMENTS["maintenance_lock_timeout"]
TOUCH_RETRIEVAL_ACTIVITY = STATEMENTS["touch_retrieval_activity"]
