"""Sweeps on a real PostgreSQL: the SQL math equals the Python math on every policy and
both curves, any cadence gives the same values, and every row is reached."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from itertools import pairwise
from typing import TYPE_CHECKING

import asyncpg
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ethos.db.store.sql.fragments import salience_expr, strength_at_call
from ethos.domain import decay
from ethos.domain.explain import memory_state
from ethos.domain.tables import EPISODES, MEMORY_TABLES, TableSpec
from ethos.services.engine import Engine
from ethos.services.sweep import Mode
from ethos.settings import (
    DatabaseSettings,
    DecaySettings,
    PolicySettings,
    Settings,
    SweepSettings,
)
from tests.conftest import WORDS_IGNORED, ConfiguredEngine, truncate

if TYPE_CHECKING:
    from tests.conftest import Days

ZERO_VECTOR = "array_fill(0.1::real, ARRAY[384])::vector"


# What each table takes beyond the common columns, with a random value.
TABLE_EXTRA = {
    "episodic_traces": ("emotional_tone", "random()"),
    "semantic_facts": ("confidence", "random()"),
    "memory_vectors": ("embedding", ZERO_VECTOR),
}


Seed = Callable[..., Awaitable[None]]
# The four shipped policies, and one on the power curve.
ALL_POLICIES = ("standard", "working", "long_term", "permanent", "recall")


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The shipped policies and `recall`, a power-curve policy (FSRS's d = 0.5); plain
    memories stay on the policy they name or the default (their words do not tier them)."""
    return Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        policies={"recall": PolicySettings(curve="power", base_tau_days=2.0)},
    )


@pytest.fixture
def seed_random(conn: asyncpg.Connection, t0: datetime) -> Seed:
    """seed_random(per_table, agent="a", policies=("standard",), seed=0.5): rows with
    random state (strength, anchor after creation, retrievals, emotion) and a random one
    of `policies`, in every memory table; the same rows for the same seed."""

    async def seed(
        per_table: int,
        agent: str = "a",
        policies: tuple[str, ...] = ("standard",),
        seed: float = 0.5,
    ) -> None:
        await conn.execute("SELECT setseed($1)", seed)  # random() below: repeatable
        await _seed_random(conn, per_table, agent, t0, policies)

    return seed


async def _seed_random(
    conn: asyncpg.Connection, per_table: int, agent: str, t0: datetime, policies: tuple[str, ...]
) -> None:
    """In one INSERT a table, its random() drawn where the statement is planned (on a
    Citus coordinator too, where the setseed was), anchors somewhere between creation
    and t0, as after a retrieval."""
    for table, (column, value) in TABLE_EXTRA.items():
        await conn.execute(
            f"""
            INSERT INTO {table} (agent_id, content, salience, created_at, anchor_at,
                                 retrieval_count, pinned, policy, {column})
            SELECT $1, 'seed ' || r.g, r.salience, r.created_at,
                   r.created_at + r.anchored * ($2::timestamptz - r.created_at),
                   r.retrievals, r.pinned, r.policy, r.extra
            FROM (SELECT g, random() AS salience,
                         $2::timestamptz - random() * interval '60 days' AS created_at,
                         (random() * 12)::int AS retrievals, random() < 0.05 AS pinned,
                         ($3::text[])[1 + floor(random() * cardinality($3))::int] AS policy,
                         {value} AS extra, random() AS anchored
                  FROM generate_series(1, {per_table}) g) AS r""",
            agent,
            t0,
            list(policies),
        )


