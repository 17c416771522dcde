"""Every SQL statement ethos runs, by name. Statements that differ per memory table are
built from its TableSpec (a closed set, never user input); values are always binds.

Parameters have names: a statement says %(now)s, and `sql()` turns the names into
asyncpg's positions once, so adding a parameter renumbers nothing and a call that
forgets one fails before it reaches the server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ethos.tables import VECTORS, TableSpec

_NAMED = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class Query:
    """A statement in asyncpg's $n form, and the name behind each position."""

    text: str
    names: tuple[str, ...]

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The binds in position order; values the statement does not name are ignored,
        a name without a value is a bug."""
        missing = [name for name in self.names if name not in values]
        if missing:
            raise TypeError(f"query parameters without a value: {', '.join(missing)}")
        return [values[name] for name in self.names]


def sql(text: str) -> Query:
    """%(name)s → $n; a name used twice is one parameter."""
    names: list[str] = []

    def position(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return Query(_NAMED.sub(position, text), tuple(names))


# --- the server -----------------------------------------------------------------------

SERVER_VERSION = sql("SHOW server_version_num")
VECTOR_AVAILABLE = sql("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
DATABASE_EXISTS = sql("SELECT 1 FROM pg_database WHERE datname = %(name)s")
DATABASE_CREATION_LOCK_KEY = 0x45_54_48_4F_02
# Processes starting together would race between the check and the CREATE (and
# concurrent CREATE DATABASE trips over pg_database's unique index): one at a time.
LOCK_DATABASE_CREATION = sql("SELECT pg_advisory_lock(%(key)s)")
DATABASE_NOW = sql("SELECT now()")
PING = sql("SELECT 1")


def create_database(name: str) -> Query:
    """CREATE DATABASE takes no bind parameter: the name is quoted as an identifier."""
    return sql('CREATE DATABASE "{}"'.format(name.replace('"', '""')))


# The columns a memory table has, to tell a table that is not fit for ethos by name.
TABLE_COLUMNS = sql(
    "SELECT column_name::text FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = %(table)s"
)

NIL_ID = "00000000-0000-0000-0000-000000000000"

# --- the decay math, in SQL -------------------------------------------------------------

# The statements below join each memory (alias m) to its policy (alias p) and compute
# with the policy's parameters; these two builders write the functions' arguments in
# their one order.


def salience_call(
    strength: str,
    *,
    anchor: str,
    n: str,
    emotion: str,
    at: str,
    alias: str = "m",
    policy: str = "p",
) -> str:
    """ethos_salience(...): min(1, S × D(t) × boosts) under `policy`'s curve."""
    return (
        f"ethos_salience({strength}, {anchor}, {alias}.created_at, {n}, {emotion},"
        f" {alias}.pinned OR {policy}.never_decays, {at}, {policy}.curve,"
        f" {policy}.base_tau_days, {policy}.ltp_multiplier, {policy}.max_tau_days,"
        f" {policy}.frequency_weight, {policy}.emotional_weight, {policy}.power_exponent)"
    )


def strength_at_call(strength: str, *, at: str, alias: str = "m", policy: str = "p") -> str:
    """ethos_strength_at(...): S × D(t) of a row's stored state at `at`."""
    return (
        f"ethos_strength_at({strength}, {alias}.anchor_at, {alias}.retrieval_count,"
        f" {alias}.pinned OR {policy}.never_decays, {at}, {policy}.curve,"
        f" {policy}.base_tau_days, {policy}.ltp_multiplier, {policy}.max_tau_days,"
        f" {policy}.power_exponent)"
    )


def emotion_of(spec: TableSpec, alias: str = "m") -> str:
    return f"{alias}.{spec.emotion_column}" if spec.emotion_column else "0"


def salience_expr(spec: TableSpec, at: str = "%(now)s", alias: str = "m") -> str:
    """A row's salience at `at`, from its stored state."""
    return salience_call(
        f"{alias}.strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion=emotion_of(spec, alias),
        at=at,
        alias=alias,
    )


def confidence_expr(at: str = "%(now)s", alias: str = "m") -> str:
    """A fact's confidence at `at`: the same curve from its own strength, E = 0."""
    return salience_call(
        f"{alias}.confidence_strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion="0",
        at=at,
        alias=alias,
    )


# --- memories -----------------------------------------------------------------------


