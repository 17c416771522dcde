"""Feedback and associations: what was used is reinforced, what was wrong weakened (and
pruned below the threshold), what is recalled together is linked; all through the
exactly-once LTP buffer."""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain import decay
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, LtpSettings, Settings
from tests import reference_decay
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.vectors import unit

if TYPE_CHECKING:
    from tests.conftest import Days


async def row(conn: asyncpg.Connection, table: str, memory_id: uuid.UUID) -> asyncpg.Record:
    return await conn.fetchrow(f"SELECT * FROM {table} WHERE id = $1", memory_id)


async def test_wrong_twice_prunes_with_reason_feedback_and_recover_brings_it_back(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    memory = await engine.add("episode", agent_id="a", content="x", created_at=days(1),
                              salience=0.15)  # fmt: skip
    await engine.feedback("episode", [memory], "wrong", now=days(1))
    await engine.ltp.drain(5)
    once = await row(conn, "episodic_traces", memory)
    assert (once["strength"], once["wrong_count"], once["pruned"]) == (0.075, 1, False)
    await engine.feedback("episode", [memory], "wrong", now=days(1))
    await engine.ltp.drain(5)
    twice = await row(conn, "episodic_traces", memory)
    assert twice["strength"] == pytest.approx(0.0375)
    assert (twice["pruned"], twice["prune_reason"], twice["pruned_at"]) == (
        True,
        "feedback",
        days(1),
    )
    assert engine.ltp.stats.pruned == 1
    report = await engine.recover("episode", Selector(reason="feedback"), now=days(2))
    assert [r["id"] for r in report.rows] == [str(memory)]
    back = await row(conn, "episodic_traces", memory)
    assert (back["pruned"], back["wrong_count"]) == (False, 2)  # history kept


async def test_a_wrong_fact_loses_confidence_too(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="x", created_at=days(1), confidence=0.8)
    await engine.feedback("fact", [fact], "wrong", now=days(1))
    await engine.ltp.drain(5)
    after = await row(conn, "semantic_facts", fact)
    assert (after["strength"], after["confidence_strength"]) == (0.5, 0.4)
    with pytest.raises(Exception, match="feedback is 'useful' or 'wrong'"):
        await engine.feedback("fact", [fact], "great")


async def test_on_search_count_only_counts_and_useful_reinforces(
    database_url: str, conn: asyncpg.Connection, days: Days
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        ltp=LtpSettings(on_search="count"),
    )
    async with ConfiguredEngine(settings) as engine:
        vector = await engine.add("vector", agent_id="a", content="v", embedding=unit(1),
                                  created_at=days(0), salience=0.5)  # fmt: skip
        before = await row(conn, "memory_vectors", vector)
        hits = await engine.nearest("a", unit(1), k=3, now=days(1))
        assert [h.id for h in hits] == [vector]
        await engine.ltp.drain(5)
        counted = await row(conn, "memory_vectors", vector)
        assert counted["surfaced_count"] == 1
        for column in ("strength", "anchor_at", "retrieval_count", "salience", "due_at"):
            assert counted[column] == before[column], column
        await engine.feedback("vector", [vector], "useful", now=days(1))
        await engine.ltp.drain(5)
    used = await row(conn, "memory_vectors", vector)
    assert (used["retrieval_count"], used["useful_count"], used["anchor_at"]) == (1, 1, days(1))
    # its first retrieval gives back what it lost since its creation (spaced_gain 1)
    assert used["strength"] == pytest.approx(0.5 * 1.05)
    assert used["reinforcement"] == 1


async def test_recalled_together_three_times_then_a_week_later(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    a = await engine.add("vector", agent_id="a", content="a", embedding=unit(1))
    b = await engine.add("vector", agent_id="a", content="b", embedding=unit(1))
    await engine.add("vector", agent_id="z", content="other agent", embedding=unit(1))
    for _ in range(3):
        hits = await engine.nearest("a", unit(1), k=2, now=days(1))
        assert {h.id for h in hits} == {a, b}
    await engine.ltp.drain(5)
    [link] = await engine.links("vector", a, now=days(1))
    assert (link.id, link.co_retrievals) == (b, 3)
    assert link.weight == pytest.approx(1 - 0.9**3)
    [later] = await engine.links("vector", b, now=days(8))
    assert later.id == a
    assert later.weight == pytest.approx((1 - 0.9**3) * math.exp(-7 / 30))
    # The view speaks of now: recalled together a moment ago, the link is there.
    await engine.nearest("a", unit(1), k=2)
    await engine.ltp.drain(5)
    view = await conn.fetch("SELECT agent_id, rank_in_agent, weight FROM ethos_links")
    assert [(r["agent_id"], r["rank_in_agent"]) for r in view] == [("a", 1)]
    # (the old weight, set in January, has decayed to almost nothing since: η it is)
    assert view[0]["weight"] == pytest.approx(0.1, abs=1e-3)


async def test_links_fade_and_the_sweep_removes_them(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    a = await engine.add(
        "episode", agent_id="a", content="a", created_at=days(0), policy="permanent"
    )
    b = await engine.add(
        "episode", agent_id="a", content="b", created_at=days(0), policy="permanent"
    )
    await engine.feedback("episode", [a, b], "useful", now=days(0))
    await engine.ltp.drain(5)
    # 0.1 falls to 0.05 in 30 · ln 2 = 20.8 days
    assert (await engine.sweep(now=days(20))).links_removed == 0
    assert len(await engine.links("episode", a, now=days(20))) == 1
    report = await engine.sweep(now=days(21))
    assert report.links_removed == 1
    assert await conn.fetchval("SELECT count(*) FROM memory_links") == 0
    await engine.feedback("episode", [a, b], "wrong", now=days(21))  # no link to weaken:
    await engine.ltp.drain(5)  # none is created
    assert await conn.fetchval("SELECT count(*) FROM memory_links") == 0


async def test_expand_returns_a_linked_neighbour_the_plain_search_does_not(
    engine: Engine, days: Days
) -> None:
    near = await engine.add("vector", agent_id="a", content="near", embedding=unit(1))
    far = await engine.add("vector", agent_id="a", content="far", embedding=unit(2))
    fact = await engine.add("fact", agent_id="a", content="a linked fact")
    await engine.feedback("vector", [near, far], "useful", now=days(1))
    await engine.ltp.drain(5)
    plain = await engine.nearest("a", unit(1), k=1, now=days(1), record=False)
    assert [h.id for h in plain] == [near]
    expanded = await engine.nearest("a", unit(1), k=1, now=days(1), expand=True)
    assert [h.id for h in expanded] == [near, far]
    neighbour = expanded[1]
    assert (neighbour.via, neighbour.similarity, neighbour.table) == (near, None, "memory_vectors")
    assert neighbour.score == pytest.approx(
        expanded[0].score * neighbour.link_weight * neighbour.salience
    )
    await engine.ltp.drain(5)
    assert fact  # not linked: never expanded to


async def test_mixed_retrievals_and_feedback_from_20_tasks_during_sweeps(
    database_url: str, conn: asyncpg.Connection, days: Days
) -> None:
    """5,000 calls: every count and strength equals the sequential computation."""
    settings = Settings(
        database=DatabaseSettings(url=database_url, pool_max_size=8),
        ltp=LtpSettings(flush_interval_seconds=0.01, flush_max_rows=200),
    )
    p = settings.policy("standard").params
    rows = await conn.fetch(
        """INSERT INTO episodic_traces (agent_id, content, salience, created_at, policy)
           SELECT 'a', 'm' || g, 0.3 + random() * 0.4, $1, 'standard'
           FROM generate_series(1, 200) g RETURNING id, strength""",
        days(0),
    )
    initial = {r["id"]: r["strength"] for r in rows}
    ids = sorted(initial)
    rng = random.Random(3)
    # Task i owns rows i, i + 20, ...: each row's events come in time order.
    plans = []
    for task in range(20):
        mine = ids[task::20]
        plan = []
        for step in range(250):
            kind = rng.choices(["retrieval", "useful", "wrong"], [0.5, 0.3, 0.2])[0]
            picks = rng.sample(mine, 2 if kind != "retrieval" and rng.random() < 0.3 else 1)
            plan.append((kind, picks, days(1) + timedelta(minutes=step * 20 + task)))
        plans.append(plan)

    async with ConfiguredEngine(settings) as engine:
        sweeping = True

        async def sweeps() -> int:
            count = 0
            while sweeping:  # before every event: refreshes, never prunes
                await engine.sweep(now=days(1))
                count += 1
            return count

        async def run(plan: list[tuple[str, list[uuid.UUID], datetime]]) -> None:
            for kind, picks, at in plan:
                if kind == "retrieval":
                    await engine.record_retrieval("episode", picks, now=at)
                else:
                    await engine.feedback("episode", picks, kind, now=at)
                await asyncio.sleep(0)

        sweeper = asyncio.create_task(sweeps())
        await asyncio.gather(*(run(plan) for plan in plans))
        await engine.ltp.drain(30)
        sweeping = False
        assert await sweeper > 0
        assert engine.ltp.stats.recorded == sum(len(p) for plan in plans for _, p, _ in plan)
        assert engine.ltp.stats.dropped == 0
    # The sequential computation, event after event.
    expected = {}
    for memory_id in ids:
        state = decay.MemoryState(strength=initial[memory_id], anchor_at=days(0),
                                  created_at=days(0))  # fmt: skip
        counts = {"retrieval": 0, "useful": 0, "wrong": 0}
        pruned = False
        events = sorted((at, kind) for plan in plans for kind, picks, at in plan
                        if memory_id in picks)  # fmt: skip
        for at, kind in events:
            if pruned:
                continue
            n = state.reinforcement
            if kind == "wrong":
                strength = decay.strength_at(state, at, p) * 0.5
                counts["wrong"] += 1
            else:
                strength = reference_decay.ltp_strength(state, at, p, 1.1, 1)
                n += reference_decay.spaced_gains(state, at, p, 1)
                counts[kind] += 1
            state = decay.MemoryState(strength=strength, anchor_at=at, created_at=days(0),
                                      reinforcement=n)  # fmt: skip
            pruned = kind == "wrong" and decay.is_pruned(decay.salience(state, at, p), p)
        expected[memory_id] = (state, counts, pruned)
    after = {r["id"]: r for r in await conn.fetch("SELECT * FROM episodic_traces")}
    assert sum(e[2] for e in expected.values()) > 0  # some were pruned by feedback
    for memory_id, (state, counts, pruned) in expected.items():
        got = after[memory_id]
        assert got["retrieval_count"] == counts["retrieval"] + counts["useful"]
        assert (got["useful_count"], got["wrong_count"]) == (counts["useful"], counts["wrong"])
        assert got["pruned"] == pruned
        assert got["strength"] == pytest.approx(state.strength, rel=1e-9)
        assert got["reinforcement"] == pytest.approx(state.reinforcement, rel=1e-9)
        assert got["anchor_at"] == state.anchor_at
