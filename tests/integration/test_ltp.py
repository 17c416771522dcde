"""Retrieval and long-term potentiation on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos import db
from ethos.db.store import LtpFlush, Store
from ethos.domain import decay
from ethos.domain.errors import DatabaseError, InputError
from ethos.domain.explain import memory_state
from ethos.domain.tables import EPISODES
from ethos.services.engine import Engine
from ethos.services.ltp import LtpBuffer
from ethos.services.ltp_flush import Events, Pending, apply_retrievals
from ethos.settings import DatabaseSettings, LtpSettings, SearchSettings, Settings
from tests import reference_decay
from tests.conftest import DISTRIBUTED, WORDS_IGNORED, ConfiguredEngine
from tests.vectors import at_cosine, mix, search_plan, unit

if TYPE_CHECKING:
    from tests.conftest import Cli, Days


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Plain memories on the standard curve: their words do not tier them."""
    return Settings(database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED)


async def fetch(conn: asyncpg.Connection, table: str, memory_id: uuid.UUID) -> asyncpg.Record:
    return await conn.fetchrow(f"SELECT * FROM {table} WHERE id = $1", memory_id)


async def test_ltp_rules_per_table(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    p = engine.settings.decay_params
    episode = await engine.add("episode", agent_id="a", content="e", created_at=t0, salience=0.5,
                               embedding=unit(1))  # fmt: skip
    fact = await engine.add(
        "fact", agent_id="a", content="f", created_at=t0, salience=0.5, confidence=0.5
    )
    await engine.record_retrieval("episode", [episode], now=days(2))
    await engine.record_retrieval("fact", [fact, fact], now=days(2))
    [hit] = await engine.nearest("a", unit(1), k=1, now=days(3))  # its embedding's hit
    assert hit.id == episode
    await engine.ltp.drain(5)
    decayed_2 = 0.5 * math.exp(-2 / 7)
    created = decay.MemoryState(strength=0.5, anchor_at=t0, created_at=t0)

    e = await fetch(conn, "episodic_traces", episode)
    # the episode: its own retrieval at day 2 (the first: it gives back what the memory
    # lost), then again through its vector at day 3 (a day after: it gives back a share)
    own = decay.MemoryState(
        strength=reference_decay.ltp_strength(created, days(2), p, 1.1, 1), anchor_at=days(2),
        created_at=t0, reinforcement=reference_decay.spaced_gains(created, days(2), p, 1),
    )  # fmt: skip
    through_vector = reference_decay.ltp_strength(own, days(3), p, 1.1, 1)
    assert own.strength == pytest.approx(0.55) and through_vector < own.strength * 1.1
    assert e["strength"] == pytest.approx(through_vector, rel=1e-9)
    n = own.reinforcement + reference_decay.spaced_gains(own, days(3), p, 1)
    assert e["reinforcement"] == pytest.approx(n, rel=1e-9) and 1.1 < n < 2
    assert (e["retrieval_count"], e["anchor_at"], e["last_retrieved_at"]) == (2, days(3), days(3))
    f = await fetch(conn, "semantic_facts", fact)
    assert f["retrieval_count"] == 2
    assert f["strength"] == pytest.approx(0.5 * 1.1**2, rel=1e-9)
    assert f["reinforcement"] == pytest.approx(1 + decay.MIN_GAIN)  # the second at once
    assert f["confidence_strength"] == pytest.approx(decayed_2 + 0.04, rel=1e-9)
    # the stored salience is the value at the retrieval, from the new state
    state = memory_state(EPISODES, e)
    assert e["salience"] == pytest.approx(decay.salience(state, days(3), p), rel=1e-9)
    assert engine.ltp.stats.applied == 4


async def test_coalesced_moments_equal_sequential_retrievals(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    p = engine.settings.decay_params
    memory = await engine.add("episode", agent_id="a", content="e", created_at=t0, salience=0.4)
    moments = [days(1), days(3), days(1), days(2), days(3), days(3)]
    for at in moments:
        await engine.record_retrieval("episode", [memory], now=at)
    await engine.ltp.drain(5)
    row = await fetch(conn, "episodic_traces", memory)
    state = decay.MemoryState(strength=0.4, anchor_at=t0, created_at=t0)
    for at in sorted(moments):
        strength = reference_decay.ltp_strength(state, at, p, 1.1, 1)
        state = decay.MemoryState(
            strength=strength, anchor_at=at, created_at=t0,
            reinforcement=state.reinforcement + reference_decay.spaced_gains(state, at, p, 1),
        )  # fmt: skip
    assert row["retrieval_count"] == 6
    assert row["strength"] == pytest.approx(state.strength, rel=1e-9)
    assert row["reinforcement"] == pytest.approx(state.reinforcement, rel=1e-9)


async def test_pruned_and_unknown_ids_change_nothing(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    memory = await engine.add("episode", agent_id="a", content="e", created_at=t0)
    await engine.sweep(now=days(30))
    before = await fetch(conn, "episodic_traces", memory)
    assert before["pruned"]
    await engine.record_retrieval("episode", [memory, uuid.uuid4()], now=days(31))
    await engine.ltp.drain(5)
    assert await fetch(conn, "episodic_traces", memory) == before
    assert engine.ltp.stats.skipped == 2 and engine.ltp.stats.applied == 0


async def test_without_a_moment_the_engine_reads_the_database_clock(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Recall, feedback and retrievals given no moment stamp the database's clock (read
    once and corrected by its offset), never a moment before a write it has stamped."""
    for _ in range(20):
        memory = await engine.add("episode", agent_id="a", content="kite on the beach")
        await engine.recall("a", "kite", k=1, tables=["episode"])
        await engine.ltp.drain(5)
        row = await fetch(conn, "episodic_traces", memory)
        assert row["retrieval_count"] == 1
        lag = (row["last_retrieved_at"] - row["created_at"]).total_seconds()
        assert 0 <= lag < 1
        await conn.execute("UPDATE episodic_traces SET pruned = true WHERE id = $1", memory)
    server = await conn.fetchval("SELECT clock_timestamp()")
    assert abs((await engine.now() - server).total_seconds()) < 0.5


async def test_concurrent_retrievals_during_sweeps_are_all_applied(
    database_url: str, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url, pool_max_size=8),
        ltp=LtpSettings(flush_interval_seconds=0.01, flush_max_rows=200),
    )
    p = settings.decay_params
    ids = [
        r["id"]
        for r in await conn.fetch(
            # on the standard curve: a short memory's words would tier it `working`, pruned
            # by the sweeps before some of its retrievals come (they skip it then)
            """INSERT INTO episodic_traces (agent_id, content, salience, created_at, policy)
               SELECT 'a', 'm' || g, 0.3 + random() / 2, $1, 'standard'
               FROM generate_series(1, 500) g
               RETURNING id""",
            t0,
        )
    ]
    before = {r["id"]: r for r in await conn.fetch("SELECT * FROM episodic_traces")}
    at = days(2)
    rng = random.Random(7)
    plan = [[rng.choice(ids) for _ in range(500)] for _ in range(20)]  # 20 × 500 = 10,000
    async with ConfiguredEngine(settings) as engine:
        sweeping = True

        async def sweeps() -> int:
            count = 0
            while sweeping:
                await engine.sweep(now=at)
                count += 1
            return count

        async def agent(picks: list[uuid.UUID]) -> None:
            for start in range(0, len(picks), 25):
                await engine.record_retrieval("episode", picks[start : start + 25], now=at)
                await asyncio.sleep(0)

        sweeper = asyncio.create_task(sweeps())
        await asyncio.gather(*(agent(picks) for picks in plan))
        await engine.ltp.drain(30)
        sweeping = False
        assert await sweeper > 0
    after = {r["id"]: r for r in await conn.fetch("SELECT * FROM episodic_traces")}
    assert sum(r["retrieval_count"] for r in after.values()) == 10_000
    hits: dict[uuid.UUID, int] = {}
    for picks in plan:
        for memory_id in picks:
            hits[memory_id] = hits.get(memory_id, 0) + 1
    for memory_id, n in hits.items():
        state = memory_state(EPISODES, before[memory_id])
        assert after[memory_id]["retrieval_count"] == n
        assert after[memory_id]["strength"] == pytest.approx(
            reference_decay.ltp_strength(state, at, p, 1.1, n), rel=1e-9
        )


async def test_search_ranks_by_similarity_with_a_bounded_salience_prior(
    engine: Engine, t0: datetime, days: Days
) -> None:
    query = unit(10)
    faded = await engine.add(
        "vector", agent_id="a", content="faded", embedding=query, created_at=t0
    )
    fresh = await engine.add(
        "vector", agent_id="a", content="fresh", embedding=mix((1, query), (1, unit(12))),
        created_at=days(19),
    )  # fmt: skip
    twin = await engine.add(
        "vector", agent_id="a", content="twin", embedding=at_cosine(query, 0.99, 3),
        created_at=days(19),
    )  # fmt: skip
    await engine.add("vector", agent_id="b", content="other agent", embedding=query)
    hits = await engine.nearest("a", query, k=5, now=days(20), record=False)
    # Nearly as similar and fresh beats the faded exact match; a clearly less similar
    # memory does not, however fresh (the exact match has faded to ~0.06).
    assert [h.id for h in hits] == [twin, faded, fresh]
    assert hits[1].similarity == pytest.approx(1.0) and hits[1].salience < 0.1
    assert hits[2].similarity == pytest.approx(0.7, abs=0.1)
    w = engine.settings.search.salience_weight
    for hit in hits:  # relevance: the cosine to the query centred on the agent's vectors
        assert hit.relevance is not None and hit.relevance < hit.similarity
        prior = 1 + w * hit.salience  # below 0 (fresh, here) divided: salience still helps
        expected = hit.relevance * prior if hit.relevance >= 0 else hit.relevance / prior
        assert hit.score == pytest.approx(expected)
    assert hits[2].relevance is not None and hits[2].relevance < 0


async def test_search_with_salience_weight_zero_is_pure_similarity(
    database_url: str, t0: datetime, days: Days
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(salience_weight=0),
    )
    async with ConfiguredEngine(settings) as engine:
        query = unit(20)
        close = await engine.add(
            "vector", agent_id="a", content="close", embedding=query, created_at=t0, salience=0.06
        )
        await engine.add("vector", agent_id="a", content="far", embedding=unit(21), created_at=t0)
        hits = await engine.nearest("a", query, k=2, now=days(0.1), record=False)
        assert hits[0].id == close and hits[0].score == pytest.approx(hits[0].relevance)


async def test_search_returns_the_embedded_memory_and_schedules_ltp(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    episode = await engine.add("episode", agent_id="a", content="the party", created_at=t0,
                               embedding=unit(30))  # fmt: skip
    hits = await engine.nearest("a", unit(30), k=3, now=days(1))
    assert {k: hits[0].as_dict()[k] for k in ("table", "id", "content")} == {
        "table": "episodic_traces",
        "id": str(episode),
        "content": "the party",
    }
    assert engine.ltp.backlog == 1  # scheduled, not yet written
    await engine.ltp.drain(5)
    assert (await fetch(conn, "episodic_traces", episode))["retrieval_count"] == 1


@pytest.mark.parametrize(
    ("embedding", "k", "message"),
    [
        ([0.1] * 3, 5, "3 dimensions"),
        ([math.nan] * 384, 5, "NaN"),
        ([], 5, "non-empty"),
        ([0.1] * 384, 0, "k must be a positive integer"),
        ([0.1] * 384, -3, "k must be a positive integer"),
    ],
)
async def test_search_bad_input(
    engine: Engine, embedding: list[float], k: int, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        await engine.nearest("a", embedding, k=k)
    assert engine.ltp.stats.recorded == 0


@pytest.mark.skipif(
    DISTRIBUTED,
    reason="on a Citus cluster one agent's search runs on its node, against its shards"
    " (tests/citus/test_distributed.py checks that routing); the coordinator's EXPLAIN is Citus's",
)
async def test_search_uses_the_hnsw_index(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    await conn.execute(
        """INSERT INTO memory_vectors (agent_id, content, embedding)
           SELECT 'agent-' || (g % 4), 'v' || g,
                  (SELECT array_agg(random() - 0.5)::vector
                   FROM generate_series(1, 384) WHERE g > 0)
           FROM generate_series(1, 3000) g"""
    )
    await conn.execute("ANALYZE memory_vectors")
    plan = await search_plan(engine, days(1))
    assert '"Index Name": "memory_vectors_embedding_hnsw"' in plan


async def test_full_buffer_waits_then_drops_and_counts(database_url: str, t0: datetime) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        ltp=LtpSettings(buffer_capacity=3, full_wait_seconds=0, flush_interval_seconds=60),
    )
    async with ConfiguredEngine(settings) as engine:
        await engine.record_retrieval("episode", [uuid.uuid4()] * 3, now=t0)
        await engine.record_retrieval("episode", [uuid.uuid4()], now=t0)
        assert engine.ltp.stats.dropped == 1 and engine.ltp.backlog == 3


async def test_ltp_survives_the_database_going_away(
    tmp_path: Path, t0: datetime, days: Days
) -> None:
    data_dir = tmp_path / "pg"
    url = db.embedded_uri(data_dir, "postgres")
    settings = Settings(
        database=DatabaseSettings(url=url, connect_timeout_seconds=2),
        ltp=LtpSettings(
            flush_interval_seconds=0.05, retry_max_seconds=0.5, close_timeout_seconds=30
        ),
    )
    await asyncio.to_thread(db.migrate, settings, url)
    try:
        async with ConfiguredEngine(settings) as engine:
            memory = await engine.add("episode", agent_id="a", content="e", created_at=t0)
            db.stop_embedded(data_dir)
            await engine.record_retrieval("episode", [memory, memory], now=days(1))
            await asyncio.sleep(1.5)
            assert engine.ltp.backlog == 2 and engine.ltp.stats.failed_flushes > 0
            db.embedded_uri(data_dir)
            await engine.ltp.drain(20)
            assert engine.ltp.backlog == 0 and engine.ltp.stats.applied == 2
        conn = await asyncpg.connect(url)
        try:
            count = await conn.fetchval(
                "SELECT retrieval_count FROM episodic_traces WHERE id = $1", memory
            )
        finally:
            await conn.close()
        assert count == 2
    finally:
        db.stop_embedded(data_dir)


async def test_an_agent_with_few_memories_still_gets_all_of_them(
    database_url: str, conn: asyncpg.Connection
) -> None:
    """The bounded index walk can miss a small agent's vectors among many others'; search
    then scans that agent's vectors exactly."""
    await conn.execute(
        """INSERT INTO memory_vectors (agent_id, content, embedding)
           SELECT 'crowd', 'v' || g,
                  (SELECT array_agg(random() - 0.5)::vector
                   FROM generate_series(1, 384) WHERE g > 0)
           FROM generate_series(1, 1200) g"""
    )
    await conn.execute("ANALYZE memory_vectors")
    # Steer the planner to the HNSW walk (it would pick the b-tree for so rare an agent).
    await conn.execute(f"ALTER DATABASE {await conn.fetchval('SELECT current_database()')}"
                       " SET enable_sort = off")  # fmt: skip
    settings = Settings(
        database=DatabaseSettings(url=database_url), search=SearchSettings(max_scan_tuples=100)
    )
    async with ConfiguredEngine(settings) as engine:
        mine = {
            await engine.add("vector", agent_id="loner", content=f"m{i}", embedding=unit(50 + i))
            for i in range(3)
        }
        hits = await engine.nearest("loner", unit(99), k=10, record=False)
    assert {h.id for h in hits} == mine


async def test_a_flush_retried_after_an_in_doubt_commit_is_not_applied_twice(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    memory = await engine.add("episode", agent_id="a", content="e", created_at=t0)
    pending: Pending = {(EPISODES, memory, None): {days(1): Events(retrievals=2, units=2)}}
    flush = uuid.uuid4()
    first = await apply_retrievals(engine.store, pending, flush)
    again = await apply_retrievals(engine.store, pending, flush)
    assert (first.applied, first.replayed) == (2, False)
    assert (again.applied, again.replayed) == (2, True)
    assert (await fetch(conn, "episodic_traces", memory))["retrieval_count"] == 2


async def test_the_daemon_forgets_old_flush_receipts(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    from ethos.services.daemon import Cycle, forget_ltp_receipts

    await conn.execute(
        "INSERT INTO ltp_flushes (id, applied_at) VALUES ($1, now() - interval '2 days'),"
        " ($2, now())",
        uuid.uuid4(),
        uuid.uuid4(),
    )
    cycle = Cycle(engine=engine, store=engine.store, daemon_id="d", stop=asyncio.Event())
    await forget_ltp_receipts(cycle)
    assert await conn.fetchval("SELECT count(*) FROM ltp_flushes") == 1


class RefusesOnce(Store):
    """The real store, except that the first flush is refused for good."""

    refused = 0

    @asynccontextmanager
    async def ltp_flush(self, flush_id: uuid.UUID) -> AsyncIterator[LtpFlush | None]:
        if not self.refused:
            self.refused += 1
            raise DatabaseError("database: refused on purpose")
        async with super().ltp_flush(flush_id) as flush:
            yield flush


async def test_a_refused_flush_frees_its_room_for_waiting_callers(
    database_url: str, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        ltp=LtpSettings(buffer_capacity=3, full_wait_seconds=5, flush_interval_seconds=60),
    )
    store = await RefusesOnce.open(settings, database_url)
    memory = await conn.fetchval(
        "INSERT INTO episodic_traces (agent_id, content, created_at) VALUES ('a', 'e', $1)"
        " RETURNING id",
        t0,
    )
    buffer = LtpBuffer(store, settings)
    buffer.start()
    try:
        await buffer.record(EPISODES, [memory] * 3, days(1))  # the buffer is full
        # This caller waits for room; the flush it wakes is refused, which frees the room.
        await asyncio.wait_for(buffer.record(EPISODES, [memory], days(2)), 4)
        assert store.refused == 1
        assert (buffer.stats.dropped, buffer.backlog) == (3, 1)  # the refused three only
        await buffer.close()
    finally:
        await store.close()
    assert buffer.stats.applied == 1 and buffer.stats.dropped == 3
    assert (
        await conn.fetchval("SELECT retrieval_count FROM episodic_traces WHERE id = $1", memory)
        == 1
    )


async def test_events_that_name_the_agent_reach_its_memory_of_an_id_only(
    engine: Engine, conn: asyncpg.Connection, cli: Cli, database_url: str
) -> None:
    """Two agents' memories of one id (the app may write one in SQL). Before, a queued
    event named a table and an id, and every memory of the id took it."""
    shared = uuid.uuid4()
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, id, content) VALUES ('a', $1, 'x'), ('b', $1, 'x')",
        shared,
    )
    counts = (
        "SELECT agent_id, retrieval_count, wrong_count FROM semantic_facts WHERE id = $1"
        " ORDER BY agent_id"
    )

    async def state() -> list[tuple[str, int, int]]:
        return [tuple(row) for row in await conn.fetch(counts, shared)]

    # the buffer: a retrieval of a's, a wrong of b's
    await engine.record_retrieval("fact", [shared], agent="a")
    await engine.feedback("fact", [shared], "wrong", agent="b")
    await engine.ltp.drain(5)
    assert await state() == [("a", 1, 0), ("b", 0, 1)]
    # the queue: events of a's (a plain INSERT, and SQL's door that names it), and one
    # that names no agent
    await conn.execute(
        "INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at)"
        " VALUES ('a', 'semantic_facts', $1, now())",
        shared,
    )
    recorded = "SELECT ethos_record_retrieval('fact', ARRAY[$1]::uuid[], now(), $2)"
    assert await conn.fetchval(recorded, shared, "a") == 1
    assert await conn.fetchval(recorded, shared, None) == 2  # an event per memory of the id
    assert await engine.ltp.drain_queue()
    assert await state() == [("a", 4, 0), ("b", 1, 1)]
    # a caller that names no agent reaches every memory of the id, as before
    await engine.record_retrieval("fact", [shared])
    await engine.ltp.drain(5)
    assert await state() == [("a", 5, 0), ("b", 2, 1)]
    env = {"ETHOS_DATABASE__URL": database_url}
    done = cli("record-retrieval", "fact", str(shared), "--agent", "c", env=env)
    assert done.returncode != 0
    assert f"no semantic_facts row of agent c with id {shared}" in done.stderr
    assert cli("feedback", "fact", str(shared), "--useful", "--agent", "b", env=env).returncode == 0
    assert await state() == [("a", 5, 0), ("b", 3, 1)]