@cache
def build_insert_query(spec: TableSpec, columns: tuple[str, ...]) -> Query:
    """columns come from inputs.MemoryInput, a fixed set."""
    values = ", ".join(f"%({c})s" for c in columns)
    return sql(f"INSERT INTO {spec.name} ({', '.join(columns)}) VALUES ({values}) RETURNING id")


@cache
def build_fetch_memory_query(spec: TableSpec) -> Query:
    return sql(f"SELECT * FROM {spec.name} WHERE id = %(id)s")


@cache
def build_count_live_query(spec: TableSpec, *, by_agent: bool) -> Query:
    agent = "AND agent_id = %(agent)s" if by_agent else ""
    return sql(f"SELECT count(*) FROM {spec.name} WHERE NOT pruned {agent}")


@cache
def build_id_states_query(spec: TableSpec) -> Query:
    return sql(f"SELECT id, pruned FROM {spec.name} WHERE id = ANY(%(ids)s::uuid[])")


# --- the sweep ----------------------------------------------------------------------

# A sweep's batches commit asynchronously and run on generic plans (see Store.open).
SWEEP_SESSION_SETTINGS = {"synchronous_commit": "off", "plan_cache_mode": "force_generic_plan"}


@cache
def build_sweep_batch_query(
    spec: TableSpec, *, by_agent: bool, dry_run: bool, batch_size: int
) -> Query:
    """One keyset batch of a sweep, in one statement: the live rows after %(after)s,
    each on its policy's curve, pruned below its policy's threshold.

    The batch size is written into the text (a validated integer from settings): the
    sweep runs on generic plans, and a LIMIT the planner can see keeps the UPDATE a
    nested loop of TID lookups instead of a hash join over the whole table.

    The new values are computed from each row's current state; the UPDATE finds each row
    by its physical address (ctid) and applies only where the row version is still the
    one computed from, so a retrieval's LTP committed in between is never overwritten
    (its own write set the salience already; the next sweep refreshes it). Only rows
    that drift past the tolerance, or that get pruned, are written.
    """
    confidence = f", {confidence_expr()} AS confidence, m.confidence AS stored_confidence"
    prune_value = "confidence" if spec.has_confidence else "salience"
    expired = "WHEN m.expires_at <= %(now)s THEN 'expired'" if spec.has_expiry else ""
    drift = "abs(salience - stored_salience) > %(tolerance)s * salience"
    if spec.has_confidence:
        drift += " OR abs(confidence - stored_confidence) > %(tolerance)s * confidence"
    set_confidence = "confidence = due.confidence," if spec.has_confidence else ""
    agent = "AND m.agent_id = %(agent)s" if by_agent else ""
    if dry_run:
        written = "SELECT due.reason FROM due"
    else:
        written = f"""
        UPDATE {spec.name} AS m
        SET salience = due.salience, {set_confidence}
            pruned = due.reason IS NOT NULL,
            pruned_at = CASE WHEN due.reason IS NOT NULL THEN %(now)s::timestamptz END,
            prune_reason = due.reason
        FROM due
        WHERE m.ctid = due.row_ctid AND m.xmin = due.row_version
        RETURNING due.reason"""
    return sql(f"""
    WITH batch AS (
        SELECT id, row_ctid, row_version, salience, stored_salience
               {", confidence, stored_confidence" if spec.has_confidence else ""},
               CASE WHEN frozen THEN NULL
                    {expired}
                    WHEN {prune_value} < prune_threshold THEN 'decay'
               END AS reason
        FROM (
            SELECT m.id, m.ctid AS row_ctid, m.xmin AS row_version,
                   m.pinned OR p.never_decays AS frozen, p.prune_threshold,
                   m.salience AS stored_salience,
                   {"m.expires_at," if spec.has_expiry else ""}
                   {salience_expr(spec)} AS salience
                   {confidence if spec.has_confidence else ""}
            FROM {spec.name} AS m
            JOIN decay_policies AS p ON p.name = m.policy
            WHERE NOT m.pruned AND m.id > %(after)s {agent}
            ORDER BY m.id
            LIMIT {int(batch_size)}
        ) AS m
    ),
    due AS (
        SELECT * FROM batch WHERE reason IS NOT NULL OR {drift}
    ),
    written AS ({written})
    SELECT (SELECT id FROM batch ORDER BY id DESC LIMIT 1) AS last_id,
           (SELECT count(*) FROM batch) AS scanned,
           (SELECT count(*) FROM written) AS updated,
           (SELECT count(*) FROM written WHERE reason IS NOT NULL) AS pruned
    """)