async def test_sql_and_python_formulas_agree(
    engine: Engine, conn: asyncpg.Connection, days: Days, seed_random: Seed
) -> None:
    await seed_random(1500, policies=ALL_POLICIES)
    checked: dict[str, int] = {}
    for spec in MEMORY_TABLES:
        rows = await conn.fetch(
            f"""SELECT m.*, {salience_expr(spec, at="$1")} AS sql_salience,
                       {strength_at_call("m.strength", at="$1")} AS sql_strength
                FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy""",
            days(3),
        )
        for row in rows:
            p = engine.settings.policy(row["policy"]).params
            state = memory_state(spec, row)
            expected = decay.salience(state, days(3), p)
            assert row["sql_salience"] == pytest.approx(expected, abs=1e-9)
            if p.curve == "power" and not state.pinned:
                # FSRS's retrievability, written out: S × (1 + F·t/τ)^(−d)
                t = max((days(3) - state.anchor_at).total_seconds() / 86400, 0)
                tau = decay.tau_days(state.reinforcement, p)
                formula = state.strength * (1 + (0.9**-2 - 1) * t / tau) ** -0.5
                assert row["sql_strength"] == pytest.approx(formula, rel=1e-9)
            checked[p.curve] = checked.get(p.curve, 0) + 1
    assert sum(checked.values()) == 4500 and checked["power"] > 500


async def test_plain_episode_alive_at_20_9_days_pruned_at_21(
    engine: Engine, t0: datetime, days: Days
) -> None:
    memory = await engine.add("episode", agent_id="a", content="x", created_at=t0)
    await engine.sweep(now=days(20.9))
    alive = await engine.explain("episode", memory, now=days(20.9))
    assert not alive.pruned
    report = await engine.sweep(now=days(21.0))
    assert report.tables["episodic_traces"].pruned == 1
    gone = await engine.explain("episode", memory, now=days(21.0))
    assert gone.pruned and gone.prune_reason == "decay"
    assert gone.pruned_at == days(21.0)
    assert alive.prunes_at.isoformat() == "2026-01-21T23:16:59+00:00"  # 7·ln 20 days, to the second


async def test_expired_vectors_are_pruned_and_pinned_rows_survive(
    engine: Engine, t0: datetime, days: Days
) -> None:
    embedding = [0.1] * 384
    expiring = await engine.add(
        "vector",
        agent_id="a",
        content="x",
        embedding=embedding,
        created_at=t0,
        expires_at=days(1),
    )
    pinned = await engine.add(
        "episode", agent_id="a", content="p", created_at=t0, pinned=True, salience=0.02
    )
    pinned_expiring = await engine.add(
        "vector",
        agent_id="a",
        content="y",
        embedding=embedding,
        created_at=t0,
        expires_at=days(1),
        pinned=True,
    )
    await engine.sweep(now=days(0.5))
    assert not (await engine.explain("vector", expiring, now=days(0.5))).pruned
    await engine.sweep(now=days(365))
    info = await engine.explain("vector", expiring, now=days(365))
    assert (info.pruned, info.prune_reason) == (True, "expired")
    for table, memory in (("episode", pinned), ("vector", pinned_expiring)):
        kept = await engine.explain(table, memory, now=days(365))
        assert not kept.pruned and kept.prunes_at is None


async def test_facts_are_pruned_on_confidence(engine: Engine, t0: datetime, days: Days) -> None:
    weak = await engine.add("fact", agent_id="a", content="w", confidence=0.06, created_at=t0)
    strong = await engine.add("fact", agent_id="a", content="s", salience=0.06, created_at=t0)
    await engine.sweep(now=days(2))
    assert (await engine.explain("fact", weak, now=days(2))).pruned
    survivor = await engine.explain("fact", strong, now=days(2))
    assert not survivor.pruned and survivor.salience < 0.05


