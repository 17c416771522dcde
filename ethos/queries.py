"""Every SQL statement ethos runs, by name. Statements that differ per memory table are
built from its TableSpec (a closed set, never user input); values are always binds.

Decay parameters travel as binds in one fixed order (DecayParams.sql_args): the
salience expressions below take them as $2..$6, with the sweep's `now` as $1.
"""

from __future__ import annotations

from ethos.schema import TableSpec

DECAY_ARGS = "$2, $3, $4, $5, $6"
NIL_ID = "00000000-0000-0000-0000-000000000000"


def salience_expr(spec: TableSpec, at: str = "$1", alias: str = "m") -> str:
    emotion = f"{alias}.{spec.emotion_column}" if spec.emotion_column else "0"
    return (
        f"ethos_salience({alias}.strength, {alias}.anchor_at, {alias}.created_at, "
        f"{alias}.retrieval_count, {emotion}, {alias}.pinned, {at}, {DECAY_ARGS})"
    )


def confidence_expr(at: str = "$1", alias: str = "m") -> str:
    return (
        f"ethos_salience({alias}.confidence_strength, {alias}.anchor_at, {alias}.created_at, "
        f"{alias}.retrieval_count, 0, {alias}.pinned, {at}, {DECAY_ARGS})"
    )


def build_sweep_batch_query(spec: TableSpec, *, by_agent: bool, dry_run: bool) -> str:
    """One keyset batch of a sweep, in one statement.

    $1 now, $2..$6 decay parameters, $7 prune threshold, $8 refresh tolerance,
    $9 the last id of the previous batch, $10 batch size, $11 agent (when by_agent).

    The new values are computed from each row's current state; the UPDATE applies only
    where the row version (xmin) is still the one computed from, so a retrieval's LTP
    committed in between is never overwritten (its own write set the salience already).
    Only rows that drift past the tolerance, or that get pruned, are written.
    """
    confidence = f", {confidence_expr()} AS confidence, m.confidence AS stored_confidence"
    prune_value = "confidence" if spec.has_confidence else "salience"
    expired = "WHEN m.expires_at <= $1 THEN 'expired'" if spec.has_expiry else ""
    drift = "abs(salience - stored_salience) > $8 * salience"
    if spec.has_confidence:
        drift += " OR abs(confidence - stored_confidence) > $8 * confidence"
    set_confidence = "confidence = due.confidence," if spec.has_confidence else ""
    agent = "AND m.agent_id = $11" if by_agent else ""
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
        WHERE m.id = due.id AND m.xmin = due.row_version
        RETURNING due.reason"""
    return f"""
    WITH batch AS (
        SELECT id, row_version, salience, stored_salience
               {", confidence, stored_confidence" if spec.has_confidence else ""},
               CASE WHEN pinned THEN NULL
                    {expired}
                    WHEN {prune_value} < $7 THEN 'decay'
               END AS reason
        FROM (
            SELECT m.id, m.xmin AS row_version, m.pinned, m.salience AS stored_salience,
                   {"m.expires_at," if spec.has_expiry else ""}
                   {salience_expr(spec)} AS salience
                   {confidence if spec.has_confidence else ""}
            FROM {spec.name} AS m
            WHERE NOT m.pruned AND m.id > $9 {agent}
            ORDER BY m.id
            LIMIT $10
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
    """columns come from inputs.MemoryInput, a fixed set; the embedding goes in as text."""
    values = ", ".join(
        f"${i}::text::vector" if name == "embedding" else f"${i}"
        for i, name in enumerate(columns, start=1)
    )
    return f"INSERT INTO {spec.name} ({', '.join(columns)}) VALUES ({values}) RETURNING id"


def build_fetch_memory_query(spec: TableSpec) -> str:
    return f"SELECT * FROM {spec.name} WHERE id = $1"


DATABASE_NOW = "SELECT now()"

START_SWEEP_RUN = """
INSERT INTO sweep_runs (trigger, status, swept_at, agent_id)
VALUES ($1, 'running', $2, $3)
RETURNING id
"""

FINISH_SWEEP_RUN = """
UPDATE sweep_runs
SET status = $2, finished_at = clock_timestamp(),
    scanned = $3, updated = $4, pruned = $5, tables = $6::jsonb, error = $7
WHERE id = $1
"""
