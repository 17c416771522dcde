"""No lock of one tenant holds another's work (issue 64, decision 0022): an agent role
may hold a row of its own in an open transaction for as long as it likes; LTP's flushes,
the queue's drain and the sweep skip that row instead of waiting on it, apply the other
agents' work at once, and apply the held agent's once the row is free, exactly once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

import asyncpg
import pytest

from ethos.domain.tables import table_spec
from ethos.services import ltp
from ethos.services.engine import Engine
from ethos.services.ltp_flush import Deferred, Events, apply_retrievals
from ethos.settings import DatabaseSettings, LtpSettings, Settings
from tests.integration.test_roles import AGENT, APP, House, as_sql, house

__all__ = ["house"]  # the module's database and roles, shared with test_roles

# Seconds within which work that skips a held row is done: the lock is held far longer.
PROMPTLY = 10
COUNT = "SELECT retrieval_count FROM episodic_traces WHERE id = $1"


@asynccontextmanager
async def held(house: House, memory: uuid.UUID) -> AsyncIterator[None]:
    """Agent a's own connection holds its memory's row in an open transaction, as a
    tenant with psql may: `begin; update ... set pinned = pinned; select pg_sleep(...)`."""
    conn = await asyncpg.connect(house.url(AGENT))
    transaction = conn.transaction()
    await transaction.start()
    try:
        await conn.execute("UPDATE episodic_traces SET pinned = pinned WHERE id = $1", memory)
        yield
    finally:
        await transaction.rollback()
        await conn.close()


def owner(house: House, **ltp_settings: object) -> Engine:
    settings = Settings(
        database=DatabaseSettings(url=house.owner_url),
        ltp=LtpSettings(**ltp_settings),  # type: ignore[arg-type]
    )
    return Engine(settings, drains_queue=True)


async def episodes(house: House, created_at: datetime | None = None) -> list[uuid.UUID]:
    """An episode of agent a (the one whose row gets held) and one of agent b."""
    async with owner(house) as engine:
        return [
            await engine.add(
                "episode", agent_id=agent, content=f"note {uuid.uuid4()}", created_at=created_at
            )
            for agent in ("a", "b")
        ]


async def count(house: House, memory: uuid.UUID) -> object:
    return await as_sql(house, APP, COUNT, memory)


async def test_a_held_row_holds_back_only_its_agents_queued_retrievals(house: House) -> None:
    """Before, the drain's lock statement waited on a's row: b's retrieval was not
    applied while the lock was held."""
    a, b = await episodes(house)
    for memory in (a, b):
        await as_sql(house, APP, "SELECT ethos_record_retrieval('episode', ARRAY[$1]::uuid[])",
                     memory)  # fmt: skip
    async with held(house, a), owner(house) as engine:
        async with asyncio.timeout(PROMPTLY):
            assert await engine.ltp.drain_queue()
        assert (await count(house, b), await count(house, a)) == (1, 0)
        assert set(engine.ltp.held.agents) == {"a"}
        queued = "SELECT agent_id FROM retrieval_queue WHERE memory_id = ANY($1::uuid[])"
        assert await as_sql(house, APP, queued, [a, b]) == "a"  # still queued, once
    for _ in range(2):  # the row is free: applied, and once only
        async with owner(house) as engine:
            assert await engine.ltp.drain_queue()
        assert (await count(house, b), await count(house, a)) == (1, 1)
    assert await as_sql(house, APP, "SELECT count(*) FROM retrieval_queue") == 0


async def test_a_held_row_holds_back_only_its_agents_buffered_retrievals(
    house: House, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTTP server's buffer: before, its flush waited on a's row (and b's retrieval
    with it) for as long as the lock was held."""
    a, b = await episodes(house)
    async with owner(house, flush_interval_seconds=3600) as engine:
        buffer = engine.ltp
        await engine.record_retrieval("episode", [a], agent="a")
        await engine.record_retrieval("episode", [b], agent="b")
        async with held(house, a):
            async with asyncio.timeout(PROMPTLY):
                assert await buffer.flush()
            assert (await count(house, b), await count(house, a)) == (1, 0)
            assert buffer.held.events.units == 1 and buffer.backlog == 1
            assert (buffer.stats.applied, buffer.stats.held) == (1, 1)
        monkeypatch.setattr(ltp, "HELD_RETRY_SECONDS", 0.0)
        buffer.held.retry_at = 0.0
        for _ in range(2):
            assert await buffer.flush()
            assert (await count(house, b), await count(house, a)) == (1, 1)
        assert (buffer.stats.applied, buffer.backlog, buffer.held.since) == (2, 0, None)


