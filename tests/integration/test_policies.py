"""Decay policies on a real PostgreSQL: lifetimes to the second, never-decaying
memories, promotion by retrieval, per-agent domains, importance at write, moves."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest
from structlog.testing import capture_logs

from ethos.domain import decay
from ethos.domain.errors import InputError, NotFoundError
from ethos.domain.explain import memory_state
from ethos.domain.tables import EPISODES
from ethos.services.engine import Engine
from ethos.settings import (
    DatabaseSettings,
    ImportanceSettings,
    PolicySettings,
    SearchSettings,
    Settings,
)
from tests import reference_decay
from tests.conftest import ConfiguredEngine, near

if TYPE_CHECKING:
    from tests.conftest import Days

SECOND = timedelta(seconds=1)


async def fetch(conn: asyncpg.Connection, table: str, memory_id: object) -> asyncpg.Record:
    return await conn.fetchrow(f"SELECT * FROM {table} WHERE id = $1", memory_id)


@pytest.mark.parametrize(
    ("policy", "lifetime"), [("working", timedelta(hours=8)), ("long_term", timedelta(days=365))]
)
async def test_a_plain_memory_is_pruned_at_its_policys_lifetime(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, policy: str, lifetime: timedelta
) -> None:
    memory = await engine.add("episode", agent_id="a", content="x", created_at=t0, policy=policy)
    info = await engine.explain("episode", memory, now=t0)
    assert info.policy == policy and info.curve == "exponential"
    assert abs(info.prunes_at - (t0 + lifetime)) <= SECOND
    alive = await engine.sweep(now=t0 + lifetime - SECOND)
    assert alive.tables["episodic_traces"].pruned == 0
    gone = await engine.sweep(now=t0 + lifetime + SECOND)
    assert gone.tables["episodic_traces"].pruned == 1
    row = await fetch(conn, "episodic_traces", memory)
    assert (row["pruned"], row["prune_reason"]) == (True, "decay")


async def test_a_permanent_memory_never_decays(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    memory = await engine.add(
        "fact", agent_id="a", content="x", created_at=t0, policy="permanent", salience=0.3,
        confidence=0.2,
    )  # fmt: skip
    far = t0 + timedelta(days=365 * 100)
    report = await engine.sweep(now=far)
    assert report.tables["semantic_facts"].pruned == 0
    info = await engine.explain("fact", memory, now=far)
    assert (info.salience, info.confidence, info.prunes_at) == (0.3, 0.2, None)
    assert info.never_decays and not info.pinned
    assert await conn.fetchval("SELECT count(*) FROM ethos_at_risk") == 0


async def test_the_third_retrieval_promotes_a_working_memory_continuously(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    memory = await engine.add(
        "episode", agent_id="a", content="x", created_at=t0, policy="working", emotional_tone=0.5
    )
    moments = [t0 + timedelta(hours=h) for h in (1, 2, 3)]
    for at in moments[:2]:
        await engine.record_retrieval("episode", [memory], now=at)
    await engine.ltp.drain(5)
    assert (await fetch(conn, "episodic_traces", memory))["policy"] == "working"
    # Where the third retrieval leaves the memory on the working curve...
    row = await fetch(conn, "episodic_traces", memory)
    working = engine.settings.policy("working").params
    state = memory_state(EPISODES, row)
    strength = reference_decay.ltp_strength(state, moments[2], working, 1.1, 1)
    n = state.reinforcement + reference_decay.spaced_gains(state, moments[2], working, 1)
    after = decay.MemoryState(
        strength=strength, anchor_at=moments[2], created_at=t0, reinforcement=n, emotion=0.5
    )
    on_working = decay.salience(after, moments[2], working)
    await engine.record_retrieval("episode", [memory], now=moments[2])
    await engine.ltp.drain(5)
    assert engine.ltp.stats.promoted == 1
    row = await fetch(conn, "episodic_traces", memory)
    assert (row["policy"], row["retrieval_count"], row["anchor_at"]) == ("standard", 3, moments[2])
    assert row["strength"] == pytest.approx(strength, rel=1e-12)
    # ... is where it starts on the standard curve: salience is continuous.
    info = await engine.explain("episode", memory, now=moments[2])
    assert info.policy == "standard"
    assert info.salience == pytest.approx(on_working, rel=1e-12)
    assert row["salience"] == pytest.approx(on_working, rel=1e-12)
    # And it goes on at standard's pace (τ 7 × 1.5³ days), not working's.
    later = moments[2] + timedelta(days=3)
    standard = engine.settings.policy("standard").params
    expected = decay.salience(memory_state(EPISODES, row), later, standard)
    assert (await engine.explain("episode", memory, now=later)).salience == pytest.approx(
        expected, rel=1e-12
    )
    assert expected > 0.5


async def test_one_coalesced_write_can_cross_the_promotion(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    fact = await engine.add(
        "fact", agent_id="a", content="x", created_at=t0, policy="working", confidence=0.5
    )
    await engine.record_retrieval("fact", [fact] * 4, now=t0 + timedelta(hours=1))
    await engine.ltp.drain(5)
    row = await fetch(conn, "semantic_facts", fact)
    assert (row["policy"], row["retrieval_count"]) == ("standard", 4)
    info = await engine.explain("fact", fact, now=t0 + timedelta(hours=1))
    assert row["confidence"] == pytest.approx(info.confidence, rel=1e-12)


async def test_promotion_follows_a_chain(database_url: str, conn: asyncpg.Connection) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        policies={"standard": PolicySettings(promote_after=5, promote_to="long_term")},
    )
    async with ConfiguredEngine(settings) as engine:
        memory = await engine.add("episode", agent_id="a", content="x", policy="working")
        await engine.record_retrieval("episode", [memory] * 6)
        await engine.ltp.drain(5)
    assert (await fetch(conn, "episodic_traces", memory))["policy"] == "long_term"


async def test_an_agents_domain_applies_to_plain_sql_inserts(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    # The agent's policy comes before automatic importance (on by default), which tiers
    # a memory of one word `working`.
    await engine.assign_policy("goldfish", "long_term")
    assert await engine.policy_agents("long_term") == ["goldfish"]
    rows = await conn.fetch(
        """INSERT INTO episodic_traces (agent_id, content)
           VALUES ('goldfish', 'a'), ('elephant', 'b')
           RETURNING agent_id, policy, auto_importance IS NOT NULL AS measured"""
    )
    assert {r["agent_id"]: (r["policy"], r["measured"]) for r in rows} == {
        "goldfish": ("long_term", False),
        "elephant": ("working", True),
    }
    named = await conn.fetchval(
        "INSERT INTO semantic_facts (agent_id, content, policy) VALUES ('goldfish', 'c',"
        " 'long_term') RETURNING policy"
    )
    assert named == "long_term"  # a policy given wins
    assert await engine.unassign_policy("goldfish") == "long_term"
    assert await engine.unassign_policy("goldfish") is None
    later = await conn.fetchval(
        "INSERT INTO episodic_traces (agent_id, content) VALUES ('goldfish', 'd') RETURNING policy"
    )
    assert later == "working"  # its words, as any agent's without a policy


@pytest.mark.parametrize(
    ("importance", "policy"), [(0.95, "long_term"), (0.7, "long_term"), (0.69, "standard"),
                               (0.6, "standard"), (0.59, "working"), (0.0, "working")],
)  # fmt: skip
async def test_importance_at_write_picks_a_policy(
    engine: Engine, conn: asyncpg.Connection, importance: float, policy: str
) -> None:
    await engine.assign_policy("a", "permanent")  # importance comes before the agent's
    memory = await engine.add("episode", agent_id="a", content="x", importance=importance)
    row = await fetch(conn, "episodic_traces", memory)
    assert (row["policy"], row["importance"]) == (policy, importance)
    plain = await conn.fetchval(
        "INSERT INTO semantic_facts (agent_id, content, importance) VALUES ('a', 'y', $1)"
        " RETURNING policy",
        importance,
    )
    assert plain == policy


async def test_moving_a_memory_reanchors_its_curve(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="x", created_at=t0, confidence=0.8,
                            policy="standard")  # fmt: skip
    before = await engine.explain("fact", fact, now=days(5))
    moved = await engine.move("fact", fact, "long_term", now=days(5))
    assert (moved.old_policy, moved.policy) == ("standard", "long_term")
    after = await engine.explain("fact", fact, now=days(5))
    assert after.policy == "long_term" and after.anchor_at == days(5)
    assert after.salience == pytest.approx(before.salience, rel=1e-12)
    assert after.confidence == pytest.approx(before.confidence, rel=1e-12)
    later = await engine.explain("fact", fact, now=days(40))
    assert not later.pruned and later.salience > 0.15  # standard's: 0.003, pruned
    with pytest.raises(InputError, match="unknown policy 'eternal'"):
        await engine.move("fact", fact, "eternal")
    with pytest.raises(NotFoundError, match="no semantic_facts row"):
        await engine.move("fact", "00000000-0000-0000-0000-000000000001", "working")
    await engine.sweep(now=days(400))
    with pytest.raises(InputError, match="is pruned: recover it first"):
        await engine.move("fact", fact, "working", now=days(400))


async def test_bad_input_changes_nothing(engine: Engine, conn: asyncpg.Connection) -> None:
    with pytest.raises(InputError, match="unknown policy 'nope': use one of long_term, "):
        await engine.add("episode", agent_id="a", content="x", policy="nope")
    with pytest.raises(InputError, match=r"importance must be between 0 and 1 \(got 1.5\)"):
        await engine.add("episode", agent_id="a", content="x", importance=1.5)
    with pytest.raises(InputError, match="unknown policy"):
        await engine.assign_policy("a", "nope")
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0
    assert await conn.fetchval("SELECT count(*) FROM agent_policies") == 0


async def test_applied_policies_are_written_and_edits_apply(
    database_url: str, conn: asyncpg.Connection, t0: datetime
) -> None:
    async with ConfiguredEngine(Settings(database=DatabaseSettings(url=database_url))) as engine:
        memory = await engine.add("episode", agent_id="a", content="x", created_at=t0,
                                  policy="working")  # fmt: skip
        first = await engine.explain("episode", memory, now=t0)
    rows = {r["name"]: r for r in await conn.fetch("SELECT * FROM decay_policies")}
    # the shipped policies, as `ethos migrate` applied them to the template
    assert set(rows) == {"standard", "working", "long_term", "permanent"}
    assert rows["working"]["lifetime_days"] == pytest.approx(1 / 3)
    assert (rows["working"]["promotion_counts"], rows["working"]["promotion_targets"]) == (
        [3],
        ["standard"],
    )
    changed_at = rows["working"]["changed_at"]
    edited = Settings(
        database=DatabaseSettings(url=database_url),
        policies={
            "working": PolicySettings(lifetime="4h"),
            "scratch": PolicySettings(lifetime="1h"),
        },
    )
    async with ConfiguredEngine(edited) as engine:
        second = await engine.explain("episode", memory, now=t0)
        policies = {p.name for p in await engine.policies()}
    assert near(second.prunes_at - t0, timedelta(hours=4), SECOND)
    assert near(first.prunes_at - t0, timedelta(hours=8), SECOND)
    assert policies == {"standard", "working", "long_term", "permanent", "scratch"}
    rows = {r["name"]: r for r in await conn.fetch("SELECT * FROM decay_policies")}
    assert rows["working"]["changed_at"] > changed_at
    assert rows["long_term"]["changed_at"] < rows["working"]["changed_at"]  # untouched
    # Back to the settings without `scratch`: kept, marked as gone from the settings.
    async with ConfiguredEngine(Settings(database=DatabaseSettings(url=database_url))):
        pass
    configured = dict(await conn.fetch("SELECT name, configured FROM decay_policies"))
    assert configured["scratch"] is False and configured["working"] is True


async def test_an_engine_of_other_settings_says_so_and_writes_nothing(
    database_url: str, conn: asyncpg.Connection
) -> None:
    """The database is shared: a process with another file must not undo the settings
    it holds (a text_config would re-stem every memory). It names the keys that differ
    and the command that writes them, in one line."""
    first = Settings(
        database=DatabaseSettings(url=database_url),
        policies={"working": PolicySettings(lifetime="4h")},
        importance=ImportanceSettings(auto=False),
        search=SearchSettings(text_config="simple"),
    )
    async with ConfiguredEngine(first):
        pass
    held = await conn.fetchrow("SELECT * FROM ethos_settings")
    lifetime = "SELECT lifetime_days FROM decay_policies WHERE name = 'working'"
    working = await conn.fetchval(lifetime)
    with capture_logs() as logs:
        async with Engine(Settings(database=DatabaseSettings(url=database_url))) as engine:
            differences = await engine.apply_settings(dry_run=True)
    warned = [event for event in logs if event["event"] == "settings_not_applied"]
    assert len(warned) == 1
    keys = ["search.text_config", "importance.auto", "policies.working"]
    assert warned[0]["keys"] == keys and warned[0]["apply"] == "ethos settings apply"
    assert [d.key for d in differences] == keys
    assert differences[1].database is False and differences[1].settings is True
    assert await conn.fetchrow("SELECT * FROM ethos_settings") == held
    assert held["text_config"] == "simple" and held["auto_importance"] is False
    assert await conn.fetchval(lifetime) == working == pytest.approx(4 / 24)
    async with Engine(first) as engine:  # the same settings: nothing to say
        assert await engine.apply_settings(dry_run=True) == []


async def test_stats_and_views_by_policy(engine: Engine, conn: asyncpg.Connection, t0: datetime,
                                         days: Days) -> None:  # fmt: skip
    for policy in ("working", "working", "long_term"):
        await engine.add("episode", agent_id="a", content="x", created_at=t0, policy=policy)
    await engine.add("fact", agent_id="b", content="y", created_at=t0, policy="permanent")
    await engine.sweep(now=days(1))
    view = {
        (r["table_name"], r["policy"]): (r["live"], r["pruned"])
        for r in await conn.fetch("SELECT * FROM ethos_policy_counts")
    }
    assert view == {
        ("episodic_traces", "working"): (0, 2),
        ("episodic_traces", "long_term"): (1, 0),
        ("semantic_facts", "permanent"): (1, 0),
    }
    stats = await engine.stats("a")
    assert [(r["table_name"], r["policy"], r["live"], r["pruned"]) for r in stats.policies] == [
        ("episodic_traces", "long_term", 1, 0),
        ("episodic_traces", "working", 0, 2),
    ]
    long_term = engine.settings.policy("long_term").params
    expected = decay.salience(
        decay.MemoryState(strength=1.0, anchor_at=t0, created_at=t0), days(1), long_term
    )
    assert stats.policies[0]["avg_salience"] == pytest.approx(expected, rel=0.01)


async def test_recovered_memory_keeps_its_policy(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    from ethos.services.recovery import Selector

    memory = await engine.add("episode", agent_id="a", content="x", created_at=t0,
                              policy="long_term")  # fmt: skip
    await engine.sweep(now=days(400))
    await engine.recover("episode", Selector(ids=(memory,)), now=days(400))
    row = await fetch(conn, "episodic_traces", memory)
    assert (row["pruned"], row["policy"], row["strength"]) == (False, "long_term", 0.1)
