"""Where a statement about agents' memories runs on a distributed cluster
(StoreCore._agent_sessions): one transaction an agent, in sorted order, each on the node
holding the agent's shard group and against its shards, so a statement written as one
server would write it reads the agent's own rows there."""

from __future__ import annotations

import asyncpg

from ethos.db.store.core import SHARD_GROUPS, Row, Transaction
from ethos.db.store.query import sql
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import MEMORIES_DISTRIBUTED, Copy

WHERE = sql(
    "SELECT inet_server_port() AS port, txid_current() AS tx,"
    " (SELECT count(*) FROM episodic_traces WHERE agent_id = ANY (%(agents)s)) AS held"
)


async def test_one_transaction_an_agent_on_its_node(cluster_copy: Copy) -> None:
    url = await cluster_copy(MEMORIES_DISTRIBUTED)
    conn = await asyncpg.connect(url)
    try:
        held = dict(await conn.fetch(
            "SELECT agent_id, count(*) FROM episodic_traces GROUP BY agent_id"
        ))  # fmt: skip
        nodes = {
            agent: (await conn.fetchrow(SHARD_GROUPS.text, agent) or {})["port"]
            for agent in ("alice", "bob", "carol")
        }
    finally:
        await conn.close()
    settings = Settings(database=DatabaseSettings(url=url))
    async with Engine(settings, url=url, check_settings=False) as engine:

        async def where(group: list[str], tx: Transaction) -> tuple[list[str], Row | None]:
            return group, await tx.fetchrow(WHERE, agents=group)

        seen = await engine.store._agent_sessions(["carol", "alice", "bob", "alice"], where)
    assert [group for group, _ in seen] == [["alice"], ["bob"], ["carol"]]
    for (agent,), row in seen:
        assert row is not None
        assert row["port"] == nodes[agent]  # on the agent's node, not the coordinator
        assert row["held"] == held[agent]  # its shard's rows: the agent's own
    assert len({row["tx"] for _, row in seen if row is not None}) == 3
