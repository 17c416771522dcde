"""The statements of the sweep: keyset and due batches, the due count, sweep runs."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    confidence_expr,
    emotion_of,
    hint_live_rows,
    hint_moments,
    insert_hints,
    policy_columns,
    salience_expr,
    scheduled,
)
from ethos.domain.tables import TableSpec

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)


def _sweep_columns(spec: TableSpec) -> str:
    """What a sweep reads and computes of a row m, on its policy p, at %(now)s: its
    values now, what was stored, and what scheduled() needs to schedule it anew. What
    a batch's every look at its rows reads (their key, place and moments) comes first:
    a row of a CTE is decoded only up to the last column read."""
    fact = (
        f""", {confidence_expr()} AS confidence, m.confidence AS old_confidence,
               m.confidence_strength"""
        if spec.has_confidence
        else ""
    )
    return f"""m.id, m.ctid AS row_ctid, m.xmin AS row_version, m.agent_id,
               m.due_at AS old_due, m.prune_at AS old_prune,
               m.pinned OR p.never_decays AS frozen, {policy_columns("p")},
               m.strength, m.anchor_at, m.reinforcement AS n, m.created_at,
               {emotion_of(spec)} AS emotion, %(now)s::timestamptz AS reference,
               m.salience AS old_salience, {"m.expires_at," if spec.has_expiry else ""}
               {salience_expr(spec)} AS salience{fact}"""


def _prune_reason(spec: TableSpec) -> str:
    """Why a row computed by _sweep_columns is pruned now (NULL: it is not)."""
    expired = "WHEN expires_at <= %(now)s THEN 'expired'" if spec.has_expiry else ""
    deciding = "confidence" if spec.has_confidence else "salience"
    return f"""CASE WHEN frozen THEN NULL
                    {expired}
                    WHEN {deciding} < prune_threshold THEN 'decay'
               END"""


def _sweep_write(spec: TableSpec, source: str) -> str:
    """Write the rows of `source` (`(...) AS due`, with _sweep_columns and `reason`):
    their values, their prune, and when a sweep must come back to them. Only where the
    row version is still the one computed from: a retrieval's LTP committed in between
    is never overwritten (its own write stored its values and schedule already). Rows
    another transaction holds are skipped, not waited for (an agent role may hold its
    own for hours: decision 0022); the batch puts their hints back for the next sweep.
    Every row is locked before any is written, so the UPDATE waits on no row, in
    whatever order it writes them."""
    stored = "salience AS stored_salience" + (
        ", confidence AS stored_confidence" if spec.has_confidence else ""
    )
    # Only what the UPDATE uses leaves the schedule (OFFSET 0 keeps it a subquery of its
    # own): a subquery joined to an UPDATE's target is carried whole (as a record) for
    # PostgreSQL's recheck of concurrently updated rows, so a narrow one costs far less
    # than every column the schedule computed on.
    confidence = "confidence, " if spec.has_confidence else ""
    rows = f"""SELECT id, row_ctid, row_version, salience, {confidence}reason, due_at, prune_at,
               old_due, old_prune
        FROM ({scheduled(spec, f"SELECT *, {stored} FROM {source}")}) AS s
        OFFSET 0"""
    set_confidence = "confidence = d.confidence," if spec.has_confidence else ""
    # The target rows are those the lock took, in one scan of their places, joined to
    # the schedule by a hash on place and version: a filter of the schedule's rows by the
    # locked places (`= ANY` of an array) compared every pair, and a join by place
    # looked each row up again, each look a new scan (500 a batch).
    return f"""
        UPDATE {spec.name} AS m
        SET salience = d.salience, {set_confidence}
            pruned = d.reason IS NOT NULL,
            pruned_at = CASE WHEN d.reason IS NOT NULL THEN %(now)s::timestamptz END,
            prune_reason = d.reason,
            due_at = CASE WHEN d.reason IS NULL THEN d.due_at END,
            prune_at = CASE WHEN d.reason IS NULL THEN d.prune_at END
        FROM ({rows}) AS d
        WHERE m.ctid = ANY (ARRAY(
                SELECT l.ctid FROM {spec.name} AS l
                WHERE l.ctid = ANY (ARRAY(SELECT due.row_ctid FROM {source}))
                FOR NO KEY UPDATE SKIP LOCKED))
          AND m.ctid = d.row_ctid AND m.xmin = d.row_version
        RETURNING m.id, m.ctid AS place, m.agent_id, ethos_slice(m.ctid) AS slice, d.reason,
                  m.due_at, m.prune_at, d.old_due, d.old_prune"""


# What a sweep batch wrote (CTE `written`), in one pass: rows written, of them pruned,
# of those by expiry.
_WRITTEN_COUNTS = """(
        SELECT count(*) AS updated, count(*) FILTER (WHERE reason IS NOT NULL) AS pruned,
               count(*) FILTER (WHERE reason = 'expired') AS expired
        FROM written) AS w"""


def _held(due: str) -> str:
    """The rows of `due` a batch did not write: another transaction held them (or had
    just changed them)."""
    return f"(SELECT count(*) FROM {due}) - w.updated AS held"


# Hints a due batch considers: reading one costs a page, and groups hold many rows.
HINTS_A_BATCH = 64


@cache
def build_sweep_batch_query(
    spec: TableSpec, *, by_agent: bool, dry_run: bool, batch_size: int
) -> Query:
    """One keyset batch of a full sweep, in one statement: the live rows after
    %(after)s up to %(upto)s (a worker's range), each on its policy's curve, pruned
    below its policy's threshold. Rows whose values drifted past the tolerance, or that
    get pruned, are written.

    The batch size is written into the text (a validated integer from settings): the
    sweep runs on generic plans, and a LIMIT the planner can see keeps the UPDATE a
    nested loop of TID lookups instead of a hash join over the whole table.
    """
    drift = "abs(salience - old_salience) > %(tolerance)s * salience"
    if spec.has_confidence:
        drift += " OR abs(confidence - old_confidence) > %(tolerance)s * confidence"
    # A row whose schedule says it is due (an unscheduled one, -infinity, too) is
    # written and scheduled anew even where its values have not drifted: a full sweep
    # leaves every live row it read scheduled for later than its moment.
    drift += " OR old_due <= %(now)s OR old_prune <= %(now)s"
    # a sweep of one agent (`ethos sweep --agent`): its rows alone, and it hints only what
    # it wrote (a sweep of the whole table hints every row it read)
    agent = "AND m.agent_id = %(agent)s" if by_agent else ""
    # (The rows to write are read from the batch, not from a CTE of their own: that
    # would copy every due row once more.)
    due = "(SELECT * FROM batch WHERE is_due) AS due"
    if dry_run:
        written = f"SELECT reason FROM {due}"
        hinted = "SELECT"
    elif by_agent:
        written = _sweep_write(spec, due)
        hinted = insert_hints(
            spec,
            hint_moments("written", earlier=True, sliced=True),
            since="%(now)s::timestamptz",
            sliced=True,
        )
    else:
        # A sweep of the whole table hints every row it read, so that at its end it can
        # drop the hints older than itself (build_drop_hints_query): those it wrote at their
        # new moments, the others at the moments they have, and those a concurrent write
        # changed before this one could at once (that write hinted its own moments only
        # where earlier than the ones it found).
        # Each row's slice is computed once, before its two kinds (OFFSET 0 keeps it so).
        written = _sweep_write(spec, due)
        hinted = insert_hints(
            spec,
            f"""{hint_moments("written", sliced=True)}
            UNION ALL
            SELECT kind.prune, CASE WHEN kind.prune THEN b.old_prune ELSE b.old_due END,
                   b.id, b.row_ctid, b.agent_id, b.slice
            FROM (SELECT id, row_ctid, agent_id, old_due, old_prune, ethos_slice(row_ctid) AS slice
                  FROM batch WHERE NOT is_due OFFSET 0) AS b
            CROSS JOIN (VALUES (false), (true)) AS kind (prune)
            WHERE CASE WHEN kind.prune THEN b.old_prune ELSE b.old_due END IS NOT NULL
            UNION ALL
            SELECT kind.prune, %(now)s, b.id, b.row_ctid, b.agent_id, b.slice
            FROM (SELECT id, row_ctid, agent_id, ethos_slice(row_ctid) AS slice
                  FROM batch AS b
                  WHERE b.is_due
                    AND (SELECT count(*) FROM written) < (SELECT count(*) FROM batch WHERE is_due)
                    AND NOT EXISTS (SELECT 1 FROM written AS w WHERE w.id = b.id)
                  OFFSET 0) AS b
            CROSS JOIN (VALUES (false), (true)) AS kind (prune)""",
            since="%(now)s::timestamptz",
            sliced=True,
        )
    return sql(f"""
    WITH batch AS (
        SELECT reason IS NOT NULL OR {drift} AS is_due, *
        FROM (
            SELECT *, {_prune_reason(spec)} AS reason
            FROM (
                SELECT {_sweep_columns(spec)}
                FROM {spec.name} AS m
                JOIN decay_policies AS p ON p.name = m.policy
                WHERE NOT m.pruned AND m.id > %(after)s AND m.id <= %(upto)s {agent}
                ORDER BY m.id
                LIMIT {int(batch_size)}
            ) AS m
        ) AS m
    ),
    written AS ({written}),
    hinted AS ({hinted})
    SELECT (SELECT id FROM batch ORDER BY id DESC LIMIT 1) AS last_id,
           (SELECT count(*) FROM batch) AS scanned, w.*, {_held(due)}
    FROM {_WRITTEN_COUNTS}
    """)


@cache
def build_due_batch_query(spec: TableSpec, *, prune: bool, batch_size: int) -> Query:
    """One batch of a due sweep (prune=False: every write that is due) or of a prune
    pass (prune=True: only rows due to be pruned), in one statement.

    It pops the earliest hints of its kind at or before %(now)s from the slices in
    %(slices)s (which this sweeper holds: no other pops them) until they hold batch_size
    rows (the last one's overflow is put back), looks at their rows, and writes those
    that are due (unscheduled rows, -infinity, are) as a full sweep would, scheduled
    anew. A hint of a row that is not due (it moved since) is put back for when it is;
    one of a row that another transaction holds, or changed meanwhile, for the next
    sweep (just after %(now)s: this one does not pop it again; a change that moved the
    row's moment earlier hinted it). Each row's own due_at/prune_at is the truth; the
    hints only point at it.
    """
    kind = str(prune).lower()
    old = "old_prune" if prune else "old_due"
    # What the batch wrote, scheduled anew; what it looked at and did not write: for
    # when it is due, or at once if another write changed it meanwhile (rare: counts
    # gate that look, as they gate the lookup of moved rows); its overflow.
    hinted = insert_hints(
        spec,
        f"""{hint_moments("written", earlier=True, always=prune, sliced=True)}
        UNION ALL
        SELECT {kind}, l.{old}, l.id, l.row_ctid, l.agent_id, ethos_slice(l.row_ctid)
        FROM looked AS l
        WHERE NOT l.is_due AND l.{old} IS NOT NULL
        UNION ALL
        SELECT {kind}, %(now)s::timestamptz + interval '1 microsecond', l.id, l.row_ctid,
               l.agent_id, ethos_slice(l.row_ctid)
        FROM looked AS l
        WHERE l.is_due
          AND (SELECT count(*) FROM written) < (SELECT count(*) FROM looked WHERE is_due)
          AND NOT EXISTS (SELECT 1 FROM written AS w WHERE w.id = l.id)
        UNION ALL
        SELECT {kind}, at, id, place, agent_id, ethos_slice(place) FROM members
        WHERE k > {int(batch_size)}""",
        since="%(now)s::timestamptz",
        sliced=True,
    )
    # (The fence keeps the policies a hash join: the planner expects one row here and
    # would look a policy up by index for each of the batch's rows.)
    rows = f"""SELECT {_sweep_columns(spec)}, m.pruned
        FROM {spec.name} AS m
        JOIN (SELECT * FROM decay_policies OFFSET 0) AS p ON p.name = m.policy"""
    return sql(
        f"""
    WITH popped AS (
        -- the earliest hints of each slice, through the index (a range per slice: the
        -- index gives them in order, so a sweep with nothing due reads next to nothing),
        -- until they hold batch_size rows
        DELETE FROM {spec.due_table} AS d
        WHERE d.ctid = ANY (ARRAY(
            SELECT h.ctid FROM (
                SELECT h.ctid, sum(h.n) OVER (ROWS UNBOUNDED PRECEDING) - h.n AS before
                FROM unnest(%(slices)s::smallint[]) AS s (slice)
                CROSS JOIN LATERAL (
                    SELECT ctid, n FROM {spec.due_table}
                    WHERE prune = {kind} AND slice = s.slice AND at <= %(now)s
                    ORDER BY at LIMIT {HINTS_A_BATCH}
                ) AS h
                LIMIT {HINTS_A_BATCH}
            ) AS h
            WHERE h.before < {int(batch_size)}))
        RETURNING d.at, d.n, d.ids, d.places, d.agent_id
    ),
    -- their rows, numbered; those past batch_size (of the last hint) go back
    members AS (
        SELECT u.id, u.place, p.agent_id, p.before + u.k AS k, p.at
        FROM (SELECT *, sum(n) OVER (ORDER BY at ROWS UNBOUNDED PRECEDING) - n AS before
              FROM popped) AS p
        CROSS JOIN LATERAL unnest(p.ids, p.places) WITH ORDINALITY AS u (id, place, k)
    ),
    taken AS (SELECT id, place FROM members WHERE k <= {int(batch_size)}),
    -- the rows where their hints saw them: one scan of their pages, in order
    at_place AS MATERIALIZED (
        {rows}
        WHERE m.ctid = ANY (ARRAY(SELECT place FROM taken))
          AND m.id IN (SELECT id FROM taken)
    ),
    looked AS MATERIALIZED (
        SELECT m.{old} <= %(now)s AS is_due, m.*, {_prune_reason(spec)} AS reason
        FROM (
            SELECT * FROM at_place
            UNION ALL
            -- and those that moved since (any update makes a new version), by id
            {rows}
            WHERE (SELECT count(*) FROM at_place) < (SELECT count(*) FROM taken)
              AND m.id IN (SELECT id FROM taken WHERE id NOT IN (SELECT id FROM at_place))
        ) AS m
        WHERE NOT m.pruned
    ),
    written AS ({_sweep_write(spec, "(SELECT * FROM looked WHERE is_due) AS due")}),
    hinted AS ({hinted})
    SELECT (SELECT count(*) FROM popped) AS popped,
           (SELECT count(*) FROM taken) AS visited,
           (SELECT count(*) FROM looked WHERE is_due) AS scanned, w.*,
           {_held("looked WHERE is_due")}
    FROM {_WRITTEN_COUNTS}
    """
    )


@cache
def build_count_due_query(spec: TableSpec) -> Query:
    """Rows hinted at or before %(now)s, for a sweep (%(prune)s false) or a prune pass (a
    row may be in more than one hint, and a group's rows after its first may be due
    later): the work ahead, at most. A builder: the table varies."""
    return sql(
        f"SELECT coalesce(sum(n), 0) FROM {spec.due_table}"
        " WHERE prune = %(prune)s AND at <= %(now)s"
    )


HINT_HORIZON = STATEMENTS["hint_horizon"]


# Pages sampled to split a table between the workers of a full sweep, or to tell whether
# it is nearly all due (40 MB, ~20 ms): a table's pages hold runs of ids, so a sample of
# pages is coarser than as many rows. At 3M rows the median of 1,000 pages split the
# live rows up to 53/47 (5 tries), of 5,000 pages within 51/49.
SAMPLE_PAGES = 5000


def _sampled(spec: TableSpec) -> str:
    """The live rows of a sample of SAMPLE_PAGES of the table's pages as they are now
    (every row of a smaller table); the planner's relpages may be stale, or 0."""
    pages = f"pg_relation_size('{spec.name}'::regclass) / current_setting('block_size')::bigint"
    percent = f"least(100, 100.0 * {SAMPLE_PAGES} / greatest({pages}, 1))"
    return f"{spec.name} TABLESAMPLE SYSTEM ({percent}) WHERE NOT pruned"


@cache
def build_due_share_query(spec: TableSpec) -> Query:
    """The share of the live rows due at %(now)s (a write or a prune; unscheduled ones,
    -infinity, are) in a sample of the table (NULL for an empty one)."""
    return sql(f"""
    SELECT avg(coalesce(due_at <= %(now)s OR prune_at <= %(now)s, false)::int)::float8
    FROM {_sampled(spec)}""")


@cache
def build_split_query(spec: TableSpec) -> Query:
    """Ids that cut a table's live rows into ranges of about equal size, for the workers
    of a full sweep: the %(fractions)s quantiles of the ids in a sample of the table
    (NULL for an empty one)."""
    return sql(f"""
    SELECT percentile_disc(%(fractions)s::float8[]) WITHIN GROUP (ORDER BY id)
    FROM {_sampled(spec)}""")


@cache
def build_drop_hints_query(spec: TableSpec) -> Query:
    """After a full sweep of the whole table that began at %(horizon)s: the hints it
    superseded (it hinted every row it read, and a concurrent write's hints are newer)."""
    return sql(f"DELETE FROM {spec.due_table} WHERE made < %(horizon)s::text::xid8")


@cache
def build_rehint_query(spec: TableSpec) -> Query:
    """Every hint of a table made again from its rows' own moments (due_at, prune_at),
    in one statement: what it drops and what it hints are of one snapshot, and a write
    committed after it hinted its own rows. After the rows moved (distributed), where
    their hints named places they left. How many rows it hinted."""
    return sql(f"""
    WITH dropped AS (DELETE FROM {spec.due_table}),
    hinted AS ({hint_live_rows(spec)} RETURNING n)
    SELECT coalesce(sum(n), 0)::bigint FROM hinted""")


START_SWEEP_RUN = STATEMENTS["start_sweep_run"]
FINISH_SWEEP_RUN = STATEMENTS["finish_sweep_run"]


# A due sweep's work is split into slices (ethos_slice of the row's place); a sweeper holds
# each slice it works on by a session-level advisory lock, so several sweepers share the
# work and a dead one's slices are free as soon as its connection is gone.
# Refresh sweeps and prune passes lock slices apart: a prune pass runs beside a long
# sweep (a row they both reach is written once; the other finds it changed and moves on).
SWEEP_SLICE_LOCK_CLASS = 0x45_54_48_04
PRUNE_SLICE_LOCK_CLASS = 0x45_54_48_05
TRY_SLICE_LOCKS = STATEMENTS["try_slice_locks"]
UNLOCK_SLICES = STATEMENTS["unlock_slices"]
LAST_SWEEP_FINISHED = STATEMENTS["last_sweep_finished"]
PRUNED_AT = STATEMENTS["pruned_at"]
REMOVE_FADED_LINKS = STATEMENTS["remove_faded_links"]
ANYTHING_DUE = STATEMENTS["anything_due"]
