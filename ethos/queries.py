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

from ethos.decay import (
    MAX_EXPONENT,
    MIN_EXPONENT,
    POWER_RETENTION_AT_TAU,
    REFINE_BELOW,
    SCHEDULE_HORIZON_DAYS,
    SECONDS_PER_DAY,
)
from ethos.tables import FACTS, MEMORY_TABLES, SOURCE_TABLES, VECTORS, TableSpec

_SOURCE_SPECS = frozenset(SOURCE_TABLES)
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
    " ORDER BY ordinal_position"
)
CURRENT_DATABASE = sql("SELECT current_database()::text")
EXISTING_ROLES = sql("SELECT rolname::text FROM pg_roles WHERE rolname = ANY (%(names)s::text[])")

# `ethos roles`: which agents each agent role speaks for (row-level security reads it).
SET_AGENT_ROLES = sql("""
WITH cleared AS (DELETE FROM ethos_agent_roles)
INSERT INTO ethos_agent_roles (role_name, agent_id)
SELECT * FROM unnest(%(roles)s::text[], %(agents)s::text[])
""")

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


def salience_expr(spec: TableSpec, at: str = "%(now)s", alias: str = "m", policy: str = "p") -> str:
    """A row's salience at `at`, from its stored state."""
    return salience_call(
        f"{alias}.strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion=emotion_of(spec, alias),
        at=at,
        alias=alias,
        policy=policy,
    )


def confidence_expr(at: str = "%(now)s", alias: str = "m", policy: str = "p") -> str:
    """A fact's confidence at `at`: the same curve from its own strength, E = 0."""
    return salience_call(
        f"{alias}.confidence_strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.retrieval_count",
        emotion="0",
        at=at,
        alias=alias,
        policy=policy,
    )


# --- when a sweep must write a row next (ethos.decay's schedule, in SQL) ---------------
#
# scheduled() wraps a relation whose rows carry a memory's curve, the values just stored
# for it, and its policy's parameters (SCHEDULE_INPUTS), and adds due_at and prune_at.
# It computes in layers of sub-selects, each naming what the next reuses: written as
# one expression the schedule would repeat its parts many times over (and PostgreSQL
# inlines a SQL function only when the arguments its body uses twice are cheap).

SCHEDULE_INPUTS = """strength, anchor_at, n, emotion, created_at, frozen, reference,
    stored_salience [, confidence_strength, stored_confidence] [, expires_at],
    curve, base_tau_days, ltp_multiplier, max_tau_days, frequency_weight, emotional_weight,
    power_exponent, prune_threshold"""

POLICY_PARAMETERS = """{p}.curve, {p}.base_tau_days, {p}.ltp_multiplier, {p}.max_tau_days,
    {p}.frequency_weight, {p}.emotional_weight, {p}.power_exponent, {p}.prune_threshold"""


def policy_columns(alias: str) -> str:
    """A policy's parameters, as scheduled() reads them."""
    return POLICY_PARAMETERS.format(p=alias)


def _days(log_strength: str, log_target: str, after_anchor: str) -> str:
    """decay.falls_below's days_at: days after the anchor until the value falls to the
    target, with f taken that many days after the anchor (or at the reference, if
    later); within [0, horizon]."""
    age = f"greatest(_anchor_age + {after_anchor}, _reference_age)"
    y = (
        f"({log_strength} - {log_target}"
        f" + ln(1 + frequency_weight * least(n / greatest({age}, 1), 1)))"
    )
    days = (
        f"CASE WHEN curve = 'power' THEN _tau / _power_factor"
        f" * (exp(least({y} / power_exponent, {MAX_EXPONENT})) - 1) ELSE _tau * {y} END"
    )
    return f"least(greatest({days}, 0), {SCHEDULE_HORIZON_DAYS})"


def _value_due(value: str, strength: str, stored: str, floor: str, target: str, days: str) -> str:
    """decay.value_due for a value just stored exactly at the reference (so it has not
    drifted there): when a sweep must rewrite it (NULL: never)."""
    return f"""CASE
        WHEN frozen THEN NULL
        WHEN {stored} < {floor} THEN reference
        WHEN {target} <= 0 THEN NULL
        WHEN {strength} <= 0 THEN greatest(anchor_at, reference + interval '1 second')
        ELSE greatest(anchor_at + make_interval(secs => {days} * {SECONDS_PER_DAY}),
                      reference + interval '1 second')
    END /* {value} */"""


def scheduled(
    spec: TableSpec,
    source: str,
    *,
    tolerance: str = "%(tolerance)s::float8",
    order_by_id: bool = False,
) -> str:
    """`source` (a relation with SCHEDULE_INPUTS) with due_at and prune_at: when its row
    next needs any write (drift, prune, expiry), and when it next needs pruning. The
    values were stored exactly as they are at `reference`."""
    facts = spec.has_confidence
    # The drifts to watch, each (name, its strength, stored value, floor); the last one
    # decides pruning.
    values = [("salience", "strength", "stored_salience", "0" if facts else "prune_threshold")]
    if facts:
        values.append(("confidence", "confidence_strength", "stored_confidence", "prune_threshold"))
    deciding_strength, deciding_stored = values[-1][1], values[-1][2]
    logs = [
        f"ln(greatest({strength}, 1e-300))"
        + ("" if strength == "confidence_strength" else
           " + ln(1 + emotional_weight * least(greatest(emotion, 0), 1))")
        + f" AS _log_{name}"
        for name, strength, _, _ in values
    ]  # fmt: skip
    targets = [
        f"greatest({stored} / (1 + {tolerance}), {floor}) AS _target_{name}"
        for name, _, stored, floor in values
    ]
    layer1 = f"""SELECT _s.*,
               ethos_tau_days(n, base_tau_days, ltp_multiplier, max_tau_days) AS _tau,
               power({POWER_RETENTION_AT_TAU}, -1 / power_exponent) - 1 AS _power_factor,
               date_part('epoch', anchor_at - created_at) / {SECONDS_PER_DAY} AS _anchor_age,
               date_part('epoch', reference - created_at) / {SECONDS_PER_DAY} AS _reference_age,
               {", ".join(logs)}, {", ".join(targets)}
        FROM ({source}) AS _s OFFSET 0"""
    # Each crossing to find: (key, the value's log strength, log target).
    crossings = [(name, f"_log_{name}", f"_log_target_{name}") for name, *_ in values]
    crossings.append(("prune", f"_log_{values[-1][0]}", "_log_threshold"))
    log_targets = ", ".join(
        f"ln(greatest(_target_{name}, 1e-300)) AS _log_target_{name}" for name, *_ in values
    )
    # Frozen rows never cross; a memory never retrieved crosses where the first step says.
    latest = [
        f"CASE WHEN frozen THEN 0 ELSE {_days(log, log_target, '0')} END AS _latest_{key}"
        for key, log, log_target in crossings
    ]
    layer2 = f"""SELECT _1.*, {", ".join(latest)}
        FROM (SELECT _1.*, {log_targets}, ln(prune_threshold) AS _log_threshold,
                     greatest(_reference_age - _anchor_age, 0) AS _elapsed
              FROM ({layer1}) AS _1 OFFSET 0) AS _1 OFFSET 0"""
    answers = [
        f"CASE WHEN frozen OR n = 0 THEN _latest_{key}"
        f" ELSE {_days(log, log_target, f'_latest_{key}')} END AS _answer_{key}"
        for key, log, log_target in crossings
    ]
    layer3 = f"SELECT _2.*, {', '.join(answers)} FROM ({layer2}) AS _2 OFFSET 0"
    # Where the curve is at the reference, and how fast it falls there (for a Newton
    # step): ln D(elapsed) + ln(1 + α·f), and −d/dt of that.
    slope = """(CASE WHEN curve = 'power'
                  THEN power_exponent * _power_factor / _tau / (1 + _power_factor * _elapsed / _tau)
                  ELSE 1 / _tau END
              + CASE WHEN _reference_age > greatest(n, 1)
                  THEN frequency_weight * (n / _reference_age) / _reference_age
                       / (1 + frequency_weight * n / _reference_age)
                  ELSE 0 END)"""
    reference_log = """(CASE WHEN curve = 'power'
                  THEN -power_exponent * ln(1 + _power_factor * _elapsed / _tau)
                  ELSE -_elapsed / _tau END
              + ln(1 + frequency_weight * least(n / greatest(_reference_age, 1), 1)))"""
    refined = []
    for name, log, log_target in crossings[:-1]:
        # decay.candidates: halfway, the end of f's plateau, one Newton step; the value
        # stays above target until the earlier of each and the crossing with f there.
        moments = [
            f"((_latest_{name} + _answer_{name}) / 2)",
            "greatest(greatest(n, 1) - _anchor_age, 0)",
            f"(_elapsed + greatest({log} + {reference_log} - {log_target}, 0) / {slope})",
        ]
        tries = ", ".join(f"least({t}, {_days(log, log_target, t)})" for t in moments)
        # (Only where the bracket, seen from the reference, is wide: most rows are settled
        # by the first two steps.)
        refined.append(
            f"CASE WHEN frozen OR n = 0"
            f" OR _answer_{name} - _elapsed >= {REFINE_BELOW} * (_latest_{name} - _elapsed)"
            f" THEN _answer_{name} ELSE greatest(_answer_{name}, {tries}) END AS _days_{name}"
        )
    layer4 = f"SELECT _3.*, {', '.join(refined)} FROM ({layer3}) AS _3 OFFSET 0"
    dues = [
        _value_due(name, strength, stored, floor, f"_target_{name}", f"_days_{name}")
        for name, strength, stored, floor in values
    ]
    expires = "expires_at" if spec.has_expiry else "NULL::timestamptz"
    if spec.has_expiry:
        dues.append(f"CASE WHEN NOT frozen THEN {expires} END")
    prune_at = f"""CASE WHEN frozen THEN NULL ELSE least(
            CASE WHEN {deciding_stored} < prune_threshold THEN reference
                 WHEN {deciding_strength} <= 0
                     THEN greatest(anchor_at, reference + interval '1 second')
                 ELSE greatest(anchor_at + make_interval(secs => _answer_prune * {SECONDS_PER_DAY}),
                               reference + interval '1 second')
            END, {expires}) END"""
    return f"""SELECT _4.*, least({", ".join(dues)}) AS due_at, {prune_at} AS prune_at
        FROM ({layer4}) AS _4{" ORDER BY _4.id" if order_by_id else ""}"""


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