START_SWEEP_RUN = sql("""
INSERT INTO sweep_runs (trigger, status, swept_at, agent_id, daemon_id)
VALUES (%(trigger)s, 'running', %(now)s, %(agent)s, %(daemon_id)s)
RETURNING id
""")

FINISH_SWEEP_RUN = sql("""
UPDATE sweep_runs
SET status = %(status)s, finished_at = clock_timestamp(), scanned = %(scanned)s,
    updated = %(updated)s, pruned = %(pruned)s, tables = %(tables)s::jsonb, error = %(error)s
WHERE id = %(id)s
""")

# --- LTP ------------------------------------------------------------------------------


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


@cache
def build_ltp_query(spec: TableSpec) -> Query:
    """One round of retrievals on spec's table: each id at most once, with its count n
    and moment `at`. Computed from the row's current state inside the UPDATE, so a
    concurrent sweep batch cannot lose it.

    strength ← min(1, strength at `at` × boost^n) on the row's policy's curve, and the
    anchor moves to `at`: that equals n retrievals applied one after another at that
    moment. A retrieval count that reaches the policy's promote_after moves the row to
    promote_to (along the chain, if one write reaches several rules); the stored values
    are then those of the new policy's curve, which starts at this strength and moment.

    The policy is read in the SET's sub-select, from the row being written: if another
    write changed the row (and its policy) meanwhile, PostgreSQL re-evaluates it on the
    row as that write left it. `before` is the row as this statement first saw it: only
    to report the policy it had.
    """
    fact_state = fact_set = fact_columns = ""
    if spec.has_confidence:
        fact_state = f"""
                       least(1.0, {strength_at_call("m.confidence_strength", at="h.at")}
                                  + %(confidence_bonus)s::float8 * h.n) AS confidence_strength,"""
        confidence = salience_call(
            "s.confidence_strength", anchor="h.at", n="m.retrieval_count + h.n", emotion="0",
            at="h.at", policy="np",
        )  # fmt: skip
        fact_set = "confidence_strength, confidence, "
        fact_columns = f"s.confidence_strength, {confidence}, "
    salience = salience_call(
        "s.strength", anchor="h.at", n="m.retrieval_count + h.n", emotion=emotion_of(spec),
        at="h.at", policy="np",
    )  # fmt: skip
    source = ", m.source_type, m.source_id" if spec.has_source else ""
    return sql(f"""
    UPDATE {spec.name} AS m
    SET (strength, {fact_set}salience, policy) = (
            SELECT s.strength, {fact_columns}{salience}, s.policy
            FROM (
                SELECT least(1.0, {strength_at_call("m.strength", at="h.at")}
                                  * power(%(boost)s::float8, h.n)) AS strength,{fact_state}
                       coalesce(
                           (SELECT u.target
                            FROM unnest(p.promotion_counts, p.promotion_targets)
                                 AS u(reached, target)
                            WHERE u.reached <= m.retrieval_count + h.n
                            ORDER BY u.reached DESC LIMIT 1),
                           p.name) AS policy
                FROM decay_policies AS p
                WHERE p.name = m.policy
            ) AS s
            JOIN decay_policies AS np ON np.name = s.policy),
        retrieval_count = m.retrieval_count + h.n,
        anchor_at = greatest(m.anchor_at, h.at),
        last_retrieved_at = greatest(m.last_retrieved_at, h.at)
    FROM unnest(%(ids)s::uuid[], %(counts)s::int[], %(moments)s::timestamptz[]) AS h(id, n, at)
    JOIN {spec.name} AS before ON before.id = h.id
    WHERE m.id = h.id AND NOT m.pruned
    RETURNING m.id, h.n, h.at, before.policy AS old_policy, m.policy{source}
    """)


