"""The vector of an episode or fact has no life of its own (migration 0031): it lives
while its source does, with its source's salience, and is pruned and recovered with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain.errors import DatabaseError
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from tests.vectors import unit

if TYPE_CHECKING:
    from tests.conftest import Days

STATE = "SELECT policy, pruned, prune_reason FROM memory_vectors WHERE id = $1"


async def test_a_used_episode_keeps_its_vector_searchable(engine: Engine, days: Days) -> None:
    # On its own curve (standard, ~21 days) the vector would be gone long before day
    # 60; the episode is used and lives on, so its vector does.
    episode = await engine.add("episode", agent_id="a", content="we met in Lisbon",
                               created_at=days(0), policy="standard")  # fmt: skip
    vector = await engine.add("vector", agent_id="a", content="we met in Lisbon",
                              embedding=unit(1), source_type="episode", source_id=episode,
                              created_at=days(0))  # fmt: skip
    for day in range(4, 60, 4):
        await engine.record_retrieval("episode", [episode], now=days(day))
    await engine.ltp.drain(5)
    report = await engine.sweep(now=days(60))
    assert report.totals()[2] == 0  # nothing pruned
    [hit] = await engine.nearest("a", unit(1), k=1, now=days(60), record=False)
    assert hit.id == vector and hit.source_id == episode
    [explained] = await engine.recall("a", "Lisbon", k=1, now=days(60), record=False)
    assert hit.salience == explained.salience  # the episode's, not the vector's


async def test_a_vector_is_pruned_and_recovered_with_its_source(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="the sky is green", created_at=days(0),
                            policy="standard")  # fmt: skip
    vector = await engine.add("vector", agent_id="a", content="the sky is green",
                              embedding=unit(2), source_type="fact", source_id=fact,
                              created_at=days(0))  # fmt: skip
    # below its threshold, not swept yet: its vector is not found either
    assert await engine.nearest("a", unit(2), k=1, now=days(40), record=False) == []
    await engine.sweep(now=days(40))
    assert tuple(await conn.fetchrow(STATE, vector)) == ("permanent", True, "decay")
    await engine.recover("fact", Selector(ids=(fact,)), now=days(41))
    assert tuple(await conn.fetchrow(STATE, vector)) == ("permanent", False, None)
    [hit] = await engine.nearest("a", unit(2), k=1, now=days(41), record=False)
    assert hit.id == vector
    await engine.forget("fact", [fact], now=days(42))
    assert tuple(await conn.fetchrow(STATE, vector)) == ("permanent", True, "manual")


async def test_a_vector_of_its_own_still_decays(engine: Engine, days: Days) -> None:
    await engine.add("vector", agent_id="a", content="mine", embedding=unit(3),
                     created_at=days(0), policy="standard")  # fmt: skip
    assert await engine.nearest("a", unit(3), k=1, now=days(40), record=False) == []


async def test_moving_a_sources_vector_is_refused_in_one_line(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    episode = await engine.add("episode", agent_id="a", content="e")
    vector = await engine.add("vector", agent_id="a", content="e", embedding=unit(4),
                              source_type="episode", source_id=episode)  # fmt: skip
    with pytest.raises(DatabaseError, match=r"follows its source \(episodic_traces .*\): move"):
        await engine.move("vector", vector, "long_term")
    assert await conn.fetchval("SELECT policy FROM memory_vectors WHERE id = $1", vector) == (
        "permanent"
    )
    await engine.move("episode", episode, "long_term")  # the source moves as any memory