@pytest.mark.parametrize(
    ("mode", "workers"),
    # (a full sweep drops the hints it superseded when no other session's transaction
    # began before it: on a server of the test's own)
    [pytest.param("full", 1, marks=pytest.mark.own_server), ("due", 1), ("due", 3)],
)
async def test_a_sweep_reaches_every_row_across_many_batches(
    database_url: str,
    conn: asyncpg.Connection,
    days: Days,
    seed_random: Seed,
    mode: Mode,
    workers: int,
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        decay=DecaySettings(batch_size=7),
        sweep=SweepSettings(workers=workers),
    )
    await seed_random(100)
    calls: list[tuple[str, int, bool]] = []
    async with ConfiguredEngine(settings) as engine:
        report = await engine.sweep(
            now=days(20_000), mode=mode, progress=lambda *call: calls.append(call)
        )
    assert [c for c in calls if c[2]] == [(s.name, 100, True) for s in MEMORY_TABLES]
    if mode == "full":
        assert len(calls) == 3 * 15  # ceil(100 / 7) batches per table
    else:  # batches of at most 7 rows, from 16 slices shared by the workers
        assert 3 * 16 <= len(calls) <= 3 * (16 + 15)
    steps = [b[1] - a[1] for a, b in pairwise(calls) if a[0] == b[0]]
    assert 0 < max(steps) <= 7
    refresh_hints_due = await conn.fetchval(
        "SELECT coalesce(sum(n), 0) FROM (SELECT * FROM memory_vectors_due UNION ALL"
        " SELECT * FROM episodic_traces_due UNION ALL SELECT * FROM semantic_facts_due) AS h"
        " WHERE NOT prune AND at <= $1",
        days(20_000),
    )
    # A due sweep pops them; a full one drops those it superseded: none left due.
    assert refresh_hints_due == 0
    for spec in MEMORY_TABLES:
        counts = report.tables[spec.name]
        assert counts.scanned == 100
        pinned = await conn.fetchval(f"SELECT count(*) FROM {spec.name} WHERE pinned")
        assert counts.pruned == 100 - pinned  # 55 years prune every unpinned row
    rows = await conn.fetchval("SELECT count(*) FROM sweep_runs WHERE status = 'completed'")
    assert rows == 1


async def test_second_sweep_at_the_same_now_writes_nothing(
    engine: Engine, conn: asyncpg.Connection, days: Days, seed_random: Seed
) -> None:
    await seed_random(200)
    first = await engine.sweep(now=days(5))
    assert first.totals()[1] > 0
    versions = await conn.fetch("SELECT id, xmin::text FROM episodic_traces ORDER BY id")
    second = await engine.sweep(now=days(5))
    assert second.totals()[1:] == (0, 0)
    assert await conn.fetch("SELECT id, xmin::text FROM episodic_traces ORDER BY id") == versions


async def test_dry_run_counts_and_writes_nothing(
    engine: Engine, conn: asyncpg.Connection, days: Days, seed_random: Seed
) -> None:
    await seed_random(50)
    before = await conn.fetch("SELECT id, xmin::text FROM semantic_facts ORDER BY id")
    runs = await conn.fetchval("SELECT count(*) FROM sweep_runs")
    dry = await engine.sweep(now=days(30), dry_run=True, mode="full")
    assert await conn.fetch("SELECT id, xmin::text FROM semantic_facts ORDER BY id") == before
    assert await conn.fetchval("SELECT count(*) FROM sweep_runs") == runs
    real = await engine.sweep(now=days(30), mode="full")
    assert real.tables == dry.tables


@pytest.mark.parametrize("at", [3, 30])
async def test_a_dry_run_counts_what_the_sweep_then_does(
    engine: Engine, days: Days, seed_random: Seed, at: float
) -> None:
    """`sweep --dry-run` and `sweep` at one --now on the same data: the same counts per
    table (a due sweep's rows, not every live row a full pass reads)."""
    await seed_random(60)
    await engine.sweep(now=days(1))  # some rows written and scheduled, others not yet due
    dry = await engine.sweep(now=days(at), dry_run=True)
    real = await engine.sweep(now=days(at))
    assert dry.tables == real.tables
    assert dry.summary().split(" in ")[0] == real.summary().split(" in ")[0]


