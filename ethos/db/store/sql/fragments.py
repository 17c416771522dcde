"""SQL pieces that statements of several concerns share: the salience and strength
expressions, the schedule (when a memory is next due), the pruned and live filters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from ethos.db.store.query import sql
from ethos.domain.decay import (
    MAX_EXPONENT,
    POWER_RETENTION_AT_TAU,
    REFINE_BELOW,
    SCHEDULE_HORIZON_DAYS,
    SECONDS_PER_DAY,
    DecayParams,
)
from ethos.domain.tables import SOURCE_TABLES, TableSpec

SOURCE_SPECS = frozenset(SOURCE_TABLES)

# Where a memory's counters stop (each table's CHECK, migration 0038): far past any use,
# and far enough below 2^31 that adding a flush's counts cannot overflow.
COUNT_CAP = 1_000_000_000

NIL_ID = "00000000-0000-0000-0000-000000000000"
MAX_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"


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
        f"ethos_strength_at({strength}, {alias}.anchor_at, {alias}.reinforcement,"
        f" {alias}.pinned OR {policy}.never_decays, {at}, {policy}.curve,"
        f" {policy}.base_tau_days, {policy}.ltp_multiplier, {policy}.max_tau_days,"
        f" {policy}.power_exponent)"
    )


def spaced_gain_call(decayed: str, alias: str = "m", policy: str = "p") -> str:
    """ethos_spaced_gain(...): what one retrieval adds to the row's reinforcement when
    its strength has decayed to `decayed` (the spacing effect, decay.spaced_gain)."""
    return (
        f"ethos_spaced_gain({alias}.strength, {decayed}, {alias}.reinforcement,"
        f" {alias}.pinned OR {policy}.never_decays, {policy}.prune_threshold)"
    )


def emotion_of(spec: TableSpec, alias: str = "m") -> str:
    return f"{alias}.{spec.emotion_column}" if spec.emotion_column else "0"


def salience_expr(spec: TableSpec, at: str = "%(now)s", alias: str = "m", policy: str = "p") -> str:
    """A row's salience at `at`, from its stored state."""
    return salience_call(
        f"{alias}.strength",
        anchor=f"{alias}.anchor_at",
        n=f"{alias}.reinforcement",
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
        n=f"{alias}.reinforcement",
        emotion="0",
        at=at,
        alias=alias,
        policy=policy,
    )


#
# scheduled() wraps a relation whose rows carry a memory's curve (strength, anchor_at, n,
# emotion, created_at, frozen, reference; for facts confidence_strength; for expiring
# tables expires_at), the values just stored for it (stored_salience, for facts
# stored_confidence) and its policy's parameters (policy_columns), and adds due_at and
# prune_at. It computes in layers of sub-selects, each naming what the next reuses:
# written as one expression the schedule would repeat its parts many times over (and
# PostgreSQL inlines a SQL function only when the arguments its body uses twice are cheap).

# A policy's parameters are DecayParams's fields, decay_policies' columns of the same
# names; never_decays reaches scheduled() as `frozen`.
_SCHEDULE_POLICY_COLUMNS = tuple(f.name for f in fields(DecayParams) if f.name != "never_decays")


def policy_columns(alias: str) -> str:
    """A policy's parameters, as scheduled() reads them, from the policy row `alias`."""
    return ", ".join(f"{alias}.{column}" for column in _SCHEDULE_POLICY_COLUMNS)


def _lines(expressions: Iterable[str]) -> str:
    """Select-list items one to a line, so that a rendered schedule reads as SQL."""
    return ",\n               ".join(expressions)


