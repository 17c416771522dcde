"""Every SQL statement ethos runs, by name. Statements that differ per memory table are
built from its TableSpec (a closed set, never user input); values are always binds.

Decay parameters travel as binds in one fixed order (DecayParams.sql_args): the
salience expressions below take them as $2..$6, with the sweep's `now` as $1.
"""

from __future__ import annotations

from ethos.schema import VECTORS, TableSpec

DECAY_ARGS = "$2, $3, $4, $5, $6"

# --- the server -----------------------------------------------------------------------

SERVER_VERSION = "SHOW server_version_num"
VECTOR_AVAILABLE = "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = $1"
DATABASE_CREATION_LOCK_KEY = 0x45_54_48_4F_02
LOCK_DATABASE_CREATION = "SELECT pg_advisory_lock($1)"


def create_database(name: str) -> str:
    """CREATE DATABASE takes no bind parameter: the name is quoted as an identifier."""
    return 'CREATE DATABASE "{}"'.format(name.replace('"', '""'))


NIL_ID = "00000000-0000-0000-0000-000000000000"


def salience_call(
    strength: str, *, anchor: str, n: str, emotion: str, at: str, alias: str = "m"
) -> str:
    """ethos_salience(...) with its arguments in their one order: written here only."""
    return (
        f"ethos_salience({strength}, {anchor}, {alias}.created_at, {n}, {emotion},"
        f" {alias}.pinned, {at}, {DECAY_ARGS})"
    )


def strength_at_call(strength: str, *, at: str, alias: str = "m") -> str:
    """ethos_strength_at(...): S × e^(−t/τ) of a row's stored state at `at`."""
    return (
        f"ethos_strength_at({strength}, {alias}.anchor_at, {alias}.retrieval_count,"
        f" {alias}.pinned, {at}, $2, $3, $4)"
    )


def emotion_of(spec: TableSpec, alias: str = "m") -> str:
    return f"{alias}.{spec.emotion_column}" if spec.emotion_column else "0"


def salience_expr(spec: TableSpec, at: str = "$1", alias: str = "m") -> str:
    """A row's salience at `at`, from its stored state."""
    return salience_call(
        f"{alias}.strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion=emotion_of(spec, alias),
        at=at,
        alias=alias,
    )


def confidence_expr(at: str = "$1", alias: str = "m") -> str:
    """A fact's confidence at `at`: the same curve from its own strength, E = 0."""
    return salience_call(
        f"{alias}.confidence_strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion="0",
        at=at,
        alias=alias,
    )