async def stored_and_true(
    conn: asyncpg.Connection, engine: Engine, agent: str, at: datetime
) -> list[tuple]:
    """Per row: table, content, pruned, the stored deciding value, the true one at `at`,
    pruned_at, its state and its policy's parameters."""
    result = []
    for spec in MEMORY_TABLES:
        for row in await conn.fetch(
            f"SELECT * FROM {spec.name} WHERE agent_id = $1 ORDER BY content", agent
        ):
            p = engine.settings.policy(row["policy"]).params
            deciding = memory_state(spec, row, confidence=spec.has_confidence)
            result.append(
                (
                    spec.name,
                    row["content"],
                    row["pruned"],
                    row["confidence"] if spec.has_confidence else row["salience"],
                    decay.salience(deciding, at, p),
                    row["pruned_at"],
                    deciding,
                    p,
                )
            )
    return result


async def test_hourly_for_30_days_equals_one_sweep_at_the_end(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days, seed_random: Seed
) -> None:
    """Due sweeps every hour for 30 days, and one full sweep (of a copy) at the end."""
    await seed_random(60, agent="hourly", policies=ALL_POLICIES)
    end = days(30)
    for hour in range(0, 30 * 24 + 1):
        await engine.sweep(now=t0 + timedelta(hours=hour))
    for spec in MEMORY_TABLES:  # the same state, never swept, for the other agent
        await conn.execute(
            f"""INSERT INTO {spec.name} (agent_id, content, salience, strength, anchor_at,
                    created_at, retrieval_count, pinned, policy, {_extra(spec)[0]})
                SELECT 'once', content, strength, strength, anchor_at,
                       created_at, retrieval_count, pinned, policy, {_extra(spec)[1]}
                FROM {spec.name} WHERE agent_id = 'hourly'"""
        )
    await engine.sweep(now=end, agent="once")
    tolerance = engine.settings.decay.refresh_tolerance
    hourly = await stored_and_true(conn, engine, "hourly", end)
    once = await stored_and_true(conn, engine, "once", end)
    assert len(hourly) == len(once) == 180
    assert {h[7].curve for h in hourly} == {"exponential", "power"}
    assert sum(h[2] for h in hourly) and not all(h[2] for h in hourly)
    for h, o in zip(hourly, once, strict=True):
        assert h[:3] == o[:3]  # same row, same pruned verdict
        assert h[4] == pytest.approx(o[4], abs=1e-9)  # same true value
        if not h[2]:
            assert h[3] == pytest.approx(h[4], rel=tolerance)
            assert o[3] == pytest.approx(o[4], rel=tolerance)
        else:
            # pruned in the first hourly sweep after the moment the curve crossed the threshold
            crossing = decay.prunes_at(h[6], t0, h[7])
            assert crossing is not None
            assert timedelta(0) <= h[5] - max(crossing, t0) < timedelta(hours=1)


def _extra(spec: TableSpec) -> tuple[str, str]:
    """The table's own state columns, and what to copy into them."""
    return {
        "memory_vectors": ("embedding, expires_at", "embedding, expires_at"),
        "episodic_traces": ("emotional_tone", "emotional_tone"),
        "semantic_facts": (
            "confidence, confidence_strength",
            "confidence_strength, confidence_strength",
        ),
    }[spec.name]


@hsettings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    moments=st.lists(st.floats(min_value=0, max_value=40), min_size=1, max_size=6),
    end=st.floats(0, 40),
    per_table=st.integers(1, 30),
    seed=st.floats(-1, 1),
)
async def test_any_sweep_sequence_ends_in_the_true_state(
    engine: Engine,
    conn: asyncpg.Connection,
    moments: list[float],
    end: float,
    per_table: int,
    seed: float,
    days: Days,
    seed_random: Seed,
) -> None:
    """The rows come from hypothesis's draw (their count and the seed of their state), so
    a failing example replays and shrinks."""
    await truncate(conn, *(spec.name for spec in MEMORY_TABLES))
    await seed_random(per_table, policies=ALL_POLICIES, seed=seed)
    end = max([end, *moments])
    for moment in sorted(moments):
        await engine.sweep(now=days(moment))
    await engine.sweep(now=days(end))
    rows = await stored_and_true(conn, engine, "a", days(end))
    for _, _, pruned, stored, true, _, state, p in rows:
        assert pruned == (not decay.frozen(state, p) and decay.is_pruned(true, p))
        if not pruned:
            assert stored == pytest.approx(true, rel=engine.settings.decay.refresh_tolerance)