def _days(log_strength: str, log_target: str, after_anchor: str) -> str:
    """reference_decay.falls_below's days_at: days after the anchor until the value falls to the
    target, with f taken that many days after the anchor (or at the reference, if
    later); within [0, horizon]."""
    age = f"greatest(_anchor_age + {after_anchor}, _reference_age)"
    y = (
        f"({log_strength} - {log_target}"
        f" + ln(1 + frequency_weight * least(n / greatest({age}, 1), 1)))"
    )
    days = f"""CASE WHEN curve = 'power'
                 THEN _tau / _power_factor * (exp(least({y} / power_exponent, {MAX_EXPONENT})) - 1)
                 ELSE _tau * {y} END"""
    return f"least(greatest({days}, 0), {SCHEDULE_HORIZON_DAYS})"


def _value_due(value: str, strength: str, stored: str, floor: str, target: str, days: str) -> str:
    """reference_decay.value_due for a value just stored exactly at the reference (so it has not
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
) -> str:
    """`source` (a relation with the columns above) with due_at and prune_at: when its row
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
    layer2 = f"""SELECT _1.*,
               {_lines(latest)}
        FROM (SELECT _1.*, {log_targets}, ln(prune_threshold) AS _log_threshold,
                     greatest(_reference_age - _anchor_age, 0) AS _elapsed
              FROM ({layer1}) AS _1 OFFSET 0) AS _1 OFFSET 0"""
    answers = [
        f"CASE WHEN frozen OR n = 0 THEN _latest_{key}"
        f" ELSE {_days(log, log_target, f'_latest_{key}')} END AS _answer_{key}"
        for key, log, log_target in crossings
    ]
    layer3 = f"""SELECT _2.*,
               {_lines(answers)}
        FROM ({layer2}) AS _2 OFFSET 0"""
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
        # reference_decay.candidates: halfway, the end of f's plateau, one Newton step; the value
        # stays above target until the earlier of each and the crossing with f there.
        moments = [
            f"((_latest_{name} + _answer_{name}) / 2)",
            "greatest(greatest(n, 1) - _anchor_age, 0)",
            f"(_elapsed + greatest({log} + {reference_log} - {log_target}, 0) / {slope})",
        ]
        tries = _lines(f"least({t}, {_days(log, log_target, t)})" for t in moments)
        # (Only where the bracket, seen from the reference, is wide: most rows are settled
        # by the first two steps.)
        refined.append(
            f"CASE WHEN frozen OR n = 0"
            f" OR _answer_{name} - _elapsed >= {REFINE_BELOW} * (_latest_{name} - _elapsed)"
            f" THEN _answer_{name} ELSE greatest(_answer_{name}, {tries}) END AS _days_{name}"
        )
    layer4 = f"""SELECT _3.*,
               {_lines(refined)}
        FROM ({layer3}) AS _3 OFFSET 0"""
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
        FROM ({layer4}) AS _4"""


# Hints come in groups: the rows one statement scheduled, of one kind and slice, whose
# moments lie within a factor of √2 of each other seen from the statement's moment (a
# batch at most; statements of any size group by HINT_GROUP_ROWS instead). A group is
# due at its earliest moment; the sweep that pops it looks at each of its rows where the
# hint saw it, writes those that are due, and groups the others anew. One hint row a
# group, not a row: see migration 0013.
HINT_GROUP_ROWS = 500


def insert_hints(spec: TableSpec, rows: str, *, since: str | None, sliced: bool = False) -> str:
    """Insert the hints of `rows` (prune, at, id, place, agent_id), grouped as above, each
    naming the least agent of its rows; without `since` (rows due at one moment, any
    number of them), by kind and slice, in parts of HINT_GROUP_ROWS. `sliced`: the rows
    carry their place's slice too (computed once a row rather than once a kind:
    ethos_slice reads the place as text)."""
    if since:
        # (seconds apart as the difference of the epochs: PostgreSQL before 17 refuses to
        # subtract an infinite timestamp, a moment that never comes)
        apart = f"date_part('epoch', r.at) - date_part('epoch', {since}::timestamptz)"
        group = f"floor(2 * ln(greatest(({apart}) / 60, 1)) / ln(2))"
    else:
        group = f"""(row_number() OVER (PARTITION BY r.prune, r.slice ORDER BY r.id) - 1)
                    / {HINT_GROUP_ROWS}"""
    if not sliced:
        rows = f"SELECT r.*, ethos_slice(r.place) AS slice FROM ({rows}) AS r"
    return f"""
        INSERT INTO {spec.due_table} (prune, at, slice, n, ids, places, agent_id)
        SELECT prune, min(at), slice, count(*), array_agg(id), array_agg(place), min(agent_id)
        FROM (SELECT r.*, {group} AS part FROM ({rows}) AS r) AS g
        GROUP BY prune, slice, part"""


def hint_moments(
    rows: str,
    *,
    earlier: bool = False,
    always: bool | None = None,
    set_at: str | None = None,
    sliced: bool = False,
) -> str:
    """Hint rows (prune, at, id, place, agent_id) for the rows of `rows` (id, place,
    agent_id, due_at, prune_at), one for each kind they have a moment of (false: any
    write, due_at; true: pruning, prune_at). With `earlier`, only moments earlier than
    the one the row had (old_due, old_prune: the hint of the old one still stands for a
    later one), except for the kind `always` and for moments equal to `set_at` (a column
    of `rows`: the moment a write set, whatever the row had, which it may have read
    before another write changed it). `sliced`: `rows` carry their place's slice, and so
    do the hint rows (insert_hints(sliced=True))."""
    moment = "CASE WHEN kind.prune THEN r.prune_at ELSE r.due_at END"
    where = f"{moment} IS NOT NULL"
    if earlier:
        sooner = """NOT (CASE WHEN kind.prune THEN r.prune_at >= r.old_prune
                              ELSE r.due_at >= r.old_due END)"""
        if always is not None:
            sooner = f"(kind.prune = {str(always).lower()} OR {sooner})"
        if set_at is not None:
            sooner = f"({moment} = r.{set_at} OR {sooner})"
        where += f"\n          AND {sooner}"
    slice = ", r.slice" if sliced else ""
    return f"""SELECT kind.prune, {moment} AS at, r.id, r.place, r.agent_id{slice}
        FROM {rows} AS r CROSS JOIN (VALUES (false), (true)) AS kind (prune)
        WHERE {where}"""


def link_fades_at(
    weight: str,
    at: str,
    *,
    prune: str = "%(links_prune)s::float8",
    tau: str = "%(links_tau)s::float8",
) -> str:
    """When a weight set at `at` falls below links.prune_weight (`prune`; `tau` in days).
    In seconds since the epoch and back: `timestamptz + interval` is only STABLE (a
    month's length depends on the time zone), and Citus refuses what is not IMMUTABLE in
    an upsert's DO UPDATE SET."""
    return (
        f"to_timestamp(date_part('epoch', {at} - to_timestamp(0)) +"
        f" greatest(ln(greatest({weight}, 1e-300) / {prune}), 0) * {tau} * {SECONDS_PER_DAY})"
    )


def hint_both_at(spec: TableSpec, rows: str, at: str) -> str:
    """Hints of both kinds at `at` for the rows of `rows` (id, place, agent_id)."""
    return insert_hints(
        spec,
        f"""SELECT kind.prune, {at}::timestamptz AS at, r.id, r.place, r.agent_id
        FROM {rows} AS r CROSS JOIN (VALUES (false), (true)) AS kind (prune)""",
        since=None,
    )


def hint_all(spec: TableSpec, rows: str) -> str:
    """Hints of both kinds for rows just scheduled anew at %(now)s (a move, a recovery)."""
    return insert_hints(spec, hint_moments(rows), since="%(now)s::timestamptz")


def hint_live_rows(spec: TableSpec, where: str = "true") -> str:
    """Hints of the table's live rows matching `where`, from their own moments (due_at,
    prune_at), grouped from %(now)s: what a hint of them that was dropped stood for."""
    return hint_all(
        spec,
        f"""(SELECT id, ctid AS place, agent_id, due_at, prune_at FROM {spec.name}
             WHERE NOT pruned AND {where})""",
    )


def pruned_set(reason: str) -> str:
    """SET of a row soft-deleted at %(now)s for `reason`: pruned rows have no schedule."""
    return (
        f"pruned = true, pruned_at = %(now)s, prune_reason = '{reason}', due_at = NULL,"
        " prune_at = NULL"
    )


# A memory (m) of a table with expires_at that has not expired by %(now)s.
def unexpired(alias: str = "m") -> str:
    """The row `alias` has not expired at %(now)s."""
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > %(now)s)"