def build_sweep_batch_query(
    spec: TableSpec, *, by_agent: bool, dry_run: bool, batch_size: int
) -> str:
    """One keyset batch of a sweep, in one statement.

    $1 now, $2..$6 decay parameters, $7 prune threshold, $8 refresh tolerance,
    $9 the last id of the previous batch, $10 agent (when by_agent).

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
    expired = "WHEN m.expires_at <= $1 THEN 'expired'" if spec.has_expiry else ""
    drift = "abs(salience - stored_salience) > $8 * salience"
    if spec.has_confidence:
        drift += " OR abs(confidence - stored_confidence) > $8 * confidence"
    set_confidence = "confidence = due.confidence," if spec.has_confidence else ""
    agent = "AND m.agent_id = $10" if by_agent else ""
    if dry_run:
        written = "SELECT due.reason FROM due"
    else:
        written = f"""
        UPDATE {spec.name} AS m
        SET salience = due.salience, {set_confidence}
            pruned = due.reason IS NOT NULL,
            pruned_at = CASE WHEN due.reason IS NOT NULL THEN $1::timestamptz END,
            prune_reason = due.reason
        FROM due
        WHERE m.ctid = due.row_ctid AND m.xmin = due.row_version
        RETURNING due.reason"""
    return f"""
    WITH batch AS (
        SELECT id, row_ctid, row_version, salience, stored_salience
               {", confidence, stored_confidence" if spec.has_confidence else ""},
               CASE WHEN pinned THEN NULL
                    {expired}
                    WHEN {prune_value} < $7 THEN 'decay'
               END AS reason
        FROM (
            SELECT m.id, m.ctid AS row_ctid, m.xmin AS row_version, m.pinned,
                   m.salience AS stored_salience,
                   {"m.expires_at," if spec.has_expiry else ""}
                   {salience_expr(spec)} AS salience
                   {confidence if spec.has_confidence else ""}
            FROM {spec.name} AS m
            WHERE NOT m.pruned AND m.id > $9 {agent}
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
    """


def build_count_live_query(spec: TableSpec, *, by_agent: bool) -> str:
    agent = "AND agent_id = $1" if by_agent else ""
    return f"SELECT count(*) FROM {spec.name} WHERE NOT pruned {agent}"


def build_insert_query(spec: TableSpec, columns: list[str]) -> str:
    """columns come from inputs.MemoryInput, a fixed set."""
    values = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    return f"INSERT INTO {spec.name} ({', '.join(columns)}) VALUES ({values}) RETURNING id"


def build_fetch_memory_query(spec: TableSpec) -> str:
    return f"SELECT * FROM {spec.name} WHERE id = $1"


DATABASE_NOW = "SELECT now()"

SWEEP_SESSION = "SET synchronous_commit = off; SET plan_cache_mode = force_generic_plan"

START_SWEEP_RUN = """
INSERT INTO sweep_runs (trigger, status, swept_at, agent_id, daemon_id)
VALUES ($1, 'running', $2, $3, $4)
RETURNING id
"""

FINISH_SWEEP_RUN = """
UPDATE sweep_runs
SET status = $2, finished_at = clock_timestamp(),
    scanned = $3, updated = $4, pruned = $5, tables = $6::jsonb, error = $7
WHERE id = $1
"""


def build_ltp_query(spec: TableSpec) -> str:
    """One round of retrievals on spec's table: each id at most once, with its count n
    and moment `at`. Computed from the row's current state inside the UPDATE, so a
    concurrent sweep batch cannot lose it.

    $1 boost, $2..$6 decay parameters, $7 ids, $8 counts, $9 moments,
    $10 confidence bonus (facts only).

    strength ← min(1, strength at `at` × boost^n), the anchor moves to `at`; that equals
    n retrievals applied one after another at that moment.
    """
    strength = f"least(1.0, {strength_at_call('m.strength', at='h.at')} * power($1::float8, h.n))"
    after = {"anchor": "h.at", "n": "m.retrieval_count + h.n", "at": "h.at"}
    fact_columns = ""
    if spec.has_confidence:
        confidence = (
            f"least(1.0, {strength_at_call('m.confidence_strength', at='h.at')}"
            " + $10::float8 * h.n)"
        )
        fact_columns = f"""
        confidence_strength = {confidence},
        confidence = {salience_call(confidence, emotion="0", **after)},"""
    source = ", m.source_type, m.source_id" if spec.has_expiry else ""
    return f"""
    UPDATE {spec.name} AS m
    SET strength = {strength},{fact_columns}
        salience = {salience_call(strength, emotion=emotion_of(spec), **after)},
        retrieval_count = m.retrieval_count + h.n,
        anchor_at = greatest(m.anchor_at, h.at),
        last_retrieved_at = greatest(m.last_retrieved_at, h.at)
    FROM unnest($7::uuid[], $8::int[], $9::timestamptz[]) AS h(id, n, at)
    WHERE m.id = h.id AND NOT m.pruned
    RETURNING m.id, h.n, h.at{source}
    """


# A flush claims its id in its own transaction: a retry of a flush whose COMMIT went
# through unseen finds the receipt and applies nothing twice.
CLAIM_LTP_FLUSH = "INSERT INTO ltp_flushes (id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id"

# Receipts only need to outlive a flush's retries.
FORGET_LTP_FLUSHES = "DELETE FROM ltp_flushes WHERE applied_at < now() - interval '1 day'"

# Index builds get more memory than the server's default 64MB: HNSW builds are ~4x
# faster with 1GB. `SET` takes no bind parameter; the value is a validated setting.
INDEX_BUILD_MEMORY = "SET maintenance_work_mem = '{memory}'"

BUILD_VECTOR_INDEX = """
CREATE INDEX IF NOT EXISTS memory_vectors_embedding_hnsw ON memory_vectors
    USING hnsw (embedding vector_cosine_ops) WHERE NOT pruned
"""

TOUCH_RETRIEVAL_ACTIVITY = """
INSERT INTO retrieval_activity (id, last_retrieval_at) VALUES (true, now())
ON CONFLICT (id) DO UPDATE
SET last_retrieval_at = greatest(retrieval_activity.last_retrieval_at, excluded.last_retrieval_at)
"""


def build_search_query(*, exact: bool) -> str:
    """The nearest live vectors of one agent, re-ranked by similarity × salience^weight.

    $1 now, $2..$6 decay parameters, $7 agent, $8 query vector, $9 candidates taken
    before the re-rank, $10 k, $11 salience weight.

    Through the HNSW index, the scan is bounded (hnsw.max_scan_tuples): an agent with
    few memories near the query can leave it short of k. `exact` then scans that
    agent's vectors through its b-tree index instead; `+ 0` keeps the planner from
    using the HNSW ordering for it.
    """
    distance = "m.embedding <=> $8::vector"
    order = f"({distance}) + 0" if exact else distance
    return f"""
    WITH candidates AS MATERIALIZED (
        SELECT m.*, {distance} AS distance
        FROM memory_vectors AS m
        WHERE m.agent_id = $7 AND NOT m.pruned AND (m.expires_at IS NULL OR m.expires_at > $1)
        ORDER BY {order}
        LIMIT $9
    ),
    ranked AS (
        SELECT c.id, c.content, c.metadata, c.source_type, c.source_id,
               1 - c.distance AS similarity,
               {salience_expr(VECTORS, alias="c")} AS salience
        FROM candidates AS c
    )
    SELECT r.*, r.similarity * power(r.salience, $11::float8) AS score,
           coalesce(e.content, f.content) AS source_content
    FROM ranked AS r
    LEFT JOIN episodic_traces AS e ON r.source_type = 'episodic_traces' AND e.id = r.source_id
    LEFT JOIN semantic_facts AS f ON r.source_type = 'semantic_facts' AND f.id = r.source_id
    ORDER BY score DESC, r.id
    LIMIT $10
    """


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
TRY_SWEEP_LOCK = "SELECT pg_try_advisory_lock($1)"
PING = "SELECT 1"

# Idle: no retrieval recorded (by any process) for $1 seconds.
IS_IDLE = """
SELECT coalesce(max(last_retrieval_at) < now() - make_interval(secs => $1), true)
FROM retrieval_activity
"""

# When the next sweep is due: an interval after the last one that did not fail.
LAST_SWEEP_FINISHED = """
SELECT max(coalesce(finished_at, started_at)) FROM sweep_runs WHERE status <> 'failed'
"""

DAEMON_HEARTBEAT = """
INSERT INTO daemons (id, host, pid, role, lock_backend_pid, next_sweep_due,
                     ltp_backlog, ltp_dropped)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id) DO UPDATE
SET heartbeat_at = now(), role = excluded.role, lock_backend_pid = excluded.lock_backend_pid,
    next_sweep_due = excluded.next_sweep_due, ltp_backlog = excluded.ltp_backlog,
    ltp_dropped = excluded.ltp_dropped
"""

DAEMON_STOPPED = "UPDATE daemons SET stopped_at = now(), role = 'standby' WHERE id = $1"

# --- status -------------------------------------------------------------------------

# Daemons whose heartbeat is recent ($1 seconds), and whether each holds the sweep lock
# now (seen in pg_locks, so a dead holder is never reported).
STATUS_DAEMONS = """
SELECT d.id, d.host, d.pid, d.role, d.started_at, d.heartbeat_at, d.next_sweep_due,
       d.ltp_backlog, d.ltp_dropped,
       EXISTS (
           SELECT 1 FROM pg_locks AS l
           WHERE l.locktype = 'advisory' AND l.granted AND l.pid = d.lock_backend_pid
             AND ((l.classid::bigint << 32) | l.objid::bigint) = $2
       ) AS holds_sweep_lock
FROM daemons AS d
WHERE d.stopped_at IS NULL AND d.heartbeat_at > now() - make_interval(secs => $1)
ORDER BY d.started_at
"""

STATUS_LAST_SWEEP = """
SELECT id, trigger, status, started_at, finished_at, swept_at, scanned, updated, pruned,
       tables, daemon_id,
       round(extract(epoch FROM finished_at - started_at) * 1000) AS duration_ms
FROM sweep_runs ORDER BY started_at DESC LIMIT 1
"""


# --- monitoring ---------------------------------------------------------------------

# The settings a sweep runs with, for the views that compare against the threshold.
RECORD_DECAY_SETTINGS = """
INSERT INTO decay_settings (id, prune_threshold, at_risk_margin, base_tau_days, ltp_multiplier,
                            max_tau_days, frequency_weight, emotional_weight)
VALUES (true, $1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE
SET prune_threshold = excluded.prune_threshold, at_risk_margin = excluded.at_risk_margin,
    base_tau_days = excluded.base_tau_days, ltp_multiplier = excluded.ltp_multiplier,
    max_tau_days = excluded.max_tau_days, frequency_weight = excluded.frequency_weight,
    emotional_weight = excluded.emotional_weight, updated_at = now()
"""

# $1: one agent, or NULL for all.
STATS_COUNTS = """
SELECT table_name, sum(live)::bigint AS live, sum(pruned)::bigint AS pruned,
       sum(pinned)::bigint AS pinned
FROM ethos_agent_counts
WHERE $1::text IS NULL OR agent_id = $1
GROUP BY table_name ORDER BY table_name
"""

STATS_BY_AGE = """
SELECT table_name, age_bucket, avg(salience) AS avg_salience, count(*) AS count
FROM ethos_memories
WHERE NOT pruned AND ($1::text IS NULL OR agent_id = $1)
GROUP BY table_name, age_bucket ORDER BY table_name, min(created_at) DESC
"""

STATS_AT_RISK = """
SELECT table_name, count(*) AS count FROM ethos_at_risk
WHERE $1::text IS NULL OR agent_id = $1
GROUP BY table_name ORDER BY table_name
"""

STATS_MOST_RETRIEVED = """
SELECT table_name, id, agent_id, content, retrieval_count, salience
FROM ethos_most_retrieved WHERE $1::text IS NULL OR agent_id = $1 LIMIT 5
"""

STATS_SWEEPS = """
SELECT id, trigger, status, started_at, duration_ms, scanned, updated, pruned, rows_per_second
FROM ethos_sweep_history LIMIT 5
"""

STATS_LTP = "SELECT daemon_id, role, ltp_backlog, ltp_dropped FROM ethos_ltp"

PRUNED_AT = """
SELECT table_name, id, content FROM ethos_memories
WHERE agent_id = $1 AND pruned AND pruned_at = $2
ORDER BY table_name, id
"""

# --- recovery -----------------------------------------------------------------------

# Pruned rows matching a selector; each selector part is NULL when not given.
# $1 ids, $2 agent, $3 pruned since, $4 pruned until, $5 reason, $6 after id.
RECOVERY_FILTER = """
    pruned
    AND ($1::uuid[] IS NULL OR id = ANY($1))
    AND ($2::text IS NULL OR agent_id = $2)
    AND ($3::timestamptz IS NULL OR pruned_at >= $3)
    AND ($4::timestamptz IS NULL OR pruned_at < $4)
    AND ($5::text IS NULL OR prune_reason = $5)
    AND id > $6
"""


def build_recovery_candidates_query(spec: TableSpec, batch_size: int) -> str:
    return f"""
    SELECT id, agent_id, left(content, 80) AS content, pruned_at, prune_reason
    FROM {spec.name}
    WHERE {RECOVERY_FILTER}
    ORDER BY id LIMIT {int(batch_size)}
    """


def build_recover_batch_query(spec: TableSpec, batch_size: int) -> str:
    """Bring a batch back with a fresh start: strength $7 anchored at $8 (now); content,
    embedding, retrieval count and history stay. An expired vector loses its expiry,
    or the next sweep would prune it again at once."""
    fact = "confidence_strength = $7, confidence = $7," if spec.has_confidence else ""
    expiry = (
        "expires_at = CASE WHEN m.expires_at <= $8 THEN NULL ELSE m.expires_at END,"
        if spec.has_expiry
        else ""
    )
    return f"""
    WITH batch AS (
        SELECT id FROM {spec.name}
        WHERE {RECOVERY_FILTER}
        ORDER BY id LIMIT {int(batch_size)}
        FOR UPDATE
    )
    UPDATE {spec.name} AS m
    SET pruned = false, pruned_at = NULL, prune_reason = NULL, {fact} {expiry}
        strength = $7, salience = $7, anchor_at = $8
    FROM batch
    WHERE m.id = batch.id
    RETURNING m.id
    """


def build_id_states_query(spec: TableSpec) -> str:
    return f"SELECT id, pruned FROM {spec.name} WHERE id = ANY($1::uuid[])"


RECORD_RECOVERY = """
INSERT INTO recoveries (recovered_as_of, table_name, selector, command, recovered, strength)
VALUES ($1, $2, $3::jsonb, $4, $5, $6)
RETURNING id
"""
