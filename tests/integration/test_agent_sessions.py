"""Where a statement about agents' memories runs (StoreCore._agent_sessions): on one
server, one transaction for the sorted unique agents; an error in the work rolls its
transaction back at once, and a driver error there is translated like a statement's.
tests/citus/test_agent_sessions.py: one an agent on a cluster."""

from __future__ import annotations

import pytest

from ethos.db.store.core import Row, Transaction
from ethos.db.store.query import sql
from ethos.domain.errors import DatabaseError
from ethos.services.engine import Engine
from tests.conftest import DISTRIBUTED

pytestmark = pytest.mark.skipif(
    DISTRIBUTED, reason="one server's sessions: tests/citus/test_agent_sessions.py, a cluster's"
)

BACKEND = sql("SELECT pg_backend_pid(), txid_current()")
WRITE = sql("INSERT INTO ethos_agent_roles (role_name, agent_id) VALUES ('r', %(agent)s)")
WRITTEN = sql("SELECT count(*) FROM ethos_agent_roles WHERE agent_id = ANY (%(agents)s)")
OPEN = sql(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
)


async def test_one_server_runs_the_sorted_agents_in_one_transaction(engine: Engine) -> None:
    async def twice(group: list[str], tx: Transaction) -> tuple[list[str], Row, Row]:
        first, second = await tx.fetchrow(BACKEND), await tx.fetchrow(BACKEND)
        assert first is not None and second is not None
        return group, first, second

    seen = await engine.store._agent_sessions(["bob", "alice", "bob"], twice)
    assert [group for group, _, _ in seen] == [["alice", "bob"]]
    assert tuple(seen[0][1]) == tuple(seen[0][2])  # one connection, one transaction
    assert await engine.store._agent_sessions([], twice) == []


async def test_an_error_in_the_work_rolls_the_agents_transaction_back(engine: Engine) -> None:
    store = engine.store

    async def write(group: list[str], tx: Transaction) -> None:
        await tx.fetch(WRITE, agent=group[0])

    async def write_then_fail(group: list[str], tx: Transaction) -> None:
        await write(group, tx)
        raise RuntimeError("the work failed")

    async def write_then_break(group: list[str], tx: Transaction) -> None:
        await write(group, tx)
        await tx.fetch(sql("SELECT 1 / 0"))

    with pytest.raises(RuntimeError):
        await store._agent_sessions(["alice"], write_then_fail)
    with pytest.raises(DatabaseError, match="division by zero"):  # translated, not asyncpg's
        await store._agent_sessions(["alice"], write_then_break)
    assert await store._fetchval(OPEN) == 0  # rolled back at once, not left open
    assert await store._fetchval(WRITTEN, agents=["alice"]) == 0
    await store._agent_sessions(["alice"], write)
    assert await store._fetchval(WRITTEN, agents=["alice"]) == 1