UNEXPIRED = unexpired()

# The text search configuration, as ethos_text_config() reads it, inline: a statement
# Citus routes to one shard runs there, where a function reading a table would be a
# distributed query inside it, which Citus refuses.
TEXT_CONFIG = "coalesce((SELECT s.text_config FROM ethos_settings AS s), 'english'::regconfig)"


def mem0_owners(metadata: str = "m.metadata", agent: str = "m.agent_id") -> str:
    """The mem0 owners of a memory of `agent` with this `metadata` (expressions): those
    it was added with through mem0's shape (metadata.mem0, without the role of its
    message), else its agent's, as user_id (ethos.adapters.http.owners)."""
    kept = f"({metadata} -> 'mem0') - 'role'"
    return f"coalesce({kept}, jsonb_build_object('user_id', {agent}))"


def identity(
    metadata: str = "m.metadata", agent: str = "m.agent_id", key: str = "m.client_key"
) -> str:
    """What makes a memory itself beside its agent and normalised content (jsonb): its
    LangGraph key (an item is its key: two keys are never one memory, whatever their
    values; a memory without one is never an item's duplicate), and its mem0 owners
    (memories of different owner sets are never one). The one rule of duplicates
    (decision 0018): a repeat found at write (memories.build_find_duplicate_query) and a
    group the merge makes (lifecycle.build_duplicate_groups_query) share agent, content
    key and this."""
    return f"jsonb_build_array({key}, {mem0_owners(metadata, agent)})"