def _sweep_columns(spec: TableSpec) -> str:
    """What a sweep reads and computes of a row m, on its policy p, at %(now)s: its
    values now, what was stored, and what scheduled() needs to schedule it anew."""
    fact = (
        f""", {confidence_expr()} AS confidence, m.confidence AS old_confidence,
               m.confidence_strength"""
        if spec.has_confidence
        else ""
    )
    return f"""m.id, m.ctid AS row_ctid, m.xmin AS row_version,
               m.pinned OR p.never_decays AS frozen, {policy_columns("p")},
               m.strength, m.anchor_at, m.retrieval_count AS n, m.created_at,
               {emotion_of(spec)} AS emotion, %(now)s::timestamptz AS reference,
               m.salience AS old_salience, m.due_at AS old_due, m.prune_at AS old_prune,
               {"m.expires_at," if spec.has_expiry else ""}
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
    """Write the rows of `source` (with _sweep_columns and `reason`), in id order (as
    LTP flushes and other sweeps lock them): their values, their prune, and when a sweep
    must come back to them. Only where the row version is still the one computed from:
    a retrieval's LTP committed in between is never overwritten (its own write stored
    its values and schedule already)."""
    stored = "salience AS stored_salience" + (
        ", confidence AS stored_confidence" if spec.has_confidence else ""
    )
    rows = scheduled(spec, f"SELECT *, {stored} FROM {source}", order_by_id=True)
    set_confidence = "confidence = d.confidence," if spec.has_confidence else ""
    return f"""
        UPDATE {spec.name} AS m
        SET salience = d.salience, {set_confidence}
            pruned = d.reason IS NOT NULL,
            pruned_at = CASE WHEN d.reason IS NOT NULL THEN %(now)s::timestamptz END,
            prune_reason = d.reason,
            due_at = CASE WHEN d.reason IS NULL THEN d.due_at END,
            prune_at = CASE WHEN d.reason IS NULL THEN d.prune_at END
        FROM ({rows}) AS d
        WHERE m.ctid = d.row_ctid AND m.xmin = d.row_version
        RETURNING m.id, m.ctid AS place, d.reason, m.due_at, m.prune_at, d.old_due, d.old_prune"""


# What a sweep batch wrote (CTE `written`), in one pass: rows written, of them pruned,
# of those by expiry.
_WRITTEN_COUNTS = """(
        SELECT count(*) AS updated, count(*) FILTER (WHERE reason IS NOT NULL) AS pruned,
               count(*) FILTER (WHERE reason = 'expired') AS expired
        FROM written) AS w"""


# Hints come in groups: the rows one statement scheduled, of one kind and slice, whose
# moments lie within a factor of √2 of each other seen from the statement's moment (a
# batch at most; statements of any size group by HINT_GROUP_ROWS instead). A group is
# due at its earliest moment; the sweep that pops it looks at each of its rows where the
# hint saw it, writes those that are due, and groups the others anew. One hint row a
# group, not a row: see migration 0013.
HINT_GROUP_ROWS = 500
# Hints a due batch considers: reading one costs a page, and groups hold many rows.
HINTS_A_BATCH = 64


def _insert_hints(spec: TableSpec, rows: str, *, since: str | None) -> str:
    """Insert the hints of `rows` (prune, at, id, place), grouped as above; without
    `since` (rows due at one moment, any number of them), by kind and slice, in parts
    of HINT_GROUP_ROWS."""
    if since:
        group = f"floor(2 * ln(greatest(date_part('epoch', r.at - {since}) / 60, 1)) / ln(2))"
    else:
        group = f"""(row_number() OVER (PARTITION BY r.prune, r.slice ORDER BY r.id) - 1)
                    / {HINT_GROUP_ROWS}"""
    return f"""
        INSERT INTO {spec.due_table} (prune, at, slice, n, ids, places)
        SELECT prune, min(at), slice, count(*), array_agg(id), array_agg(place)
        FROM (SELECT r.*, {group} AS part
              FROM (SELECT r.*, ethos_slice(r.place) AS slice FROM ({rows}) AS r) AS r) AS g
        GROUP BY prune, slice, part"""


def _moments(rows: str, *, earlier: bool = False, always: bool | None = None) -> str:
    """Hint rows (prune, at, id, place) for the rows of `rows` (id, place, due_at,
    prune_at), one for each kind they have a moment of (false: any write, due_at; true:
    pruning, prune_at). With `earlier`, only moments earlier than the one the row had
    (old_due, old_prune: the hint of the old one still stands for a later one), except
    for the kind `always`."""
    moment = "CASE WHEN kind.prune THEN r.prune_at ELSE r.due_at END"
    where = f"{moment} IS NOT NULL"
    if earlier:
        sooner = """NOT (CASE WHEN kind.prune THEN r.prune_at >= r.old_prune
                              ELSE r.due_at >= r.old_due END)"""
        if always is not None:
            sooner = f"(kind.prune = {str(always).lower()} OR {sooner})"
        where += f"\n          AND {sooner}"
    return f"""SELECT kind.prune, {moment} AS at, r.id, r.place
        FROM {rows} AS r CROSS JOIN (VALUES (false), (true)) AS kind (prune)
        WHERE {where}"""


@cache
def build_sweep_batch_query(
    spec: TableSpec, *, by_agent: bool, dry_run: bool, batch_size: int
) -> Query:
    """One keyset batch of a full sweep, in one statement: the live rows after
    %(after)s, each on its policy's curve, pruned below its policy's threshold. Rows
    whose values drifted past the tolerance, or that get pruned, are written.

    The batch size is written into the text (a validated integer from settings): the
    sweep runs on generic plans, and a LIMIT the planner can see keeps the UPDATE a
    nested loop of TID lookups instead of a hash join over the whole table.
    """
    drift = "abs(salience - old_salience) > %(tolerance)s * salience"
    if spec.has_confidence:
        drift += " OR abs(confidence - old_confidence) > %(tolerance)s * confidence"
    agent = "AND m.agent_id = %(agent)s" if by_agent else ""
    if dry_run:
        written = "SELECT reason FROM due"
        hinted = "SELECT"
    else:
        written = _sweep_write(spec, "due")
        hinted = _insert_hints(
            spec, _moments("written", earlier=True), since="%(now)s::timestamptz"
        )
    return sql(f"""
    WITH batch AS (
        SELECT *, {_prune_reason(spec)} AS reason
        FROM (
            SELECT {_sweep_columns(spec)}
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
    written AS ({written}),
    hinted AS ({hinted})
    SELECT (SELECT id FROM batch ORDER BY id DESC LIMIT 1) AS last_id,
           (SELECT count(*) FROM batch) AS scanned, w.*
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
    a row that another write changed meanwhile is put back at once. Each row's own
    due_at/prune_at is the truth; the hints only point at it.
    """
    kind = str(prune).lower()
    old = "old_prune" if prune else "old_due"
    # What the batch wrote, scheduled anew; what it looked at and did not write: for
    # when it is due, or at once if another write changed it meanwhile (rare: counts
    # gate that look, as they gate the lookup of moved rows); its overflow.
    hinted = _insert_hints(
        spec,
        f"""{_moments("written", earlier=True, always=prune)}
        UNION ALL
        SELECT {kind}, l.{old}, l.id, l.row_ctid FROM looked AS l
        WHERE NOT l.is_due AND l.{old} IS NOT NULL
        UNION ALL
        SELECT {kind}, %(now)s, l.id, l.row_ctid FROM looked AS l
        WHERE l.is_due
          AND (SELECT count(*) FROM written) < (SELECT count(*) FROM looked WHERE is_due)
          AND NOT EXISTS (SELECT 1 FROM written AS w WHERE w.id = l.id)
        UNION ALL
        SELECT {kind}, at, id, place FROM members WHERE k > {int(batch_size)}""",
        since="%(now)s::timestamptz",
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
        RETURNING d.at, d.n, d.ids, d.places
    ),
    -- their rows, numbered; those past batch_size (of the last hint) go back
    members AS (
        SELECT u.id, u.place, p.before + u.k AS k, p.at
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
        SELECT m.*, {_prune_reason(spec)} AS reason, m.{old} <= %(now)s AS is_due
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
           (SELECT count(*) FROM looked WHERE is_due) AS scanned, w.*
    FROM {_WRITTEN_COUNTS}
    """
    )


@cache
def build_count_due_query(spec: TableSpec, *, prune: bool) -> Query:
    """Rows hinted at or before %(now)s (a row may be in more than one hint, and a
    group's rows after its first may be due later): the work ahead, at most."""
    return sql(
        f"SELECT coalesce(sum(n), 0) FROM {spec.due_table}"
        f" WHERE prune = {str(prune).lower()}"
        " AND at <= %(now)s"
    )


START_SWEEP_RUN = sql("""
INSERT INTO sweep_runs (trigger, mode, status, swept_at, agent_id, daemon_id, owner)
VALUES (%(trigger)s, %(mode)s, 'running', %(now)s, %(agent)s, %(daemon_id)s,
        current_setting('application_name'))
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
    """One round of what happened to rows of spec's table, each id at most once, at its
    moment `at`: n retrievals (reinforcing: searches, record_retrieval, useful feedback),
    u of them useful, w wrong (long-term depression), c surfaced. Computed from the
    row's current state inside the UPDATE, so a concurrent sweep batch cannot lose it.

    strength ← min(1, strength at `at` × boost^n) × wrong_factor^w on the row's
    policy's curve (facts: confidence likewise, + the bonus per retrieval), and the
    anchor moves to `at`: that equals the retrievals applied one after another at that
    moment, then the wrongs. A retrieval count that reaches the policy's promote_after
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
    """
    at = {"anchor": "h.at", "n": "m.retrieval_count + h.n", "at": "h.at", "policy": "np"}
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
    source = ", m.source_type, m.source_id" if spec.has_source else ""
    return sql(f"""
    WITH strengthened AS (
        UPDATE {spec.name} AS m
        SET (strength, {fact_set}salience, policy, due_at, prune_at,
             pruned, pruned_at, prune_reason) = (
                SELECT x.strength, {fact_new}x.stored_salience, x.new_policy,
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
                           s.policy AS new_policy, np.never_decays, np.prune_threshold
                    FROM (
                        SELECT least(1.0, {strength_at_call("m.strength", at="h.at")}
                                          * power(%(boost)s::float8, h.n)) * {depress}
                                   AS strength,{fact_state}
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
                    JOIN decay_policies AS np ON np.name = s.policy
                    OFFSET 0
                ) AS x),
            retrieval_count = m.retrieval_count + h.n,
            useful_count = m.useful_count + h.u,
            wrong_count = m.wrong_count + h.w,
            surfaced_count = m.surfaced_count + h.c,
            anchor_at = greatest(m.anchor_at, h.at),
            last_retrieved_at = CASE WHEN h.n > 0 THEN greatest(m.last_retrieved_at, h.at)
                                     ELSE m.last_retrieved_at END
        FROM unnest(%(ids)s::uuid[], %(counts)s::int[], %(useful)s::int[], %(wrong)s::int[],
                    %(surfaced)s::int[], %(moments)s::timestamptz[]) AS h(id, n, u, w, c, at)
        JOIN {spec.name} AS before ON before.id = h.id
        WHERE m.id = h.id AND NOT m.pruned
        RETURNING m.id, m.agent_id, h.n, h.at, m.pruned, before.policy AS old_policy, m.policy,
                  m.due_at, m.prune_at, before.due_at AS old_due,
                  before.prune_at AS old_prune, m.ctid AS place{source}
    ),
    -- A hint for a moment earlier than the one the row had (whose hint stands for it).
    hinted AS ({_insert_hints(spec, _moments("strengthened", earlier=True), since=None)})
    SELECT * FROM strengthened
    """)


@cache
def build_surfaced_query(spec: TableSpec) -> Query:
    """Search hits that only count (ltp.on_search = "count"): the row's curve is left
    alone."""
    return sql(f"""
    UPDATE {spec.name} AS m SET surfaced_count = m.surfaced_count + h.c
    FROM unnest(%(ids)s::uuid[], %(counts)s::int[]) AS h(id, c)
    WHERE m.id = h.id AND NOT m.pruned
    RETURNING m.id, m.agent_id
    """)


@cache
def build_agents_query(spec: TableSpec) -> Query:
    """Whose live memories these are (links join memories of one agent only)."""
    return sql(
        f"SELECT id, agent_id FROM {spec.name} WHERE id = ANY(%(ids)s::uuid[]) AND NOT pruned"
    )


# --- links ------------------------------------------------------------------------------


# A link's weight now: its weight when set, decaying as a memory does (τ in days).
def link_weight_at(at: str, alias: str = "l") -> str:
    return (
        f"{alias}.weight * exp(greatest("
        f"-greatest(date_part('epoch', {at} - {alias}.weighted_at), 0)"
        f" / {SECONDS_PER_DAY} / %(links_tau)s::float8, {MIN_EXPONENT}))"
    )


def _fades_at(weight: str, at: str) -> str:
    """When a weight set at `at` falls below links.prune_weight."""
    return (
        f"{at} + make_interval(secs =>"
        f" greatest(ln(greatest({weight}, 1e-300) / %(links_prune)s::float8), 0)"
        f" * %(links_tau)s::float8 * {SECONDS_PER_DAY})"
    )


LINK_PAIRS = """unnest(%(agents)s::text[], %(a_tables)s::text[], %(a_ids)s::uuid[],
                 %(b_tables)s::text[], %(b_ids)s::uuid[], %(co)s::int[], %(useful)s::int[],
                 %(wrong)s::int[], %(moments)s::timestamptz[])
          AS u(agent, a_table, a_id, b_table, b_id, co, useful, wrong, at)"""

# Pairs recalled together (co), or confirmed useful together: w ← w + η·(1 − w) each,
# from the weight decayed to that moment; a new link starts at η. Then the wrongs of
# that moment: w ← w · wrong_factor. One round: each pair at most once.
_STRENGTHENED = (
    f"(1 - (1 - {link_weight_at('excluded.weighted_at')})"
    " * power(1 - %(learning_rate)s::float8, excluded.co_retrievals + excluded.useful_count))"
    " * power(%(wrong_factor)s::float8, excluded.wrong_count)"
)
STRENGTHEN_LINKS = sql(f"""
INSERT INTO memory_links AS l (agent_id, a_table, a_id, b_table, b_id, weight, weighted_at,
                               co_retrievals, useful_count, wrong_count, fades_at)
SELECT u.agent, u.a_table, u.a_id, u.b_table, u.b_id, x.weight, u.at, u.co, u.useful, u.wrong,
       {_fades_at("x.weight", "u.at")}
FROM {LINK_PAIRS}
CROSS JOIN LATERAL (
    SELECT (1 - power(1 - %(learning_rate)s::float8, u.co + u.useful))
           * power(%(wrong_factor)s::float8, u.wrong) AS weight
) AS x
WHERE u.co + u.useful > 0
ON CONFLICT (a_id, b_id) DO UPDATE
SET weight = {_STRENGTHENED},
    weighted_at = greatest(l.weighted_at, excluded.weighted_at),
    co_retrievals = l.co_retrievals + excluded.co_retrievals,
    useful_count = l.useful_count + excluded.useful_count,
    wrong_count = l.wrong_count + excluded.wrong_count,
    fades_at = {_fades_at(_STRENGTHENED, "greatest(l.weighted_at, excluded.weighted_at)")}
RETURNING 1
""")

# Pairs only marked wrong together: existing links weaken; none is created.
WEAKEN_LINKS = sql(f"""
UPDATE memory_links AS l
SET weight = {link_weight_at("u.at")} * power(%(wrong_factor)s::float8, u.wrong),
    weighted_at = greatest(l.weighted_at, u.at),
    wrong_count = l.wrong_count + u.wrong,
    fades_at = {
    _fades_at(
        f"{link_weight_at('u.at')} * power(%(wrong_factor)s::float8, u.wrong)",
        "greatest(l.weighted_at, u.at)",
    )
}
FROM {LINK_PAIRS}
WHERE u.co + u.useful = 0 AND l.a_id = u.a_id AND l.b_id = u.b_id
RETURNING 1
""")

# Links whose weight has fallen below links.prune_weight: derived data, removed.
REMOVE_FADED_LINKS = sql("""
WITH faded AS (
    DELETE FROM memory_links WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM memory_links WHERE fades_at <= %(now)s ORDER BY fades_at LIMIT %(limit)s))
    RETURNING 1
)
SELECT count(*) FROM faded
""")

# The links settings changed: when each link fades, anew.
RESCHEDULE_LINKS = sql(f"""
UPDATE memory_links AS l SET fades_at = {_fades_at("l.weight", "l.weighted_at")}
""")

# A memory's links (either end), with their weight at %(now)s, strongest first.
MEMORY_LINKS = sql(f"""
SELECT CASE WHEN l.a_table = %(table)s AND l.a_id = %(id)s THEN l.b_table ELSE l.a_table END
           AS table_name,
       CASE WHEN l.a_table = %(table)s AND l.a_id = %(id)s THEN l.b_id ELSE l.a_id END AS id,
       {link_weight_at("%(now)s")} AS weight, l.weighted_at, l.co_retrievals, l.useful_count,
       l.wrong_count
