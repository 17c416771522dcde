"""The cluster `make citus` starts works: two active workers, a table distributed by a
column has rows on both, and pgvector's type and HNSW index work on a distributed table."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import asyncpg
import pytest

AGENTS = [f"agent-{i}" for i in range(40)]


@pytest.fixture
async def coordinator(citus_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(citus_url)
    schema = f"citus_smoke_{os.getpid()}"
    await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
    await conn.execute(f"SET search_path = {schema}, public; SET citus.shard_count = 8")
    try:
        yield conn
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


async def test_two_active_workers(coordinator: asyncpg.Connection) -> None:
    workers = await coordinator.fetch("SELECT * FROM citus_get_active_worker_nodes()")
    assert len(workers) == 2
    version = await coordinator.fetchval(
        "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
    )
    assert version.startswith("13.")


async def test_distributed_rows_on_both_workers(coordinator: asyncpg.Connection) -> None:
    await coordinator.execute(
        "CREATE TABLE memories (agent_id text NOT NULL, id bigint NOT NULL, content text,"
        " PRIMARY KEY (agent_id, id))"
    )
    await coordinator.execute("SELECT create_distributed_table('memories', 'agent_id')")
    await coordinator.executemany(
        "INSERT INTO memories VALUES ($1, $2, $3)",
        [(agent, i, f"{agent} says {i}") for agent in AGENTS for i in range(5)],
    )
    assert await coordinator.fetchval("SELECT count(*) FROM memories") == 5 * len(AGENTS)
    # Rows per worker, counted in the shards themselves.
    per_node = await coordinator.fetch(
        """
        SELECT s.nodeport, sum(r.result::bigint) AS rows
          FROM run_command_on_shards('memories', 'SELECT count(*) FROM %s') AS r
          JOIN citus_shards s ON s.shardid = r.shardid
         WHERE r.success
         GROUP BY s.nodeport
        """
    )
    rows = {r["nodeport"]: r["rows"] for r in per_node}
    workers = {
        r["node_port"]
        for r in await coordinator.fetch("SELECT node_port FROM citus_get_active_worker_nodes()")
    }
    assert set(rows) == workers
    assert all(n > 0 for n in rows.values())
    assert sum(rows.values()) == 5 * len(AGENTS)
    # One agent's statement is routed to one shard.
    plan = "\n".join(
        r[0]
        for r in await coordinator.fetch(
            "EXPLAIN SELECT * FROM memories WHERE agent_id = 'agent-7'"
        )
    )
    assert "Task Count: 1" in plan


async def test_pgvector_on_a_distributed_table(coordinator: asyncpg.Connection) -> None:
    await coordinator.execute(
        "CREATE TABLE vectors (agent_id text NOT NULL, id bigint NOT NULL,"
        " embedding vector(3) NOT NULL, PRIMARY KEY (agent_id, id))"
    )
    await coordinator.execute("SELECT create_distributed_table('vectors', 'agent_id')")
    await coordinator.execute(
        "CREATE INDEX vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops)"
    )
    await coordinator.executemany(
        "INSERT INTO vectors VALUES ($1, $2, $3::vector)",
        [(agent, i, f"[1, {i}, {n}]") for n, agent in enumerate(AGENTS) for i in range(5)],
    )
    # The index exists on every shard.
    indexed = await coordinator.fetchval(
        """
        SELECT count(*) FROM run_command_on_shards('vectors',
            $$SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'vectors_hnsw%%'
                 AND tablename = split_part('%s', '.', 2)$$)
         WHERE success AND result = '1'
        """
    )
    assert indexed == 8
    # One agent's nearest neighbours, routed to its shard.
    nearest = await coordinator.fetch(
        "SELECT id FROM vectors WHERE agent_id = 'agent-3'"
        " ORDER BY embedding <=> '[1, 4, 3]' LIMIT 2"
    )
    assert [r["id"] for r in nearest] == [4, 3]
    # Across every shard: distance order is merged on the coordinator.
    nearest = await coordinator.fetch(
        "SELECT agent_id, id FROM vectors ORDER BY embedding <-> '[1, 2, 39]' LIMIT 1"
    )
    assert (nearest[0]["agent_id"], nearest[0]["id"]) == ("agent-39", 2)


async def test_a_database_of_its_own(citus_database: str) -> None:
    conn = await asyncpg.connect(citus_database)
    try:
        assert await conn.fetchval("SELECT count(*) FROM citus_get_active_worker_nodes()") == 2
        await conn.execute("CREATE TABLE t (agent_id text, v vector(2))")
        await conn.execute("SELECT create_distributed_table('t', 'agent_id')")
        await conn.execute("INSERT INTO t VALUES ('a', '[1,2]'), ('b', '[3,4]')")
        assert await conn.fetchval("SELECT count(*) FROM t") == 2
    finally:
        await conn.close()
