"""`ethos migrate` on a database already distributed (issue 40): a migration after
`ethos distribute` reaches every node. A database built by the migrations to 0047, then
distributed, cannot erase an agent (its statistics' trigger reads beside a distributed
table on a shard); `ethos migrate` to the head (0048 replaces that function) puts the
new function on the coordinator and on both workers, and the erase then runs. The queue,
keyed without the agent before 0057, stays on the coordinator until `ethos distribute`
runs again after the migration."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from ethos import db
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import cluster_nodes, distribute, with_database
from tests.conftest import Cli

ADD = "INSERT INTO semantic_facts (agent_id, content) VALUES ($1, $2)"


async def on_each_node(url: str, query: str, *args: Any) -> list[Any]:
    """`query`'s value on each node of the cluster (the coordinator first), in `url`'s
    database."""
    name = url.rsplit("/", 1)[1]
    found = []
    for host, port in await cluster_nodes(url):
        conn = await asyncpg.connect(with_database(f"postgresql://postgres@{host}:{port}", name))
        try:
            found.append(await conn.fetchval(query, *args))
        finally:
            await conn.close()
    return found


async def shard_triggers(url: str, name: str) -> int:
    """How many shards of the workers have a trigger `name` (Citus suffixes the shard's)."""
    query = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE $1 || '\\_%'"
    return sum((await on_each_node(url, query, name))[1:])


async def definitions(url: str) -> list[str]:
    """Each node's text of ethos_text_stats_add, the function migration 0048 replaces."""
    return await on_each_node(url, "SELECT pg_get_functiondef('ethos_text_stats_add'::regproc)")


async def test_a_migration_after_distribute_reaches_every_node(
    cli: Cli, citus_database: str
) -> None:
    settings = Settings(database=DatabaseSettings(url=citus_database))
    await asyncio.to_thread(db.migrate, settings, citus_database, "0047", from_baseline=True)
    await distribute(citus_database)
    conn = await asyncpg.connect(citus_database)
    try:
        for agent in "ab":
            await conn.execute(ADD, agent, f"{agent} fears storms")
        # The erase's hard delete, in SQL: today's ethos refuses a database at 0047 before
        # it deletes anything (its memory tables lack later columns).
        with pytest.raises(asyncpg.PostgresError, match="on a shard"):
            await conn.execute("DELETE FROM semantic_facts WHERE agent_id = $1", "a")
    finally:
        await conn.close()
    env = {"ETHOS_DATABASE__URL": citus_database}
    assert len({*await definitions(citus_database)}) == 1

    migrated = cli("migrate", env=env, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    after = await definitions(citus_database)
    assert len(after) == 3 and len(set(after)) == 1
    # a trigger a later migration makes reaches every shard (0051's on the hints; 0053's
    # on the memories, which keeps the statistics of the erase below)
    conn = await asyncpg.connect(citus_database)
    try:
        shards = await conn.fetchval(
            "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = $1::regclass",
            "episodic_traces_due",
        )
    finally:
        await conn.close()
    assert await shard_triggers(citus_database, "episodic_traces_due_made") == shards > 0
    assert await shard_triggers(citus_database, "episodic_traces_removed") == shards
    assert "agent_id = ANY (agents)" in after[0]
    # a table a later migration makes (0059's word_prior) is a reference table, seeded on
    # every node: the policy of a new memory reads it on its shard
    prior = "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'word_prior'::regclass"
    assert await on_each_node(citus_database, prior + " AND partmethod = 'n'") == [1, 1, 1]
    seeded = await on_each_node(citus_database, "SELECT count(*) FROM word_prior")
    assert len(set(seeded)) == 1 and seeded[0] > 0
    # the queue, keyed by its events' ids alone before 0057, stayed on the coordinator;
    # distributing again after the migration moves it
    queue = (
        "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'retrieval_queue'::regclass"
    )
    conn = await asyncpg.connect(citus_database)
    try:
        assert await conn.fetchval(queue) == 0
        await distribute(citus_database)
        assert await conn.fetchval(queue) == 1
    finally:
        await conn.close()
    erased = cli("erase", "--agent", "a", "--yes", env=env, timeout=300)
    assert erased.returncode == 0, erased.stderr
    conn = await asyncpg.connect(citus_database)
    try:
        assert await conn.fetchval("SELECT array_agg(agent_id) FROM semantic_facts") == ["b"]
        stats = "SELECT array_agg(DISTINCT agent_id) FROM lexeme_stats"
        assert await conn.fetchval(stats) == ["b"]
    finally:
        await conn.close()