@pytest.mark.parametrize("mode", ["full", "due"])
async def test_a_concurrent_update_is_never_overwritten_by_a_batch(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days, mode: Mode
) -> None:
    memory = await engine.add("episode", agent_id="a", content="x", created_at=t0)
    other = await asyncpg.connect(engine.url)
    try:
        async with other.transaction():
            # An LTP-like write holds the row while the sweep's batch reaches it.
            await other.execute(
                "UPDATE episodic_traces SET strength = 0.9, anchor_at = $2, salience = 0.9,"
                " retrieval_count = 1, reinforcement = 1 WHERE agent_id = 'a' AND id = $1",
                memory,
                days(10),
            )
            # The batch skips the row another transaction holds (decision 0022): it
            # neither waits for it nor writes it.
            report = await asyncio.wait_for(engine.sweep(now=days(10), mode=mode), 10)
    finally:
        await other.close()
    counts = report.tables["episodic_traces"]
    assert (counts.updated, counts.held) == (0, 1)
    row = await conn.fetchrow("SELECT * FROM episodic_traces WHERE id = $1", memory)
    assert (row["strength"], row["retrieval_count"], row["anchor_at"]) == (0.9, 1, days(10))
    assert row["salience"] == 0.9
    # The next sweep refreshes it, on the other write's values (a due sweep finds the
    # hint the skipping batch put back).
    later = days(10) + timedelta(seconds=1)
    assert (await engine.sweep(now=later, mode=mode)).tables["episodic_traces"].updated == 1
    row = await conn.fetchrow("SELECT * FROM episodic_traces WHERE id = $1", memory)
    p = engine.settings.policy("standard").params
    fresh = decay.salience(memory_state(EPISODES, row), later, p)
    assert fresh != 0.9 and row["salience"] == pytest.approx(fresh, rel=1e-12)


async def test_sweep_run_is_recorded(
    engine: Engine, conn: asyncpg.Connection, days: Days, seed_random: Seed
) -> None:
    await seed_random(10)
    report = await engine.sweep(now=days(50), tables=["episode"])
    run = await conn.fetchrow("SELECT * FROM sweep_runs WHERE id = $1", report.run_id)
    assert run["status"] == "completed" and run["trigger"] == "api"  # the engine's default
    assert run["swept_at"] == days(50)
    assert run["scanned"] == 10 and run["finished_at"] is not None
    assert set(report.tables) == {"episodic_traces"}
    pruned = await conn.fetchval(
        "SELECT count(*) FROM episodic_traces WHERE pruned AND pruned_at = $1", days(50)
    )
    assert run["pruned"] == pruned > 0


async def test_a_decades_old_row_decays_in_sql_without_underflow(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    """ln(1e-300) − 36,500 / 7 is far below what float8's exp can return: PostgreSQL
    raises 'value out of range: underflow' unless the exponent is floored."""
    memory = await conn.fetchval(
        """INSERT INTO episodic_traces (agent_id, content, salience, strength, created_at)
           VALUES ('a', 'ancient', 1e-300, 1e-300, $1::timestamptz - interval '100 years')
           RETURNING id""",
        t0,
    )
    report = await engine.sweep(now=t0)
    assert report.tables["episodic_traces"].pruned == 1
    row = await conn.fetchrow("SELECT salience, pruned FROM episodic_traces WHERE id = $1", memory)
    assert row["pruned"] and row["salience"] == pytest.approx(math.exp(-700), rel=1e-9)