FROM memory_links AS l
WHERE ((l.a_table = %(table)s AND l.a_id = %(id)s) OR (l.b_table = %(table)s AND l.b_id = %(id)s))
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
    """Live memories %(ids)s of one agent (none below its prune threshold), with their
    salience at %(now)s."""
    return sql(f"""
    SELECT m.id, m.content, m.metadata, m.created_at, {salience_expr(spec)} AS salience
    FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy
    WHERE m.id = ANY(%(ids)s::uuid[]) AND m.agent_id = %(agent)s AND NOT m.pruned
      AND {above_threshold(spec)}
    """)


def _hint_both_at(spec: TableSpec, rows: str, at: str) -> str:
    """Hints of both kinds at `at` for the rows of `rows` (id, place)."""
    return _insert_hints(
        spec,
        f"""SELECT kind.prune, {at}::timestamptz AS at, r.id, r.place
        FROM {rows} AS r CROSS JOIN (VALUES (false), (true)) AS kind (prune)""",
        since=None,
    )


def _hint_all(spec: TableSpec, rows: str) -> str:
    """Hints of both kinds for rows just scheduled anew at %(now)s (a move, a recovery)."""
    return _insert_hints(spec, _moments(rows), since="%(now)s::timestamptz")


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
    hinted AS ({_hint_all(spec, "moved")})
    SELECT * FROM moved
    """)


# A flush claims its id in its own transaction: a retry of a flush whose COMMIT went
# through unseen finds the receipt and applies nothing twice.
CLAIM_LTP_FLUSH = sql(
    "INSERT INTO ltp_flushes (id) VALUES (%(id)s) ON CONFLICT DO NOTHING RETURNING id"
)

# Receipts only need to outlive a flush's retries.
FORGET_LTP_FLUSHES = sql("DELETE FROM ltp_flushes WHERE applied_at < now() - interval '1 day'")

# The durable path: events queued by ethos_record_retrieval() or a durable buffer. A
# drain pops the oldest %(limit)s in the transaction that applies them (a crash loses
# none, applies none twice); SKIP LOCKED lets several drainers share the queue.
POP_RETRIEVAL_QUEUE = sql("""
WITH popped AS (
    DELETE FROM retrieval_queue
    WHERE id IN (SELECT id FROM retrieval_queue ORDER BY id LIMIT %(limit)s
                 FOR UPDATE SKIP LOCKED)
    RETURNING table_name, memory_id, at, kind, grp
)
-- counted here: one row per memory, moment and kind (and the calls it came with)
SELECT table_name, memory_id, at, kind, count(*)::int AS n,
       array_agg(grp) FILTER (WHERE grp IS NOT NULL) AS grps
