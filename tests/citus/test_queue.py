"""The durable queue on a cluster under `ethos roles` (issue 40): the queue is distributed
by agent (migration 0057), and row security holds on its shards. Before, Citus wrote a
set of events into a distributed queue by COPY through the coordinator, which row
security refuses: every ethos_record_retrieval and durable buffer of a role failed, so
the queue stayed on the coordinator."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, LtpSettings, Settings
from tests.citus.cluster import DISTRIBUTED, Copy


@pytest.fixture
async def roles(cluster_copy: Copy) -> AsyncIterator[dict[str, str]]:
    """A distributed database with three episodes of alice's and of bob's, an app role
    and an agent role that speaks for alice: their URLs and the owner's."""
    name = f"queue_{os.getpid()}"
    app, agent = f"{name}_app", f"{name}_alice"
    citus_database = await cluster_copy(DISTRIBUTED)
    settings = Settings(database=DatabaseSettings(url=citus_database))
    async with Engine(settings, url=citus_database, check_settings=False) as owner:
        for who in ("alice", "bob"):
            for i in range(3):
                await owner.add("episode", agent_id=who, content=f"{who} sailed, day {i}")
        await owner.make_roles(app, f"{name}_eraser", [(agent, "alice")])
    as_role = citus_database.replace("postgresql://postgres", "postgresql://{}", 1)
    try:
        yield {"owner": citus_database, "app": as_role.format(app), "alice": as_role.format(agent)}
    finally:
        conn = await asyncpg.connect(citus_database)
        try:
            for role in (agent, f"{app}_agents", f"{name}_eraser", app):
                await conn.execute(f"DROP OWNED BY {role}")
                await conn.execute(f"DROP ROLE {role}")
        finally:
            await conn.close()


async def test_roles_queue_events_of_their_own_memories_on_the_cluster(
    roles: dict[str, str],
) -> None:
    owner = await asyncpg.connect(roles["owner"])
    try:
        ids = {
            who: [r["id"] for r in await owner.fetch(
                "SELECT id FROM episodic_traces WHERE agent_id = $1 ORDER BY id", who)]
            for who in ("alice", "bob")
        }  # fmt: skip
        distributed = "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = $1::regclass"
        assert await owner.fetchval(distributed, "retrieval_queue") == 1
        alice = await asyncpg.connect(roles["alice"])
        try:
            # the ids alice's role sees: bob's are left out
            record = "SELECT ethos_record_retrieval('episode', $1::uuid[])"
            assert await alice.fetchval(record, ids["alice"] + ids["bob"]) == 3
            insert = (
                "INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at)"
                " VALUES ($1, 'episodic_traces', $2, now())"
            )
            await alice.execute(insert, "alice", ids["alice"][0])
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
                await alice.execute(insert, "bob", ids["bob"][0])
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
                await alice.execute(insert, "alice", ids["bob"][0])  # not alice's memory
        finally:
            await alice.close()
        # the app's durable buffer writes its events into the queue, not its memory
        settings = Settings(
            database=DatabaseSettings(url=roles["app"]), ltp=LtpSettings(durable=True)
        )
        async with Engine(settings, drains_queue=True) as app:
            await app.record_retrieval("episode", ids["bob"][:2], agent="bob")
            assert (app.ltp.stats.queued, app.ltp.stats.recorded) == (2, 2)
            assert await owner.fetchval("SELECT count(*) FROM retrieval_queue") == 6
            assert await app.ltp.drain_queue()
        counts = (
            "SELECT array_agg(retrieval_count ORDER BY id) FROM episodic_traces WHERE agent_id = $1"
        )
        assert await owner.fetchval(counts, "alice") == [2, 1, 1]
        assert await owner.fetchval(counts, "bob") == [1, 1, 0]
        assert await owner.fetchval("SELECT count(*) FROM retrieval_queue") == 0
    finally:
        await owner.close()
