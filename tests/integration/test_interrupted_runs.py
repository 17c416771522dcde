"""Runs stopped or cancelled mid-way, through the Python API: each leaves its audit row
with what it committed (issue 64), a cancelled sweep is a warning, not an error, and
the audit lists the prune passes that did something (issue 66)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from structlog.testing import capture_logs

from ethos.services.engine import Engine
from ethos.services.progress import Watch
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, DecaySettings, Settings
from tests.conftest import ConfiguredEngine
from tests.embedding_server import embedding_server
from tests.integration.test_recall import with_provider

ROWS = 3000
BATCH = 10


def settings(url: str) -> Settings:
    return Settings(database=DatabaseSettings(url=url), decay=DecaySettings(batch_size=BATCH))


async def started(conn: asyncpg.Connection, query: str) -> None:
    """Wait until `query` holds (the run is under way)."""
    for _ in range(600):
        if await conn.fetchval(query):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {query}")


async def pruned(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content)"
        f" SELECT 'a', 'memory ' || g FROM generate_series(1, {ROWS}) g;"
        "UPDATE episodic_traces SET pruned = true, pruned_at = now() - interval '1 day',"
        " prune_reason = 'decay', due_at = NULL, prune_at = NULL"
    )


async def test_a_cancelled_sweep_is_recorded_interrupted_and_logged_as_a_warning(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content)"
        f" SELECT 'a', 'memory ' || g FROM generate_series(1, {ROWS}) g"
    )
    async with Engine(settings(database_url)) as engine:
        with capture_logs() as logs:
            # Cancelled as its first batches commit, wherever the cancellation lands.
            sweep = asyncio.create_task(
                engine.sweep(mode="full", progress=lambda _, rows, __: rows and sweep.cancel())
            )
            with pytest.raises(asyncio.CancelledError):
                await sweep
    run = await conn.fetchrow("SELECT status, scanned, error FROM sweep_runs")
    assert (run["status"], run["error"]) == ("interrupted", None)
    assert 0 < run["scanned"] < ROWS
    events = [(e["event"], e["log_level"]) for e in logs if e["event"].startswith("decay_sweep")]
    assert events == [("decay_sweep_interrupted", "warning")]


async def test_a_stopped_recovery_records_what_it_committed(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await pruned(conn)
    watch = Watch()
    async with Engine(settings(database_url)) as engine:
        recovery = asyncio.create_task(engine.recover("episode", Selector(agent="a"), watch=watch))
        await started(conn, "SELECT count(*) > 100 FROM episodic_traces WHERE NOT pruned")
        watch.stop.set()
        report = await recovery
    live = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE NOT pruned")
    assert 0 < live < ROWS
    assert (report.status, len(report.rows), watch.done, watch.total) == (
        "interrupted",
        live,
        live,
        ROWS,
    )
    assert watch.interrupted and watch.audit == f"recoveries #{report.recovery_id}"
    row = await conn.fetchrow("SELECT recovered, status FROM recoveries")
    assert (row["recovered"], row["status"]) == (live, "interrupted")


async def test_a_cancelled_recovery_is_recorded(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await pruned(conn)
    async with Engine(settings(database_url)) as engine:
        recovery = asyncio.create_task(engine.recover("episode", Selector(agent="a")))
        await started(conn, "SELECT count(*) > 100 FROM episodic_traces WHERE NOT pruned")
        recovery.cancel()
        with pytest.raises(asyncio.CancelledError):
            await recovery
    live = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE NOT pruned")
    row = await conn.fetchrow("SELECT recovered, status FROM recoveries")
    assert row is not None and row["status"] == "interrupted"
    # The batch in flight when the cancellation landed may have committed uncounted.
    assert 0 < row["recovered"] <= live <= row["recovered"] + BATCH


async def test_a_stopped_merge_is_interrupted_with_its_counts(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content)"
        " SELECT 'a', 'twice ' || (g % 500) FROM generate_series(1, 1000) g"
    )
    watch = Watch()
    watch.stop.set()  # stopped before its first batch: nothing merged, all of it left
    async with Engine(settings(database_url)) as engine:
        report = await engine.merge(watch=watch)
        assert report.status == "interrupted" and watch.done == 0
        run = await conn.fetchrow("SELECT status FROM lifecycle_runs")
        assert run["status"] == "interrupted"
        again = await engine.merge()
    assert again.status == "completed"
    assert again.counts["semantic_facts"]["merged"] == 500


async def test_an_empty_prune_pass_leaves_no_sweep_run(
    database_url: str, conn: asyncpg.Connection
) -> None:
    async with Engine(settings(database_url)) as engine:
        await engine.add("episode", agent_id="a", content="kept a while", policy="working")
        for _ in range(3):
            report = await engine.sweep(mode="prune")
            assert report.run_id is None and report.totals()[2] == 0
        assert await conn.fetchval("SELECT count(*) FROM sweep_runs") == 0
        # A pass with something to prune is recorded, as is every due sweep.
        later = datetime.now(UTC) + timedelta(days=30)
        report = await engine.sweep(mode="prune", now=later)
        assert report.totals()[2] == 1
        await engine.sweep(mode="due")
    runs = await conn.fetch("SELECT mode, pruned FROM sweep_runs ORDER BY id")
    assert [(r["mode"], r["pruned"]) for r in runs] == [("prune", 1), ("due", 0)]


async def test_a_stopped_embed_missing_keeps_its_batches_and_a_rerun_embeds_the_rest(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content)"
        " SELECT 'a', 'fact ' || g FROM generate_series(1, 50) g"
    )
    watch = Watch()
    # Stopped as its first batch commits (as Ctrl-C would be, between batches).
    watch.shown = lambda w: w.stop.set() if w.done else None
    with embedding_server() as (url, _):
        async with ConfiguredEngine(with_provider(database_url, url, batch_size=10)) as engine:
            made = await engine.embed_missing(watch=watch)
            assert (watch.done, watch.total, watch.interrupted) == (10, 50, True)
            assert made.by_table == {"episodic_traces": 0, "semantic_facts": 10}
            assert await conn.fetchval("SELECT count(*) FROM memory_embeddings") == 10
            rest = await engine.embed_missing()
    assert rest.by_table == {"episodic_traces": 0, "semantic_facts": 40}