FROM popped
GROUP BY table_name, memory_id, at, kind
""")

ENQUEUE_RETRIEVALS = sql("""
INSERT INTO retrieval_queue (table_name, memory_id, at, kind, grp)
SELECT %(table)s, memory_id, %(at)s, %(kind)s, %(grp)s::uuid
FROM unnest(%(ids)s::uuid[]) AS memory_id
""")

RETRIEVAL_QUEUE_BACKLOG = sql("SELECT count(*) FROM retrieval_queue")

# Live and pruned rows per memory table, without counting: the planner's row estimates
# of the partial indexes over live rows (id WHERE NOT pruned) and pruned rows (pruned_at
# WHERE pruned), as of the last ANALYZE or VACUUM.
ROW_ESTIMATES = sql(
    "\nUNION ALL\n".join(
        f"""SELECT '{spec.name}' AS table_name, state, reltuples::bigint AS estimate
    FROM (VALUES ('live', '{spec.name}_live_id_idx'), ('pruned', '{spec.name}_pruned_at_idx'))
         AS i (state, index_name)
    JOIN pg_class AS c ON c.relname = i.index_name"""
        for spec in MEMORY_TABLES
    )
)

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


def _pruned_set(reason: str) -> str:
    """SET of a row soft-deleted at %(now)s for `reason`: pruned rows have no schedule."""
    return (
        f"pruned = true, pruned_at = %(now)s, prune_reason = '{reason}', due_at = NULL,"
        " prune_at = NULL"
    )


# A memory (m) of a table with expires_at that has not expired by %(now)s.
_UNEXPIRED = "(m.expires_at IS NULL OR m.expires_at > %(now)s)"


def above_threshold(spec: TableSpec, alias: str = "m", policy: str = "p") -> str:
    """A live row of `spec` (on its policy `policy`) not yet below its prune threshold at
    %(now)s (facts: their confidence): what the next sweep would prune, no reader returns
    (sweeps are periodic; forgetting is a function of time)."""
    deciding = (
        confidence_expr(alias=alias, policy=policy)
        if spec.has_confidence
        else salience_expr(spec, alias=alias, policy=policy)
    )
    return f"({alias}.pinned OR {policy}.never_decays OR {deciding} >= {policy}.prune_threshold)"


# Relevance leads, salience is a bounded prior: relevance × (1 + w × salience), salience in
# [0, 1], so a memory's salience moves its score by a factor of at most 1 + w
# (search.salience_weight; runbooks/recall.md has the figures that chose it).
def prior(salience: str) -> str:
    return f"(1 + %(salience_weight)s::float8 * {salience})"


# Equal scores: the more salient first, then the newer, then by id (deterministic).
TIE_BREAK = "salience DESC, created_at DESC, id"


def build_search_query(*, exact: bool) -> Query:
    """The nearest live vectors of one agent (none below its prune threshold), re-ranked
    by similarity × the salience prior.

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
        WHERE m.agent_id = %(agent)s AND NOT m.pruned AND {_UNEXPIRED}
          AND (SELECT {above_threshold(VECTORS, policy="ap")}
               FROM decay_policies AS ap WHERE ap.name = m.policy)
        ORDER BY {order}
        LIMIT %(candidates)s
    ),
    ranked AS (
        SELECT c.id, c.content, c.metadata, c.source_type, c.source_id, c.created_at,
               1 - c.distance AS similarity,
               {salience_expr(VECTORS, alias="c")} AS salience
        FROM candidates AS c
        JOIN decay_policies AS p ON p.name = c.policy
    )
    SELECT r.*, r.similarity * {prior("r.salience")} AS score,
           coalesce(e.content, f.content) AS source_content
    FROM ranked AS r
    LEFT JOIN episodic_traces AS e ON r.source_type = 'episodic_traces' AND e.id = r.source_id
    LEFT JOIN semantic_facts AS f ON r.source_type = 'semantic_facts' AND f.id = r.source_id
    ORDER BY score DESC, {TIE_BREAK}
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