@cache
def build_move_query(spec: TableSpec) -> Query:
    """Move one live memory to %(policy)s at %(now)s: its curve is re-anchored there
    (strength = its strength at that moment on the old curve), so its salience goes on
    from where it was, on the new curve."""
    fact_state = fact_columns = ""
    if spec.has_confidence:
        fact_state = f"""
               {strength_at_call("m.confidence_strength", at="%(now)s")} AS confidence_strength,"""
        confidence = salience_call(
            "s.confidence_strength", anchor="s.at", n="m.retrieval_count", emotion="0",
            at="s.at", policy="np",
        )  # fmt: skip
        fact_columns = f"""
        confidence_strength = s.confidence_strength,
        confidence = {confidence},"""
    salience = salience_call(
        "s.strength", anchor="s.at", n="m.retrieval_count", emotion=emotion_of(spec),
        at="s.at", policy="np",
    )  # fmt: skip
    return sql(f"""
    WITH s AS (
        SELECT m.id, m.policy AS old_policy, greatest(m.anchor_at, %(now)s) AS at,
               {strength_at_call("m.strength", at="%(now)s")} AS strength,{fact_state}
               %(policy)s::text AS policy
        FROM {spec.name} AS m
        JOIN decay_policies AS p ON p.name = m.policy
        WHERE m.id = %(id)s AND NOT m.pruned
    )
    UPDATE {spec.name} AS m
    SET strength = s.strength,{fact_columns}
        salience = {salience},
        policy = s.policy,
        anchor_at = s.at
    FROM s JOIN decay_policies AS np ON np.name = s.policy
    WHERE m.id = s.id
    RETURNING m.id, s.old_policy, s.policy, m.salience
    """)


# A flush claims its id in its own transaction: a retry of a flush whose COMMIT went
# through unseen finds the receipt and applies nothing twice.
CLAIM_LTP_FLUSH = sql(
    "INSERT INTO ltp_flushes (id) VALUES (%(id)s) ON CONFLICT DO NOTHING RETURNING id"
)

# Receipts only need to outlive a flush's retries.
FORGET_LTP_FLUSHES = sql("DELETE FROM ltp_flushes WHERE applied_at < now() - interval '1 day'")

TOUCH_RETRIEVAL_ACTIVITY = sql("""
INSERT INTO retrieval_activity (id, last_retrieval_at) VALUES (true, now())
ON CONFLICT (id) DO UPDATE
SET last_retrieval_at = greatest(retrieval_activity.last_retrieval_at, excluded.last_retrieval_at)
""")

# --- search ---------------------------------------------------------------------------

# Index builds get more memory than the server's default 64MB: HNSW builds are ~4x
# faster with 1GB. `SET` takes no bind parameter; the value is a validated setting.
INDEX_BUILD_MEMORY = "SET LOCAL maintenance_work_mem = '{memory}'"

BUILD_VECTOR_INDEX = sql("""
CREATE INDEX IF NOT EXISTS memory_vectors_embedding_hnsw ON memory_vectors
    USING hnsw (embedding vector_cosine_ops) WHERE NOT pruned
""")


def build_search_query(*, exact: bool) -> Query:
    """The nearest live vectors of one agent, re-ranked by similarity × salience^weight.

    Through the HNSW index, the scan is bounded (hnsw.max_scan_tuples): an agent with
    few memories near the query can leave it short of k. `exact` then scans that
    agent's vectors through its b-tree index instead; `+ 0` keeps the planner from
    using the HNSW ordering for it.
    """
    distance = "m.embedding <=> %(embedding)s::vector"
    order = f"({distance}) + 0" if exact else distance
    return sql(f"""
    WITH candidates AS MATERIALIZED (
        SELECT m.*, {distance} AS distance
        FROM memory_vectors AS m
        WHERE m.agent_id = %(agent)s AND NOT m.pruned
          AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
        ORDER BY {order}
        LIMIT %(candidates)s
    ),
    ranked AS (
        SELECT c.id, c.content, c.metadata, c.source_type, c.source_id,
               1 - c.distance AS similarity,
               {salience_expr(VECTORS, alias="c")} AS salience
        FROM candidates AS c
        JOIN decay_policies AS p ON p.name = c.policy
    )
    SELECT r.*, r.similarity * power(r.salience, %(salience_weight)s::float8) AS score,
           coalesce(e.content, f.content) AS source_content
    FROM ranked AS r
    LEFT JOIN episodic_traces AS e ON r.source_type = 'episodic_traces' AND e.id = r.source_id
    LEFT JOIN semantic_facts AS f ON r.source_type = 'semantic_facts' AND f.id = r.source_id
    ORDER BY score DESC, r.id
    LIMIT %(k)s
    """)