async def test_events_held_at_close_go_to_the_queue(house: House) -> None:
    """A buffer that closes while a's row is still held leaves a's events queued for the
    daemon, not dropped."""
    a, _ = await episodes(house)
    async with held(house, a):
        async with owner(house, flush_interval_seconds=3600, close_timeout_seconds=0.2) as engine:
            await engine.record_retrieval("episode", [a, a], agent="a")
        assert (engine.ltp.stats.queued, engine.ltp.stats.dropped) == (2, 0)
        assert await count(house, a) == 0
    async with owner(house) as engine:
        assert await engine.ltp.drain_queue()
    assert await count(house, a) == 2


async def test_a_flush_retried_after_an_in_doubt_commit_leaves_the_held_part(house: House) -> None:
    """The flush's receipt says it was applied; what it left for later (a's, held) is
    what the retry leaves too: neither lost nor applied twice."""
    a, b = await episodes(house)
    spec = table_spec("episodic_traces")
    at = datetime.now().astimezone() - timedelta(seconds=1)
    pending = {(spec, memory, agent): {at: Events(retrievals=1, units=1)}
               for memory, agent in ((a, "a"), (b, "b"))}  # fmt: skip
    flush_id, deferred = uuid.uuid4(), Deferred()
    async with owner(house) as engine, held(house, a):
        first = await apply_retrievals(engine.store, pending, flush_id, (), deferred)
        again = await apply_retrievals(engine.store, pending, flush_id, (), deferred)
    assert (first.applied, first.held, first.replayed) == (1, 1, False)
    assert (again.applied, again.held, again.replayed) == (1, 1, True)
    assert list(deferred.pending) == [(spec, a, "a")]
    assert (await count(house, b), await count(house, a)) == (1, 0)


async def test_a_sweep_skips_a_held_row_and_the_next_one_writes_it(
    house: House, t0: datetime
) -> None:
    """Before, the sweep's batch waited on a's row until the lock was released."""
    a, b = await episodes(house, created_at=t0)
    first, second = t0 + timedelta(days=1), t0 + timedelta(days=2)
    scheduled = "SELECT due_at > $2 FROM episodic_traces WHERE id = $1"
    async with owner(house) as engine:
        async with held(house, a):
            async with asyncio.timeout(PROMPTLY):
                report = await engine.sweep(now=first, tables=["episode"])
            assert report.tables["episodic_traces"].held == 1
            assert await as_sql(house, APP, scheduled, b, first)
            assert not await as_sql(house, APP, scheduled, a, first)
        later = await engine.sweep(now=second, tables=["episode"])
    assert later.tables["episodic_traces"].held == 0
    assert await as_sql(house, APP, scheduled, a, second)


# --- a batch fails only the callers whose operations fail -------------------------------


async def test_a_refused_link_takes_no_event_from_the_flush(house: House) -> None:
    """Before, a link the database refused failed the whole flush for good: every
    caller's events in it were dropped."""
    a1, a2, b = [await fact_of(house, agent) for agent in ("a", "a", "b")]
    conn = await asyncpg.connect(house.owner_url)
    await conn.execute("SET citus.enable_unsafe_triggers = on")  # distributed; else a no-op
    await conn.execute("""
        CREATE FUNCTION refuse_link() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'link refused for the test'; END $$""")
    await conn.execute("""
        CREATE TRIGGER refuse_link BEFORE INSERT OR UPDATE ON memory_links FOR EACH ROW
            WHEN (NEW.agent_id = 'a') EXECUTE FUNCTION refuse_link()""")
    try:
        async with owner(house, flush_interval_seconds=3600) as engine:
            await engine.feedback("fact", [a1, a2], "useful", agent="a")
            await engine.record_retrieval("fact", [b], agent="b")
            assert await engine.ltp.flush()
            stats = engine.ltp.stats
    finally:
        await conn.execute("DROP TRIGGER refuse_link ON memory_links")
        await conn.execute("DROP FUNCTION refuse_link()")
        await conn.close()
    assert (stats.applied, stats.dropped) == (3, 1)  # the pair's link alone
    facts = "SELECT array_agg(retrieval_count ORDER BY id) FROM semantic_facts WHERE id = ANY($1)"
    assert await as_sql(house, APP, facts, sorted([a1, a2, b])) == [1, 1, 1]


async def fact_of(house: House, agent: str) -> uuid.UUID:
    async with owner(house) as engine:
        return await engine.add("fact", agent_id=agent, content=f"fact {uuid.uuid4()}")