# BM25's term-frequency saturation k1 and length normalisation b (Robertson & Zaragoza
# 2009), Anserini's defaults for short texts: on LoCoMo r@10 0.627 against Lucene's
# 1.2/0.75 at 0.617 (runbooks/recall.md).
BM25_K1, BM25_B = 0.9, 0.4


def bm25(tsv: str) -> str:
    """The BM25 score of the text search vector `tsv` for the query's lexemes and IDFs
    (q.lexemes, q.idfs) and the agent's average length (q.avg_length): a term's
    frequency is its number of positions, a text's length its distinct lexemes."""
    return f"""(SELECT coalesce(sum(w.idf * t.tf * {BM25_K1 + 1}
                          / (t.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B}
                             * ethos_text_length({tsv}) / q.avg_length))), 0)
                FROM unnest(q.lexemes, q.idfs) AS w (lexeme, idf)
                JOIN (SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
                      FROM unnest({tsv}) AS u) AS t ON t.lexeme = w.lexeme)"""


# The query %(text)s of agent %(agent)s: its words (any of them), the agent's lexeme, its
# distinct lexemes with their IDF among the agent's memories, and their average length.
_TEXT_QUERY = """q AS (
        SELECT ethos_text_query(ethos_text_config(), %(text)s) AS words,
               quote_literal(ethos_agent_lexeme(%(agent)s))::tsquery AS agent,
               w.lexemes, w.idfs,
               coalesce(s.length::float8 / nullif(s.docs, 0), 1) AS avg_length
        FROM (SELECT) AS one
        LEFT JOIN agent_text_stats AS s ON s.agent_id = %(agent)s
        CROSS JOIN LATERAL (
            SELECT array_agg(x.lexeme) AS lexemes,
                   array_agg(ethos_idf(coalesce(s.docs, 0), coalesce(l.docs, 0))) AS idfs
            FROM unnest(tsvector_to_array(to_tsvector(ethos_text_config(), %(text)s)))
                 AS x (lexeme)
            LEFT JOIN lexeme_stats AS l ON l.agent_id = %(agent)s AND l.lexeme = x.lexeme
        ) AS w
    )"""


@cache
def build_recall_query(tables: tuple[TableSpec, ...]) -> Query:
    """Live memories of one agent in `tables` with any word of %(text)s (in the
    database's text configuration), none below its prune threshold at %(now)s, ranked
    by BM25 × the salience prior.

    Each table gives its %(candidates)s best by BM25, found through its GIN index (the
    agent's lexeme intersected with the words); vectors that embed an episode or fact
    stand for it and are left out, as are expired ones."""
    parts = []
    for spec in tables:
        only = " AND m.source_id IS NULL" if spec.has_source else ""
        live = f" AND {_UNEXPIRED}" if spec.has_expiry else ""
        parts.append(f"""
        (SELECT '{spec.name}' AS table_name, m.id, m.content, m.metadata, m.created_at,
                {bm25("m.content_tsv")} AS text_rank,
                {salience_expr(spec)} AS salience
         FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy, q
         WHERE m.content_tsv @@ (q.words && q.agent) AND m.agent_id = %(agent)s
           AND NOT m.pruned{only}{live} AND {above_threshold(spec)}
         ORDER BY text_rank DESC, salience DESC, m.created_at DESC, m.id
         LIMIT %(candidates)s)""")
    union = "\n        UNION ALL".join(parts)
    return sql(f"""
    WITH {_TEXT_QUERY},
    found AS ({union}
    )
    SELECT f.*, f.text_rank * {prior("f.salience")} AS score
    FROM found AS f
    ORDER BY score DESC, {TIE_BREAK}
    LIMIT %(k)s
    """)


@cache
def build_missing_vectors_query(spec: TableSpec, *, by_agent: bool) -> Query:
    """The next %(limit)s live memories after %(after)s that no vector embeds."""
    agent = "AND m.agent_id = %(agent)s" if by_agent else ""
    return sql(f"""
    SELECT m.id, m.content FROM {spec.name} AS m
    WHERE NOT m.pruned AND m.id > %(after)s {agent}
      AND NOT EXISTS (SELECT 1 FROM memory_vectors AS v
                      WHERE v.source_type = '{spec.name}' AND v.source_id = m.id)
    ORDER BY m.id
    LIMIT %(limit)s
    """)


@cache
def build_insert_source_vectors_query(spec: TableSpec) -> Query:
    """Vectors %(embeddings)s (text, '[x, ...]') of memories %(ids)s: their agent,
    content and creation, embedding them; none where one appeared meanwhile."""
    return sql(f"""
    INSERT INTO memory_vectors (agent_id, content, embedding, source_type, source_id,
                                created_at)
    SELECT m.agent_id, m.content, e.embedding::vector, '{spec.name}', m.id, m.created_at
    FROM unnest(%(ids)s::uuid[], %(embeddings)s::text[]) AS e (id, embedding)
    JOIN {spec.name} AS m ON m.id = e.id
    WHERE NOT EXISTS (SELECT 1 FROM memory_vectors AS v
                      WHERE v.source_type = '{spec.name}' AND v.source_id = m.id)
    RETURNING id
    """)


# Which table each of %(ids)s is in (ids are unique across the memory tables), and whose.
LOCATE_MEMORIES = sql(
    "\nUNION ALL\n".join(
        f"SELECT '{spec.name}' AS table_name, id, agent_id FROM {spec.name}"
        " WHERE id = ANY(%(ids)s::uuid[])"
        for spec in MEMORY_TABLES
    )
)


# --- client-keyed memories (the LangGraph store): items are facts ----------------------

# A live, unexpired item of one namespace (agent) by its key.
_ITEM_LIVE = f"NOT m.pruned AND {_UNEXPIRED}"

GET_ITEM = sql(f"""
SELECT m.id, m.agent_id, m.client_key, m.metadata, m.created_at,
       coalesce(m.updated_at, m.created_at) AS updated_at
FROM semantic_facts AS m
WHERE m.agent_id = %(agent)s AND m.client_key = %(key)s AND {_ITEM_LIVE}
""")

# An expired item under the key, pruned (reason expired) before a put: its key is free.
EXPIRE_ITEM = sql(f"""
UPDATE semantic_facts
SET {_pruned_set("expired")}
WHERE agent_id = %(agent)s AND client_key = %(key)s AND NOT pruned AND expires_at <= %(now)s
""")

# Insert an item, or replace the value of the live one with its key (keeping its
# history: retrievals, curve). Returns the memory and whether it is new.
PUT_ITEM = sql("""
INSERT INTO semantic_facts AS m (agent_id, client_key, content, metadata, expires_at,
                                 created_at, updated_at)
VALUES (%(agent)s, %(key)s, %(content)s, %(value)s::jsonb, %(expires_at)s, %(now)s, %(now)s)
ON CONFLICT (agent_id, client_key) WHERE client_key IS NOT NULL AND NOT pruned
DO UPDATE SET content = excluded.content, metadata = excluded.metadata,
              expires_at = excluded.expires_at, updated_at = excluded.updated_at
RETURNING m.id, (xmax = 0) AS created
""")

# The vector of an item (when the store has an index): replaced, or made.
PUT_ITEM_VECTOR = sql("""
WITH replaced AS (
    UPDATE memory_vectors
    SET embedding = %(embedding)s::vector, content = %(content)s, pruned = false,
        pruned_at = NULL, prune_reason = NULL
    WHERE source_type = 'semantic_facts' AND source_id = %(id)s
    RETURNING id
)
INSERT INTO memory_vectors (agent_id, content, embedding, source_type, source_id)
SELECT %(agent)s, %(content)s, %(embedding)s::vector, 'semantic_facts', %(id)s
WHERE NOT EXISTS (SELECT 1 FROM replaced)
""")

