"""The vector of an episode or fact has no life of its own (migration 0031): it lives
while its source does, with its source's salience, and is pruned and recovered with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain.errors import DatabaseError
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from tests.conftest import DISTRIBUTED
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


async def test_one_statement_prunes_and_recovers_its_sources_vectors_at_once(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Plain SQL that prunes some facts, recovers others and leaves the rest, for two
    agents: each vector follows its own source, in one call of the trigger."""
    vectors: dict[tuple[str, int], object] = {}
    for agent in ("a", "b"):
        for n in range(6):
            fact = await engine.add("fact", agent_id=agent, content=f"fact {n} of {agent}")
            vectors[agent, n] = await engine.add(
                "vector", agent_id=agent, content=f"fact {n}", embedding=unit(n + 1),
                source_type="fact", source_id=fact,
            )  # fmt: skip
    # facts 4 and 5 start pruned; the statement recovers 4 and 5, prunes 0 and 1, keeps 2, 3
    await conn.execute(
        """UPDATE semantic_facts SET pruned = true, pruned_at = now(), prune_reason = 'manual'
           WHERE content LIKE 'fact 4 %' OR content LIKE 'fact 5 %'"""
    )
    async with conn.transaction():
        await conn.execute("SET LOCAL track_functions = 'pl'")
        await conn.execute(
            """UPDATE semantic_facts
               SET pruned = NOT pruned,
                   pruned_at = CASE WHEN pruned THEN NULL ELSE $1::timestamptz END,
                   prune_reason = CASE WHEN pruned THEN NULL ELSE 'decay' END
               WHERE content ~ '^fact [0145] '""",
            await conn.fetchval("SELECT now()"),
        )
        calls = await conn.fetchval(
            "SELECT pg_stat_get_xact_function_calls('ethos_source_pruned'::regproc)"
        )
    if not DISTRIBUTED:  # (on a cluster it runs on the shards' nodes, once a shard)
        assert calls == 1  # row by row, once a fact whose pruned changed: 8
    states = {key: tuple(await conn.fetchrow(STATE, vector)) for key, vector in vectors.items()}
    for agent in ("a", "b"):
        assert [states[agent, n][1:] for n in range(6)] == [
            (True, "decay"), (True, "decay"), (False, None), (False, None),
            (False, None), (False, None),
        ]  # fmt: skip


async def test_a_sources_vector_is_never_due_and_has_no_words(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    """It follows its source: a sweep never looks at it (no hint, never written by one),
    and text recall never reads it, so it carries no words; made a vector of its own
    (plain SQL), it gets its words and its share of the text statistics."""
    fact = await engine.add("fact", agent_id="a", content="the owl hunts at night",
                            created_at=days(0), policy="standard")  # fmt: skip
    sourced = await engine.add("vector", agent_id="a", content="the owl hunts at night",
                               embedding=unit(5), source_type="fact", source_id=fact,
                               created_at=days(0))  # fmt: skip
    own = await engine.add("vector", agent_id="a", content="the owl sleeps by day",
                           embedding=unit(6), created_at=days(0), policy="standard")  # fmt: skip
    row = """SELECT due_at, prune_at, content_tsv::text AS words, xmin::text
             FROM memory_vectors WHERE id = $1"""
    hinted = "SELECT count(*) FROM memory_vectors_due WHERE $1 = ANY (ids)"
    before = await conn.fetchrow(row, sourced)
    assert (before["due_at"], before["prune_at"], before["words"]) == (None, None, "")
    assert await conn.fetchval(hinted, sourced) == 0
    assert await conn.fetchval(hinted, own) == 2  # looked at at once, for both kinds
    assert "'owl'" in (await conn.fetchrow(row, own))["words"]
    await engine.sweep(now=days(1))
    await engine.sweep(now=days(2), mode="full")
    assert (await conn.fetchrow(row, sourced))["xmin"] == before["xmin"]  # never written
    assert (await conn.fetchrow(row, own))["due_at"] is not None  # scheduled by the sweep
    docs = "SELECT docs FROM lexeme_stats WHERE agent_id = 'a' AND lexeme = 'hunt'"
    assert await conn.fetchval(docs) == 1  # the fact's words alone
    await conn.execute(
        "UPDATE memory_vectors SET source_type = NULL, source_id = NULL WHERE id = $1", sourced
    )
    assert "'hunt'" in (await conn.fetchrow(row, sourced))["words"]
    assert await conn.fetchval(docs) == 2
