"""Moments from 1900 to 2199 and embeddings with a direction, whoever writes them: the
Python API and plain SQL alike; queued retrievals outside the window are kept aside."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from ethos.adapters.langgraph import AsyncEthosStore
from ethos.domain.errors import InputError
from ethos.services.engine import Engine
from ethos.settings import Settings


@pytest.mark.parametrize(
    "moment", [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)]
)
async def test_moments_at_the_ends_of_time_are_refused(
    engine: Engine, conn: asyncpg.Connection, moment: datetime
) -> None:
    with pytest.raises(InputError, match="ethos takes moments from 1900 to 2199"):
        await engine.add("episode", agent_id="a", content="x", created_at=moment)
    memory = await engine.add("fact", agent_id="a", content="y")
    with pytest.raises(InputError, match="ethos takes moments from 1900 to 2199"):
        await engine.record_retrieval("fact", [memory], now=moment)
    with pytest.raises(InputError, match="ethos takes moments from 1900 to 2199"):
        await engine.explain("fact", memory, now=moment)
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0


async def test_a_created_at_ahead_of_the_clock_is_refused_unless_allowed(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """A typo in created_at would make a memory that does not decay for years: over a
    minute ahead of the database's clock it is refused, unless allow_future says so."""
    ahead = datetime(2099, 1, 1, tzinfo=UTC)
    with pytest.raises(
        InputError, match=r"`created_at` 2099-01-01T00:00:00\+00:00 is [0-9.]+ years"
    ):
        await engine.add("episode", agent_id="a", content="x", created_at=ahead)
    with pytest.raises(InputError, match="ahead of the database's clock"):
        await engine.add_many("fact", agent_id="a", contents=["y", "z"], created_at=ahead)
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0
    assert await conn.fetchval("SELECT count(*) FROM semantic_facts") == 0
    soon = await engine.now() + timedelta(seconds=30)  # a clock a little ahead: taken
    await engine.add("episode", agent_id="a", content="soon", created_at=soon)
    meant = await engine.add(
        "episode", agent_id="a", content="meant", created_at=ahead, allow_future=True
    )
    assert (
        await conn.fetchval("SELECT created_at FROM episodic_traces WHERE id = $1", meant) == ahead
    )


async def test_an_item_ttl_past_the_calendar_is_refused(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """A LangGraph ttl whose expiry ethos cannot store: a one-line InputError naming it,
    and nothing written (it is not an OverflowError, nor the database's refusal)."""
    async with AsyncEthosStore(settings) as store:
        for ttl in (1e12, 1e8, math.inf, math.nan):
            with pytest.raises(InputError, match=f"bad ttl_minutes {ttl!r}"):
                await store.aput(("u",), "k", {"text": "forever"}, ttl=ttl)
        await store.aput(("u",), "k", {"text": "a year"}, ttl=525_600)
    assert await conn.fetchval("SELECT count(*) FROM semantic_facts") == 1


async def test_an_all_zero_embedding_is_refused(engine: Engine, conn: asyncpg.Connection) -> None:
    with pytest.raises(InputError, match="embedding is all zeros"):
        await engine.add("vector", agent_id="a", content="x", embedding=[0.0] * 384)
    assert await conn.fetchval("SELECT count(*) FROM memory_vectors") == 0


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO episodic_traces (agent_id, content, created_at)"
        " VALUES ('a', 'x', '-infinity')",
        "INSERT INTO semantic_facts (agent_id, content, expires_at) VALUES ('a', 'x', 'infinity')",
        "INSERT INTO memory_vectors (agent_id, content, embedding)"
        " SELECT 'a', 'x', array_fill(0, ARRAY[384])::vector",
        "SELECT ethos_record_retrieval('fact', ARRAY[ethos_uuid_v7()], '-infinity')",
        "SELECT ethos_record_retrieval('fact', ARRAY[ethos_uuid_v7()], now() + interval '1 day')",
    ],
)
async def test_plain_sql_gets_the_same_checks(conn: asyncpg.Connection, statement: str) -> None:
    with pytest.raises(
        asyncpg.PostgresError, match=r"outside 1900|all-zero|no direction|_1900_to_2199"
    ):
        await conn.execute(statement)
    for table in ("episodic_traces", "semantic_facts", "memory_vectors", "retrieval_queue"):
        assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0
