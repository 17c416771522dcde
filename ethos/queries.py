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

# The decay parameters of the settings, by the names the statements below use.
DECAY_PARAMETERS = (
    "%(base_tau_days)s, %(ltp_multiplier)s, %(max_tau_days)s, %(frequency_weight)s,"
    " %(emotional_weight)s"
)
STRENGTH_PARAMETERS = "%(base_tau_days)s, %(ltp_multiplier)s, %(max_tau_days)s"


def salience_call(
    strength: str, *, anchor: str, n: str, emotion: str, at: str, alias: str = "m"
) -> str:
    """ethos_salience(...) with its arguments in their one order: written here only."""
    return (
        f"ethos_salience({strength}, {anchor}, {alias}.created_at, {n}, {emotion},"
        f" {alias}.pinned, {at}, {DECAY_PARAMETERS})"
    )


def strength_at_call(strength: str, *, at: str, alias: str = "m") -> str:
    """ethos_strength_at(...): S × e^(−t/τ) of a row's stored state at `at`."""
    return (
        f"ethos_strength_at({strength}, {alias}.anchor_at, {alias}.retrieval_count,"
        f" {alias}.pinned, {at}, {STRENGTH_PARAMETERS})"
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
    """One keyset batch of a sweep, in one statement: the live rows after %(after)s.

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
               CASE WHEN pinned THEN NULL
                    {expired}
                    WHEN {prune_value} < %(prune_threshold)s THEN 'decay'
               END AS reason
        FROM (
            SELECT m.id, m.ctid AS row_ctid, m.xmin AS row_version, m.pinned,
                   m.salience AS stored_salience,
                   {"m.expires_at," if spec.has_expiry else ""}
                   {salience_expr(spec)} AS salience
                   {confidence if spec.has_confidence else ""}
            FROM {spec.name} AS m
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
def build_ltp_query(spec: TableSpec) -> Query:
    """One round of retrievals on spec's table: each id at most once, with its count n
    and moment `at`. Computed from the row's current state inside the UPDATE, so a
    concurrent sweep batch cannot lose it.

    strength ← min(1, strength at `at` × boost^n), the anchor moves to `at`; that equals
    n retrievals applied one after another at that moment.
    """
    strength = (
        f"least(1.0, {strength_at_call('m.strength', at='h.at')} * power(%(boost)s::float8, h.n))"
    )
    after = {"anchor": "h.at", "n": "m.retrieval_count + h.n", "at": "h.at"}
    fact_columns = ""
    if spec.has_confidence:
        confidence = (
            f"least(1.0, {strength_at_call('m.confidence_strength', at='h.at')}"
            " + %(confidence_bonus)s::float8 * h.n)"
        )
        fact_columns = f"""
        confidence_strength = {confidence},
        confidence = {salience_call(confidence, emotion="0", **after)},"""
    source = ", m.source_type, m.source_id" if spec.has_source else ""
    return sql(f"""
    UPDATE {spec.name} AS m
    SET strength = {strength},{fact_columns}
        salience = {salience_call(strength, emotion=emotion_of(spec), **after)},
        retrieval_count = m.retrieval_count + h.n,
        anchor_at = greatest(m.anchor_at, h.at),
        last_retrieved_at = greatest(m.last_retrieved_at, h.at)
    FROM unnest(%(ids)s::uuid[], %(counts)s::int[], %(moments)s::timestamptz[]) AS h(id, n, at)
    WHERE m.id = h.id AND NOT m.pruned
    RETURNING m.id, h.n, h.at{source}
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

# What the views compare against: the prune threshold and the at-risk margin.
RECORD_MONITORING_SETTINGS = sql("""
INSERT INTO decay_settings (id, prune_threshold, at_risk_margin)
VALUES (true, %(prune_threshold)s, %(at_risk_margin)s)
ON CONFLICT (id) DO UPDATE
SET prune_threshold = excluded.prune_threshold, at_risk_margin = excluded.at_risk_margin,
    updated_at = now()
""")

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
