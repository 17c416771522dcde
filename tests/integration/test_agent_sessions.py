"""Where a statement about agents' memories runs (StoreCore._agent_sessions): on one
server, one transaction for the sorted unique agents; an error in the loop's body rolls
its transaction back. tests/citus/test_agent_sessions.py: one an agent on a cluster."""

from __future__ import annotations

import asyncio

import pytest

from ethos.db.store.query import sql
from ethos.services.engine import Engine

BACKEND = sql("SELECT pg_backend_pid(), txid_current()")
WRITE = sql("INSERT INTO ethos_agent_roles (role_name, agent_id) VALUES ('r', %(agent)s)")
WRITTEN = sql("SELECT count(*) FROM ethos_agent_roles WHERE agent_id = ANY (%(agents)s)")
OPEN = sql(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
)


async def test_one_server_runs_the_sorted_agents_in_one_transaction(engine: Engine) -> None:
    store = engine.store
    seen = [
        (group, tuple(await tx.fetchrow(BACKEND) or ()), tuple(await tx.fetchrow(BACKEND) or ()))
        async for group, tx in store._agent_sessions(["bob", "alice", "bob"])
    ]
    assert [group for group, _, _ in seen] == [["alice", "bob"]]
    assert seen[0][1] == seen[0][2]  # one connection, one transaction
    assert [s async for s in store._agent_sessions([])] == []


async def test_an_error_in_the_body_rolls_the_agents_transaction_back(engine: Engine) -> None:
    store = engine.store
    with pytest.raises(RuntimeError):
        async for group, tx in store._agent_sessions(["alice"]):
            await tx.fetch(WRITE, agent=group[0])
            raise RuntimeError("the body failed")
    for _ in range(100):  # the generator's close, a task the event loop runs next
        if not await store._fetchval(OPEN):
            break
        await asyncio.sleep(0.01)
    assert await store._fetchval(OPEN) == 0  # rolled back, not left open
    assert await store._fetchval(WRITTEN, agents=["alice"]) == 0
    async for group, tx in store._agent_sessions(["alice"]):
        await tx.fetch(WRITE, agent=group[0])
    assert await store._fetchval(WRITTEN, agents=["alice"]) == 1