SEARCH_VECTORS = build_search_query(exact=False)
SEARCH_VECTORS_EXACT = build_search_query(exact=True)


def search_server_settings(candidates: int, max_scan_tuples: int) -> dict[str, str]:
    """pgvector settings for every pooled connection: enough candidates for the re-rank,
    and iterative scans (pgvector >= 0.8) so an agent filter still fills them, bounded so
    that a query far from all of an agent's memories cannot walk the whole graph."""
    return {
        "hnsw.ef_search": str(max(40, candidates)),
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.max_scan_tuples": str(max_scan_tuples),
    }


# --- the daemon ---------------------------------------------------------------------

# One sweeper at a time, across processes and hosts: a session-level advisory lock,
# released by PostgreSQL when its connection ends (kill -9 included).
SWEEP_LOCK_KEY = 0x45_54_48_4F_01
TRY_SWEEP_LOCK = sql("SELECT pg_try_advisory_lock(%(key)s)")

# Idle: no retrieval recorded (by any process) for %(seconds)s.
IS_IDLE = sql("""
SELECT coalesce(max(last_retrieval_at) < now() - make_interval(secs => %(seconds)s), true)
FROM retrieval_activity
""")

# When the next sweep is due: an interval after the last one that did not fail.
LAST_SWEEP_FINISHED = sql("""
SELECT max(coalesce(finished_at, started_at)) FROM sweep_runs WHERE status <> 'failed'
""")

DAEMON_HEARTBEAT = sql("""
INSERT INTO daemons (id, host, pid, role, lock_backend_pid, next_sweep_due,
                     ltp_backlog, ltp_dropped)
VALUES (%(id)s, %(host)s, %(pid)s, %(role)s, %(lock_backend_pid)s, %(next_sweep_due)s,
        %(ltp_backlog)s, %(ltp_dropped)s)
ON CONFLICT (id) DO UPDATE
SET heartbeat_at = now(), role = excluded.role, lock_backend_pid = excluded.lock_backend_pid,
    next_sweep_due = excluded.next_sweep_due, ltp_backlog = excluded.ltp_backlog,
    ltp_dropped = excluded.ltp_dropped
""")

DAEMON_STOPPED = sql("UPDATE daemons SET stopped_at = now(), role = 'standby' WHERE id = %(id)s")

# --- status -------------------------------------------------------------------------

# Daemons whose heartbeat is recent, and whether each holds the sweep lock now (seen in
# pg_locks, so a dead holder is never reported).
STATUS_DAEMONS = sql("""
SELECT d.id, d.host, d.pid, d.role, d.started_at, d.heartbeat_at, d.next_sweep_due,
       d.ltp_backlog, d.ltp_dropped,
       EXISTS (
           SELECT 1 FROM pg_locks AS l
           WHERE l.locktype = 'advisory' AND l.granted AND l.pid = d.lock_backend_pid
             AND ((l.classid::bigint << 32) | l.objid::bigint) = %(lock_key)s
       ) AS holds_sweep_lock
FROM daemons AS d
WHERE d.stopped_at IS NULL AND d.heartbeat_at > now() - make_interval(secs => %(alive_seconds)s)
ORDER BY d.started_at
""")

STATUS_LAST_SWEEP = sql("""
SELECT id, trigger, status, started_at, finished_at, swept_at, scanned, updated, pruned,
       tables, daemon_id,
       round(extract(epoch FROM finished_at - started_at) * 1000) AS duration_ms
FROM sweep_runs ORDER BY started_at DESC LIMIT 1
""")


# --- monitoring ---------------------------------------------------------------------

# --- policies: the settings' copy in the database ---------------------------------------

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
INSERT INTO ethos_settings AS s (id, default_policy, importance_otherwise, at_risk_margin)
VALUES (true, %(default_policy)s, %(importance_otherwise)s, %(at_risk_margin)s)
ON CONFLICT (id) DO UPDATE
SET default_policy = excluded.default_policy,
    importance_otherwise = excluded.importance_otherwise,
    at_risk_margin = excluded.at_risk_margin, updated_at = now()
WHERE (s.default_policy, s.importance_otherwise, s.at_risk_margin)
      IS DISTINCT FROM (excluded.default_policy, excluded.importance_otherwise,
                        excluded.at_risk_margin)
