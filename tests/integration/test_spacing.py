"""Reinforcement by spacing (migration 0039): what a retrieval adds to τ's n grows with
what the memory lost since its last one, in the buffered flush, the durable queue and
useful feedback alike; the SQL twin equals the reference; explain says it."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg
import pytest

from ethos.domain import decay
from ethos.domain.decay import DecayParams, MemoryState
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, LtpSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine, Days


async def reinforcement(conn: asyncpg.Connection, memory: object) -> float:
    value: float = await conn.fetchval(
        "SELECT reinforcement FROM episodic_traces WHERE id = $1", memory
    )
    return value


async def test_ten_retrievals_within_an_hour_raise_tau_by_a_quarter_of_ten_a_week_apart(
    database_url: str, conn: asyncpg.Connection, days: Days
) -> None:
    """Each way in: the buffered flush, the durable queue, useful feedback."""
    p = DecayParams()
    burst = [days(1) + timedelta(minutes=6 * i) for i in range(10)]
    weekly = [days(7 * (i + 1)) for i in range(10)]
    rises = {}
    for durable in (False, True):
        settings = Settings(
            database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED,
            ltp=LtpSettings(durable=durable),
        )  # fmt: skip
        # The queue drained here, one event after another: drainers running side by
        # side may apply a queue's events out of their order (an older one applied
        # after a newer gains MIN_GAIN, as one right after the last).
        async with ConfiguredEngine(settings) as engine:
            for name, moments in (("burst", burst), ("weekly", weekly)):
                memory = await engine.add("episode", agent_id="a", content=f"{name} {durable}",
                                          created_at=days(0))  # fmt: skip
                for i, at in enumerate(moments):
                    if i % 2:  # useful feedback reinforces as a retrieval does
                        await engine.feedback("episode", [memory], "useful", now=at)
                    else:
                        await engine.record_retrieval("episode", [memory], now=at)
                    await engine.ltp.drain(5)
                    if durable:
                        assert await engine.ltp.drain_queue()
                account = await engine.explain("episode", memory, now=moments[-1])
                rises[name, durable] = account.tau_days - p.base_tau_days
                assert account.retrieval_count == 10
                assert account.reinforcement == await reinforcement(conn, memory)
    for durable in (False, True):
        assert 0 < rises["burst", durable] <= rises["weekly", durable] / 4
    assert rises["burst", False] == pytest.approx(rises["burst", True])
    assert rises["weekly", False] == pytest.approx(rises["weekly", True])


async def test_the_sql_gain_is_the_reference(conn: asyncpg.Connection, t0: datetime) -> None:
    policies = [
        DecayParams(),
        DecayParams(curve="power", base_tau_days=3.0, power_exponent=1.5),
        DecayParams(base_tau_days=1 / 9, prune_threshold=0.2),
    ]
    checked = 0
    for p in policies:
        for strength in (0.01, 0.2, 0.5, 1.0):
            for n in (0.0, 0.4, 1.0, 7.3):
                for pinned in (False, True):
                    m = MemoryState(strength=strength, anchor_at=t0, created_at=t0,
                                    reinforcement=n, pinned=pinned)  # fmt: skip
                    for after in (0.0, 0.001, 0.5, 3.0, 40.0):
                        at = t0 + timedelta(days=after)
                        sql = await conn.fetchval(
                            "SELECT ethos_spaced_gain($1, ethos_strength_at($1, $2, $3, $4, $5,"
                            " $6, $7, $8, $9, $10), $3, $4, $11)",
                            strength, t0, n, pinned, at, p.curve, p.base_tau_days,
                            p.ltp_multiplier, p.max_tau_days, p.power_exponent, p.prune_threshold,
                        )  # fmt: skip
                        assert sql == pytest.approx(decay.spaced_gain(m, at, p), abs=1e-12)
                        checked += 1
    assert checked == 480


async def test_explain_says_what_the_retrievals_added_and_what_one_now_would(
    engine: Engine, days: Days
) -> None:
    memory = await engine.add("episode", agent_id="a", content="tea", created_at=days(0))
    await engine.record_retrieval("episode", [memory, memory, memory], now=days(1))
    await engine.ltp.drain(5)
    soon = await engine.explain("episode", memory, now=days(1))
    later = await engine.explain("episode", memory, now=days(20))
    assert soon.retrieval_count == 3
    assert soon.reinforcement == pytest.approx(1 + 2 * decay.MIN_GAIN)
    assert soon.retrieval_now_adds == pytest.approx(decay.MIN_GAIN)
    assert decay.MIN_GAIN < later.retrieval_now_adds <= 1