# An item deleted: a soft delete, reason manual, recoverable.
DELETE_ITEM = sql(f"""
UPDATE semantic_facts
SET {_pruned_set("manual")}
WHERE agent_id = %(agent)s AND client_key = %(key)s AND NOT pruned
RETURNING id
""")


def build_search_items_query(*, ranked_by: str | None) -> Query:
    """Live, unexpired items under the namespace %(prefix)s (the agent itself, or any
    agent under it: "prefix.…"; all with an empty prefix), passing the filter (containment
    %(contains)s and the jsonpath %(path)s over %(vars)s), in the order LangGraph
    documents: most recently updated first without a query; with one, by similarity
    (ranked_by "vector": to %(embedding)s) or text rank ("text": of %(text)s), times the
    salience prior; none below its prune threshold. %(limit)s after %(offset)s."""
    join, score, matches = "", "NULL::float8", ""
    salience = prior(salience_expr(FACTS))
    if ranked_by == "vector":
        join = """JOIN memory_vectors AS v
              ON v.source_type = 'semantic_facts' AND v.source_id = m.id AND NOT v.pruned"""
        score = f"(1 - (v.embedding <=> %(embedding)s::vector)) * {salience}"
    elif ranked_by == "text":
        score = f"ts_rank_cd(m.content_tsv, q.words) * {salience}"
        join = "CROSS JOIN (SELECT ethos_text_query(ethos_text_config(), %(text)s) AS words) AS q"
        matches = "AND m.content_tsv @@ q.words"
    order = "score DESC, m.id" if ranked_by else "coalesce(m.updated_at, m.created_at) DESC, m.id"
    return sql(f"""
    SELECT m.id, m.agent_id, m.client_key, m.metadata, m.created_at,
           coalesce(m.updated_at, m.created_at) AS updated_at, {score} AS score
    FROM semantic_facts AS m JOIN decay_policies AS p ON p.name = m.policy
    {join}
    WHERE (m.agent_id = %(prefix)s OR starts_with(m.agent_id, %(prefix)s || '.')
           OR %(prefix)s = '')
      AND m.client_key IS NOT NULL AND {_ITEM_LIVE} AND {above_threshold(FACTS)} {matches}
      AND m.metadata @> %(contains)s::jsonb
      AND jsonb_path_match(m.metadata, %(path)s::jsonpath, %(vars)s::jsonb)
    ORDER BY {order}
    LIMIT %(limit)s OFFSET %(offset)s
    """)


SEARCH_ITEMS = build_search_items_query(ranked_by=None)
SEARCH_ITEMS_BY_VECTOR = build_search_items_query(ranked_by="vector")
SEARCH_ITEMS_BY_TEXT = build_search_items_query(ranked_by="text")

# The namespaces (agents) that hold live items.
ITEM_NAMESPACES = sql("""
SELECT DISTINCT agent_id FROM semantic_facts WHERE client_key IS NOT NULL AND NOT pruned
ORDER BY agent_id
""")


# --- the daemon ---------------------------------------------------------------------

# A due sweep's work is split into slices (ethos_slice of the row's place); a sweeper holds
# each slice it works on by a session-level advisory lock, so several sweepers share the
# work and a dead one's slices are free as soon as its connection is gone.
# Refresh sweeps and prune passes lock slices apart: a prune pass runs beside a long
# sweep (a row they both reach is written once; the other finds it changed and moves on).
SWEEP_SLICE_LOCK_CLASS = 0x45_54_48_04
PRUNE_SLICE_LOCK_CLASS = 0x45_54_48_05
# The slices of %(slices)s this session could take (those no other session holds).
TRY_SLICE_LOCKS = sql("""
SELECT coalesce(array_agg(s ORDER BY s), '{}')
FROM unnest(%(slices)s::int[]) AS s
WHERE pg_try_advisory_lock(%(class)s::int, s)
""")
UNLOCK_SLICES = sql("""
SELECT count(*) FROM unnest(%(slices)s::int[]) AS s WHERE pg_advisory_unlock(%(class)s::int, s)
""")

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
SELECT max(coalesce(finished_at, started_at)) FROM sweep_runs
WHERE status <> 'failed' AND mode <> 'prune'
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

# How many retrievals were set aside, and how many of them in the last %(window)s seconds.
DEAD_LETTERS = sql("""
SELECT count(*) AS total,
       count(*) FILTER (WHERE dead_at > now() - make_interval(secs => %(window)s)) AS recent
FROM retrieval_dead_letters
""")

STATUS_LAST_SWEEP = sql("""
SELECT id, trigger, mode, status, started_at, finished_at, swept_at, scanned, updated, pruned,
       tables, daemon_id,
       round(extract(epoch FROM finished_at - started_at) * 1000) AS duration_ms
FROM sweep_runs WHERE mode <> 'prune' ORDER BY started_at DESC LIMIT 1
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
    {_hint_both_at(spec, "unscheduled", "'-infinity'")}
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
    # One agent's view shows only its own sweeps, and no daemons (their ids name hosts).
    "recent_sweeps": sql("""
        SELECT id, trigger, status, started_at, duration_ms, scanned, updated, pruned,
               rows_per_second
        FROM ethos_sweep_history WHERE %(agent)s::text IS NULL OR agent_id = %(agent)s LIMIT 5
    """),
    "ltp": sql("""
        SELECT daemon_id, role, ltp_backlog, ltp_dropped FROM ethos_ltp
        WHERE %(agent)s::text IS NULL
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
    """Bring a batch back with a fresh start: %(strength)s anchored at %(now)s, and its
    values stored as they are then; content, embedding, policy, retrieval count and
    history stay. An expired row loses its expiry, or the next sweep would prune it again
    at once. It is scheduled anew."""
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
        SELECT id, policy, created_at, pinned, retrieval_count AS n,
               {spec.emotion_column or "0"} AS emotion,
               {kept_expiry}
               %(strength)s::float8 AS strength, %(now)s::timestamptz AS anchor_at
        FROM {spec.name}
        WHERE {RECOVERY_FILTER}
        ORDER BY id LIMIT {int(batch_size)}
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
        WHERE m.id = r.id
        RETURNING m.id, m.ctid AS place, m.due_at, m.prune_at
    ),
    hinted AS ({_hint_all(spec, "recovered")})
    SELECT id FROM recovered
    """)


RECORD_RECOVERY = sql("""
INSERT INTO recoveries (recovered_as_of, table_name, selector, command, recovered, strength)
VALUES (%(now)s, %(table)s, %(selector)s::jsonb, %(command)s, %(recovered)s, %(strength)s)
RETURNING id
""")


# --- consolidation: duplicates, forgetting, purge, erase -------------------------------

# Adds of one normalised content by one agent, one at a time: concurrent adds of the
# same new memory make one row.
LOCK_CONTENT = sql("""
SELECT pg_advisory_xact_lock(
    hashtextextended(%(table)s || ':' || %(agent)s || ':' || ethos_content_key(%(content)s), 0))