def held(metadata: str = "m.metadata", agent: str = "m.agent_id") -> str:
    """Whether a memory of `agent` with this `metadata` holds the mem0 owners and the
    metadata of one of the terms %(matching)s (jsonb containment), or there are none
    (NULL): mem0's filters, an OR of ANDs, matched in SQL."""
    return f"""(%(matching)s::jsonb IS NULL OR EXISTS (
          SELECT FROM jsonb_array_elements(%(matching)s::jsonb) AS t
          WHERE {mem0_owners(metadata, agent)} @> (t -> 'owners')
            AND {metadata} @> (t -> 'metadata')))"""


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


def embedding_at(position: str) -> str:
    """The vector at `position` (from 1) of the embeddings %(embeddings)s, one flat
    array of %(dimension)s numbers each (store.query.embedding_binds)."""
    return (
        f"(%(embeddings)s::float8[])[({position} - 1) * %(dimension)s + 1"
        f" : {position} * %(dimension)s]::vector"
    )


# The embeddings of memories %(ids)s of agent %(agent)s in %(table)s, one each of
# %(fields)s (the LangGraph index field of its text; '$': the whole text) and the
# embeddings in their order (embedding_at), where the memory has none of that field; first
# those of the memories %(cleared)s are removed (a new text's take their place).
# ethos_embed writes them, and raises a memory's importance by its first one's
# particularity: how many were written.
EMBED = sql(f"""
    SELECT ethos_embed(%(table)s, array_fill(%(agent)s::text, ARRAY[cardinality(%(ids)s::uuid[])]),
                       %(ids)s::uuid[], %(fields)s::text[],
                       ARRAY(SELECT {embedding_at("k")}
                             FROM generate_series(1, cardinality(%(fields)s::text[])) AS k),
                       array_fill(%(agent)s::text,
                                  ARRAY[coalesce(cardinality(%(cleared)s::uuid[]), 0)]),
                       %(cleared)s::uuid[])
    """)
