"""Moments from 1900 to 2199 and embeddings with a direction, whoever writes them: the
Python API and plain SQL alike; queued retrievals outside the window are kept aside."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg
import pytest

from ethos import db
from ethos.engine import Engine
from ethos.errors import InputError
from ethos.settings import DatabaseSettings, Settings


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


async def test_queued_retrievals_outside_the_window_move_to_dead_letters(
    database_url: str, conn: asyncpg.Connection
) -> None:
    settings = Settings()
    await asyncio.to_thread(db.downgrade, settings, database_url, "0018")
    await conn.execute(
        "INSERT INTO retrieval_queue (table_name, memory_id, at) VALUES"
        " ('semantic_facts', ethos_uuid_v7(), '-infinity'),"
        " ('semantic_facts', ethos_uuid_v7(), '2026-01-01')"
    )
    await asyncio.to_thread(db.migrate, settings, database_url)
    assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 1
    dead = await conn.fetchrow("SELECT at, reason FROM retrieval_dead_letters")
    assert dead["reason"] == "moment outside 1900..2199"
    async with Engine(Settings(database=DatabaseSettings(url=database_url))) as engine:
        status = await engine.status(alive_seconds=30)
    assert status.retrieval_dead_letters == 1