""")


@cache
def build_find_duplicate_query(spec: TableSpec) -> Query:
    """A memory of the agent with the same normalised content (a vector: and an
    embedding at least %(near)s cosine-similar), the earliest, that is still a memory at
    %(now)s: not pruned, not expired, not below its threshold (a sweep would prune it,
    and the new one with it)."""
    near = (
        "AND 1 - (m.embedding <=> %(embedding)s::vector) >= %(near)s::float8"
        if spec.has_embedding
        else ""
    )
    unexpired = f"AND {_UNEXPIRED}" if spec.has_expiry else ""
    return sql(f"""
    SELECT m.id FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy
    WHERE m.agent_id = %(agent)s AND m.content_key = ethos_content_key(%(content)s)
      AND NOT m.pruned {unexpired} AND {above_threshold(spec)}
      {near}
    ORDER BY m.created_at, m.id LIMIT 1
    """)


@cache
def build_raise_repeat_query(spec: TableSpec) -> Query:
    """A repeat asks for more: the memory %(id)s becomes pinned if asked, takes the
    metadata keys it lacks and the higher importance; what changed is returned."""
    return sql(f"""
    WITH old AS (
        SELECT id, pinned, metadata, importance FROM {spec.name} WHERE id = %(id)s FOR UPDATE
    ), new AS (
        UPDATE {spec.name} AS m
        SET pinned = m.pinned OR %(pinned)s,
            metadata = %(metadata)s::jsonb || m.metadata,
            importance = greatest(m.importance, %(importance)s::float8)
        FROM old WHERE m.id = old.id
        RETURNING m.pinned, m.metadata, m.importance, m.policy
    )
    SELECT new.policy,
           new.pinned AND NOT old.pinned AS pinned,
           new.metadata <> old.metadata AS metadata,
           new.importance IS DISTINCT FROM old.importance AS importance
    FROM new, old
    """)


@cache
def build_duplicate_groups_query(spec: TableSpec, *, by_agent: bool) -> Query:
    """The next %(limit)s groups of live memories of one agent with one normalised
    content (vectors: and one embedding), after the key %(after_agent)s,
    %(after_key)s: each group's ids, the earliest first. Read through the
    (agent_id, content_key) index, in key order, a batch at a time."""
    agent = "AND agent_id = %(agent)s" if by_agent else ""
    embedding = ", embedding" if spec.has_embedding else ""
    return sql(f"""
    SELECT agent_id, content_key, array_agg(id ORDER BY created_at, id) AS ids, count(*) AS n
    FROM {spec.name}
    WHERE NOT pruned AND (agent_id, content_key) > (%(after_agent)s, %(after_key)s) {agent}
    GROUP BY agent_id, content_key{embedding}
    HAVING count(*) > 1
    ORDER BY agent_id, content_key
    LIMIT %(limit)s
    """)


# The next %(limit)s live vectors after %(after)s, each with its nearest neighbours of
# the same agent at least %(threshold)s cosine-similar (other is NULL when it has none),
# found through the HNSW index (never all pairs); last_id is where the batch ended.
NEAR_DUPLICATES = sql("""
WITH batch AS MATERIALIZED (
    SELECT id, agent_id, embedding FROM memory_vectors
    WHERE NOT pruned AND id > %(after)s AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    ORDER BY id LIMIT %(limit)s
)
SELECT v.id, n.id AS other, (SELECT max(id::text)::uuid FROM batch) AS last_id
FROM batch AS v
LEFT JOIN LATERAL (
    SELECT c.id FROM (
        SELECT c.id, c.embedding <=> v.embedding AS distance FROM memory_vectors AS c
        WHERE c.agent_id = v.agent_id AND NOT c.pruned AND c.id <> v.id
        ORDER BY c.embedding <=> v.embedding
        LIMIT 3
    ) AS c
    WHERE 1 - c.distance >= %(threshold)s::float8
) AS n ON true
""")

NEAR_DUPLICATE_SEARCH_SETTINGS = "SET LOCAL hnsw.ef_search = 20"

# The sources (episode or fact) that vectors %(ids)s embed.
VECTOR_SOURCES = sql("""
SELECT id, source_type, source_id FROM memory_vectors
WHERE id = ANY(%(ids)s::uuid[]) AND source_id IS NOT NULL
""")


@cache
def build_merge_query(spec: TableSpec) -> Query:
    """Merge groups of live memories of one agent (members %(ids)s, group numbers
    %(groups)s) at %(now)s: the earliest of each group survives; its retrieval count
    (and surfaced, useful, wrong counts) becomes the sum of the group's, and its curve
    that of the member with the highest salience now, re-anchored now (its strength
    then, its policy). The others are pruned, reason 'merged', merged_into the
    survivor. Vectors that embedded a merged memory embed the survivor; the merged
    memories' links move to it. The survivor is pinned if any member was. The survivor
    is due at once (the next pass schedules it)."""
    fact_best = ", m.confidence_strength AS conf" if spec.has_confidence else ""
    fact_state = (
        f", {strength_at_call('b.conf', at='%(now)s', alias='b')} AS confidence_strength"
        if spec.has_confidence
        else ""
    )
    # The survivor's stored values, from its new state (its own age and emotion).
    new_state = {"anchor": "%(now)s", "n": "g.retrieval_count", "at": "%(now)s", "policy": "gp"}
    fact_set = (
        f"""confidence_strength = g.confidence_strength,
            confidence = {salience_call("g.confidence_strength", emotion="0", **new_state)},"""
        if spec.has_confidence
        else ""
    )
    repoint = (
        f"""
    repointed AS (
        UPDATE memory_vectors AS v SET source_id = merged.merged_into
        FROM merged
        WHERE v.source_type = '{spec.name}' AND v.source_id = merged.id
        RETURNING 1
    ),"""
        if spec in _SOURCE_SPECS
        else ""
    )
    return sql(f"""
    WITH members AS MATERIALIZED (
        SELECT m.id, g.n AS grp, m.agent_id, m.created_at, m.retrieval_count,
               m.surfaced_count, m.useful_count, m.wrong_count, m.last_retrieved_at,
               m.strength, m.anchor_at, m.pinned, m.policy{fact_best},
               {salience_expr(spec)} AS salience_now
        FROM unnest(%(ids)s::uuid[], %(groups)s::int[]) AS g(id, n)
        JOIN {spec.name} AS m ON m.id = g.id
        JOIN decay_policies AS p ON p.name = m.policy
        WHERE NOT m.pruned
        ORDER BY m.id
        FOR UPDATE OF m
    ),
    ranked AS (
        SELECT members.*,
               first_value(id) OVER (PARTITION BY grp ORDER BY created_at, id) AS survivor,
               first_value(id) OVER (PARTITION BY grp ORDER BY salience_now DESC, id) AS best,
               count(*) OVER (PARTITION BY grp) AS size
        FROM members
    ),
    groups AS (
        SELECT r.survivor, r.grp, sum(r.retrieval_count)::int AS retrieval_count,
               sum(r.surfaced_count)::int AS surfaced_count,
               sum(r.useful_count)::int AS useful_count, sum(r.wrong_count)::int AS wrong_count,
               max(r.last_retrieved_at) AS last_retrieved_at,
               bool_or(r.pinned) AS pinned,  -- a pin on any member stays with the memory
               (array_agg(r.best))[1] AS best  -- one value per group
        FROM ranked AS r WHERE r.size > 1 GROUP BY r.survivor, r.grp
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
        SET retrieval_count = g.retrieval_count, surfaced_count = g.surfaced_count,
            useful_count = g.useful_count, wrong_count = g.wrong_count,
            last_retrieved_at = g.last_retrieved_at, strength = g.strength, {fact_set}
            pinned = g.pinned, policy = g.policy, anchor_at = %(now)s,
            salience = {salience_call("g.strength", emotion=emotion_of(spec), **new_state)},
            due_at = %(now)s, prune_at = %(now)s
        FROM best AS g JOIN decay_policies AS gp ON gp.name = g.policy
        WHERE m.id = g.survivor
        RETURNING m.id, m.ctid AS place
    ),
    hinted AS ({_hint_both_at(spec, "survived", "%(now)s")}),
    merged AS (
        UPDATE {spec.name} AS m
        SET {_pruned_set("merged")}, merged_into = r.survivor
        FROM ranked AS r
        WHERE m.id = r.id AND r.id <> r.survivor AND r.size > 1
        RETURNING m.id, m.merged_into
    ),{repoint}
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
                SELECT * FROM memory_links WHERE a_id = mg.id
                UNION ALL
                SELECT * FROM memory_links WHERE b_id = mg.id
            ) AS l ON true
            CROSS JOIN LATERAL (
                SELECT CASE WHEN l.a_id = mg.id THEN l.b_id ELSE l.a_id END AS id,
                       CASE WHEN l.a_id = mg.id THEN l.b_table ELSE l.a_table END AS tbl
            ) AS other
            WHERE other.id <> mg.merged_into
            ORDER BY least(mg.merged_into, other.id), greatest(mg.merged_into, other.id),
                     l.weight DESC
        ) AS o
        ON CONFLICT (a_id, b_id) DO UPDATE
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
    """Soft-delete live memories %(ids)s on request: reason 'manual', recoverable."""
    return sql(f"""
    UPDATE {spec.name}
    SET {_pruned_set("manual")}
    WHERE id = ANY(%(ids)s::uuid[]) AND NOT pruned
    RETURNING id
    """)


# Pruned rows a purge selects; each part is NULL when not given.
PURGE_FILTER = """
    pruned AND pruned_at < %(before)s
    AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    AND (%(reason)s::text IS NULL OR prune_reason = %(reason)s)
"""


@cache
def build_purge_count_query(spec: TableSpec) -> Query:
    """What a purge would delete, by reason (a dry run)."""
    return sql(f"""
    SELECT prune_reason AS reason, count(*) AS n FROM {spec.name}
    WHERE {PURGE_FILTER} GROUP BY prune_reason
    """)