""")

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
UNASSIGN_AGENT_POLICY = sql(
    "DELETE FROM agent_policies WHERE agent_id = %(agent)s RETURNING policy"
)

# %(agent)s: one agent, or NULL for all.
STATS = {
    "counts": sql("""
        SELECT table_name, sum(live)::bigint AS live, sum(pruned)::bigint AS pruned,
               sum(pinned)::bigint AS pinned
        FROM ethos_agent_counts
        WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
        GROUP BY table_name ORDER BY table_name
    """),
    "salience_by_age": sql("""
        SELECT table_name, age_bucket, avg(salience) AS avg_salience, count(*) AS count
        FROM ethos_memories
        WHERE NOT pruned AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
        GROUP BY table_name, age_bucket ORDER BY table_name, min(created_at) DESC
    """),
    "at_risk": sql("""
        SELECT table_name, count(*) AS count FROM ethos_at_risk
        WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
        GROUP BY table_name ORDER BY table_name
    """),
    "most_retrieved": sql("""
        SELECT table_name, id, agent_id, content, retrieval_count, salience
        FROM ethos_most_retrieved WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s LIMIT 5
    """),
    "recent_sweeps": sql("""
        SELECT id, trigger, status, started_at, duration_ms, scanned, updated, pruned,
               rows_per_second
        FROM ethos_sweep_history LIMIT 5
    """),
    "ltp": sql("""
        SELECT daemon_id, role, ltp_backlog, ltp_dropped FROM ethos_ltp
    """),
    "policies": sql("""
        SELECT table_name, policy,
               count(*) FILTER (WHERE NOT pruned) AS live,
               count(*) FILTER (WHERE pruned) AS pruned,
               avg(salience) FILTER (WHERE NOT pruned) AS avg_salience
        FROM ethos_memories
        WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s
        GROUP BY table_name, policy ORDER BY table_name, policy
    """),
}

PRUNED_AT = sql("""
SELECT table_name, id, content FROM ethos_memories
WHERE agent_id = %(agent)s AND pruned AND pruned_at = %(at)s
ORDER BY table_name, id
""")

# --- recovery -----------------------------------------------------------------------

# Pruned rows matching a selector; each selector part is NULL when not given.
RECOVERY_FILTER = """
    pruned
    AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s))
    AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    AND (%(since)s::timestamptz IS NULL OR pruned_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR pruned_at < %(until)s)
    AND (%(reason)s::text IS NULL OR prune_reason = %(reason)s)
    AND id > %(after)s
"""


@cache
def build_recovery_candidates_query(spec: TableSpec, batch_size: int) -> Query:
    return sql(f"""
    SELECT id, agent_id, left(content, 80) AS content, pruned_at, prune_reason
    FROM {spec.name}
    WHERE {RECOVERY_FILTER}
    ORDER BY id LIMIT {int(batch_size)}
    """)


@cache
def build_recover_batch_query(spec: TableSpec, batch_size: int) -> Query:
    """Bring a batch back with a fresh start: %(strength)s anchored at %(now)s; content,
    embedding, retrieval count and history stay. An expired row loses its expiry, or
    the next sweep would prune it again at once."""
    fact = (
        "confidence_strength = %(strength)s, confidence = %(strength)s,"
        if spec.has_confidence
        else ""
    )
    expiry = (
        "expires_at = CASE WHEN m.expires_at <= %(now)s THEN NULL ELSE m.expires_at END,"
        if spec.has_expiry
        else ""
    )
    return sql(f"""
    WITH batch AS (
        SELECT id FROM {spec.name}
        WHERE {RECOVERY_FILTER}
        ORDER BY id LIMIT {int(batch_size)}
        FOR UPDATE
    )
    UPDATE {spec.name} AS m
    SET pruned = false, pruned_at = NULL, prune_reason = NULL, {fact} {expiry}
        strength = %(strength)s, salience = %(strength)s, anchor_at = %(now)s
    FROM batch
    WHERE m.id = batch.id
    RETURNING m.id
    """)


RECORD_RECOVERY = sql("""
INSERT INTO recoveries (recovered_as_of, table_name, selector, command, recovered, strength)
VALUES (%(now)s, %(table)s, %(selector)s::jsonb, %(command)s, %(recovered)s, %(strength)s)
RETURNING id
""")
