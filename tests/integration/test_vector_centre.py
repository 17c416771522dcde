"""Vector search centred on what an agent's memories share (migration 0030): the mean
direction of its vectors is kept by triggers and taken off the query, so a memory close
to everything (chatter) stops coming near every query."""

from __future__ import annotations

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, SearchSettings, Settings
from tests.conftest import DISTRIBUTED, WORDS_IGNORED, ConfiguredEngine, truncate
from tests.vectors import mix, unit

SHARED = unit(1)  # what every memory of the agent has in common (a speaker, a register)


async def conversation(engine: Engine) -> tuple[object, object]:
    """Twenty memories, each the shared direction and its own; and one that is the
    shared direction and little else (a greeting). The ids of the third and of that one."""
    ids = []
    for i in range(20):
        embedding = mix((1, SHARED), (0.8, unit(100 + i)))
        ids.append(
            await engine.add("vector", agent_id="a", content=f"turn {i}", embedding=embedding)
        )
    chatter = await engine.add("vector", agent_id="a", content="haha, nice!",
                               embedding=mix((1, SHARED), (0.1, unit(99))))  # fmt: skip
    return ids[3], chatter


def settings_with(database_url: str, centering: float) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(vector_centering=centering),
    )


async def test_the_centred_query_finds_the_particular_memory_over_the_chatter(
    database_url: str,
) -> None:
    # The query is mostly what every memory shares, a little of turn 3's own: by plain
    # cosine the chatter is nearest (0.98 against 0.89).
    query = mix((1, SHARED), (0.2, unit(103)))
    async with ConfiguredEngine(settings_with(database_url, 0.0)) as plain:
        target, chatter = await conversation(plain)
        [first] = await plain.nearest("a", query, k=1, record=False)
        assert first.id == chatter
        assert first.relevance == pytest.approx(first.similarity)
    async with ConfiguredEngine(settings_with(database_url, 1.0)) as centred:
        hits = await centred.nearest("a", query, k=2, record=False)
    assert [hit.id for hit in hits] == [target, chatter]
    # similarity stays the plain cosine; relevance, which the score is made of, is the
    # cosine to the centred query
    assert hits[0].similarity == pytest.approx(0.888, abs=0.01)
    assert hits[0].relevance is not None and hits[0].relevance < hits[0].similarity
    assert hits[0].score == pytest.approx(hits[0].relevance * (1 + 0.2 * hits[0].salience))


async def test_a_query_that_is_the_agents_mean_is_searched_as_it_is(engine: Engine) -> None:
    # One memory: the query equal to it is the mean itself, nothing would be left of it.
    only = await engine.add("vector", agent_id="a", content="one", embedding=unit(5))
    [hit] = await engine.nearest("a", unit(5), k=1, record=False)
    assert hit.id == only and hit.similarity == pytest.approx(1.0)
    assert hit.relevance == pytest.approx(1.0)


STATS = "SELECT vectors, total::real[] FROM agent_vector_stats WHERE agent_id = $1"
EXACT = """SELECT count(*), sum(l2_normalize(embedding))::real[] FROM memory_vectors
           WHERE agent_id = $1"""


async def assert_kept(conn: asyncpg.Connection, agent: str) -> None:
    kept, exact = await conn.fetchrow(STATS, agent), await conn.fetchrow(EXACT, agent)
    if exact[0] == 0:
        assert kept is None
        return
    assert kept[0] == exact[0]
    assert kept[1] == pytest.approx(exact[1], abs=1e-5)


async def test_the_mean_follows_inserts_updates_deletes_and_a_truncate(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    for i in range(5):  # not unit length: each counts at unit length
        await engine.add("vector", agent_id="a", content=f"a{i}",
                         embedding=[2 * x for x in unit(10 + i)])  # fmt: skip
    await engine.add("vector", agent_id="b", content="b0", embedding=unit(20))
    # plain SQL: several agents in one statement
    await conn.execute(
        """INSERT INTO memory_vectors (agent_id, content, embedding)
           SELECT agent, 'sql ' || agent || n, $1::vector
           FROM unnest('{a,b,c}'::text[]) AS agent, generate_series(1, 3) AS n""",
        str(unit(30)),
    )
    for agent in "abc":
        await assert_kept(conn, agent)
    await conn.execute(
        "UPDATE memory_vectors SET embedding = $1::vector WHERE content = 'a0'", str(unit(40))
    )
    if not DISTRIBUTED:  # Citus moves no row to another agent ("the partition value")
        await conn.execute("UPDATE memory_vectors SET agent_id = 'c' WHERE content = 'b0'")
    await conn.execute("UPDATE memory_vectors SET pruned = true WHERE content = 'a1'")
    for agent in "abc":
        await assert_kept(conn, agent)
    await conn.execute("DELETE FROM memory_vectors WHERE agent_id = 'c'")
    await conn.execute("DELETE FROM memory_vectors WHERE content LIKE 'a%'")
    for agent in "abc":
        await assert_kept(conn, agent)
    assert await conn.fetchval("SELECT count(*) FROM agent_vector_stats WHERE agent_id = 'c'") == 0
    await truncate(conn, "memory_vectors")
    assert await conn.fetchval("SELECT count(*) FROM agent_vector_stats") == 0


async def test_below_the_average_memory_the_more_salient_still_ranks_higher(
    engine: Engine,
) -> None:
    for i in range(10):
        await engine.add("vector", agent_id="a", content=f"other {i}", embedding=unit(200 + i))
    faint = await engine.add("vector", agent_id="a", content="faint", embedding=unit(300),
                             salience=0.3)  # fmt: skip
    vivid = await engine.add("vector", agent_id="a", content="vivid", embedding=unit(300),
                             salience=0.9)  # fmt: skip
    query = mix((1, unit(201)), (-0.5, unit(300)))  # away from the two
    hits = {hit.id: hit for hit in await engine.nearest("a", query, k=12, record=False)}
    assert hits[vivid].relevance == pytest.approx(hits[faint].relevance)
    assert hits[vivid].relevance is not None and hits[vivid].relevance < 0
    assert hits[vivid].score > hits[faint].score  # the prior divides a negative relevance