def _unlink(rows: str) -> str:
    """CTEs deleting the links of the memories of CTE `rows`: one index each way (an
    array, so that the planner, which cannot know how many rows there are, probes the
    indexes)."""
    return f"""
    unlinked_a AS (DELETE FROM memory_links WHERE a_id = ANY (ARRAY(SELECT id FROM {rows}))),
    unlinked_b AS (DELETE FROM memory_links WHERE b_id = ANY (ARRAY(SELECT id FROM {rows})))"""


@cache
def build_purge_batch_query(spec: TableSpec, batch_size: int) -> Query:
    """Hard-delete a batch of pruned rows selected by PURGE_FILTER (through the pruned_at
    index, oldest first), with their links: the reasons of what was deleted. Their due
    hints are left to drop out when popped (a hint without a row is skipped)."""
    return sql(f"""
    WITH gone AS (
        DELETE FROM {spec.name} WHERE id IN (
            SELECT id FROM {spec.name} WHERE {PURGE_FILTER}
            ORDER BY pruned_at LIMIT {int(batch_size)})
        RETURNING id, prune_reason
    ),{_unlink("gone")}
    SELECT prune_reason AS reason, count(*) AS n FROM gone GROUP BY prune_reason
    """)


@cache
def build_erase_count_query(spec: TableSpec) -> Query:
    return sql(f"SELECT count(*) FROM {spec.name} WHERE agent_id = %(agent)s")


@cache
def build_erase_batch_query(spec: TableSpec, batch_size: int) -> Query:
    """Hard-delete the next batch of an agent's memories (live or pruned) after id
    %(after)s, and their links: how many, and the last id (hints drop out as above)."""
    return sql(f"""
    WITH gone AS (
        DELETE FROM {spec.name} WHERE id IN (
            SELECT id FROM {spec.name} WHERE agent_id = %(agent)s AND id > %(after)s
            ORDER BY id LIMIT {int(batch_size)})
        RETURNING id
    ),{_unlink("gone")},{_tally(spec.name)}
    SELECT count(*) AS n, (SELECT id FROM gone ORDER BY id DESC LIMIT 1) AS last_id FROM gone
    """)


def _tally(key: str) -> str:
    """A CTE adding the rows of CTE `gone` to the audit row %(run_id)s's count `key`, in
    the transaction that deletes them: after a kill, the audit still adds up."""
    return f"""
    tally AS (
        UPDATE consolidation_runs
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
# The tables of `tables` the current role may not delete from.
UNDELETABLE_TABLES = sql("""
SELECT t FROM unnest(%(tables)s::text[]) AS t WHERE NOT has_table_privilege(t, 'DELETE')
""")
COUNT_AGENT_LINKS = sql("SELECT count(*) FROM memory_links WHERE agent_id = %(agent)s")
COUNT_AGENT_POLICY = sql("SELECT count(*) FROM agent_policies WHERE agent_id = %(agent)s")

START_CONSOLIDATION_RUN = sql("""
INSERT INTO consolidation_runs (kind, trigger, status, as_of, selector, owner)
VALUES (%(kind)s, %(trigger)s, 'running', %(now)s, %(selector)s::jsonb,
        current_setting('application_name'))
RETURNING id
""")


def _interrupt_orphans(table: str) -> str:
    # A row's owner is the application_name of the process that wrote it; no session
    # with that name means the process is gone (killed: it never finished the row).
    return f"""
    {table}_gone AS (
        UPDATE {table} AS r
        SET status = 'interrupted', finished_at = clock_timestamp(),
            error = coalesce(r.error, 'its process ended while it ran')
        WHERE r.status = 'running' AND r.owner IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                          WHERE a.application_name = r.owner)
        RETURNING 1
    )"""


INTERRUPT_ORPHANED_RUNS = sql(f"""
WITH {_interrupt_orphans("sweep_runs")},
{_interrupt_orphans("consolidation_runs")}
SELECT (SELECT count(*) FROM sweep_runs_gone) + (SELECT count(*) FROM consolidation_runs_gone)
""")

FINISH_CONSOLIDATION_RUN = sql("""
UPDATE consolidation_runs
SET status = %(status)s, finished_at = clock_timestamp(), counts = %(counts)s::jsonb,
    error = %(error)s
WHERE id = %(id)s
""")


# --- what the HTTP API and the dashboard list --------------------------------------------


@cache
def build_list_memories_query(spec: TableSpec, *, pruned: bool) -> Query:
    """Memories of %(agent)s (every agent's when NULL), live ones newest first, pruned
    ones most recently pruned first: %(limit)s after %(offset)s."""
    order = "pruned_at DESC" if pruned else "created_at DESC"
    return sql(f"""
    SELECT * FROM {spec.name}
    WHERE (%(agent)s::text IS NULL OR agent_id = %(agent)s) AND {"" if pruned else "NOT "}pruned
    ORDER BY {order}, id DESC
    LIMIT %(limit)s OFFSET %(offset)s
    """)


# Every agent with its memories counted per table.
AGENT_COUNTS = sql("""
SELECT agent_id, table_name, live, pruned, pinned FROM ethos_agent_counts
ORDER BY agent_id, table_name
""")

# Pruned memories by table and reason, since %(since)s (all when NULL).
PRUNED_BY_REASON = sql("""
SELECT table_name, prune_reason AS reason, count(*) AS count FROM ethos_memories
WHERE pruned AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
  AND (%(since)s::timestamptz IS NULL OR pruned_at >= %(since)s)
GROUP BY table_name, prune_reason ORDER BY table_name, prune_reason
""")

# The recoveries that named memory %(id)s of %(table)s.
# The words that count most in a text's automatic importance (ethos_informative_words).
RARE_WORDS = sql("""
SELECT w.lexeme
FROM (SELECT coalesce((SELECT docs FROM agent_text_stats WHERE agent_id = %(agent)s), 0)
             AS docs) AS n
CROSS JOIN unnest(tsvector_to_array(%(tsv)s::tsvector)) AS w (lexeme)
LEFT JOIN lexeme_stats AS l ON l.agent_id = %(agent)s AND l.lexeme = w.lexeme
WHERE w.lexeme <> ethos_agent_lexeme(%(agent)s)
ORDER BY CASE WHEN w.lexeme ~ '^[0-9]' THEN 1
              ELSE ethos_idf(n.docs, coalesce(l.docs, 0)) / ethos_idf(n.docs, 0) END DESC,
         w.lexeme
LIMIT %(n)s
""")
# A memory's earlier texts, oldest first (migration 0022 keeps them).
REVISIONS_OF = sql("""
SELECT content, revised_at FROM memory_revisions
WHERE table_name = %(table)s AND memory_id = %(id)s
ORDER BY revised_at, id
""")
RECOVERIES_OF = sql("""
SELECT recovered_as_of, command, strength FROM recoveries
WHERE table_name = %(table)s AND selector -> 'ids' ? %(id)s::text
ORDER BY recovered_as_of, id
""")


@cache
def build_update_memory_query(spec: TableSpec) -> Query:
    """A live memory's text %(content)s and metadata %(metadata)s (each kept when NULL),
    updated at %(now)s; its curve and history stay. %(embedding)s, when given, is the new
    text's: a vector's own, or that of the vector made from an episode or fact."""
    embedding = ""
    if spec.has_embedding:
        embedding = "embedding = coalesce(%(embedding)s::vector, embedding),"
    revector = ""
    if spec in _SOURCE_SPECS:
        revector = f""",
    revectored AS (
        UPDATE memory_vectors AS v SET content = u.content, embedding = %(embedding)s::vector
        FROM updated AS u
        WHERE %(embedding)s::vector IS NOT NULL AND v.source_type = '{spec.name}'
          AND v.source_id = u.id AND NOT v.pruned
    )"""
    return sql(f"""
    WITH updated AS (
        UPDATE {spec.name}
        SET content = coalesce(%(content)s, content), {embedding}
            metadata = coalesce(%(metadata)s::jsonb, metadata), updated_at = %(now)s
        WHERE id = %(id)s AND NOT pruned
        RETURNING id, content
    ){revector}
    SELECT id FROM updated
    """)


@cache
def build_forget_agent_query(spec: TableSpec) -> Query:
    """Soft-delete every live memory of %(agent)s on request: reason 'manual'."""
    return sql(f"""
    WITH gone AS (
        UPDATE {spec.name} SET {_pruned_set("manual")}
        WHERE agent_id = %(agent)s AND NOT pruned
        RETURNING 1
    )
    SELECT count(*) FROM gone
    """)
