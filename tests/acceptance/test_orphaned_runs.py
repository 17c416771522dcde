"""Audit rows left `running` by a process killed with kill -9 are marked `interrupted` by
the next process that sweeps, merges or asks for status; a live owner's are not."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import asyncpg

from ethos.services.engine import Engine
from tests.conftest import Days

# Opens a run of each kind as ethos does, says so, then waits to be killed.
OWNER = textwrap.dedent("""
    import asyncio, sys
    from datetime import UTC, datetime
    from ethos.services.engine import Engine
    from ethos.settings import DatabaseSettings, Settings

    async def main() -> None:
        async with Engine(Settings(database=DatabaseSettings(url=sys.argv[1]))) as engine:
            store = engine.store
            now = datetime(2026, 1, 1, tzinfo=UTC)
            await store.start_sweep_run("manual", "due", now, None, None)
            await store.start_lifecycle_run("merge", "manual", now, {})
            print("running", flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
""")


def stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()
    assert process.stdout is not None
    process.stdout.close()


def start_owner(url: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER, url], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "running"
    return process


async def running(conn: asyncpg.Connection) -> tuple[int, int]:
    return (
        await conn.fetchval("SELECT count(*) FROM sweep_runs WHERE status = 'running'"),
        await conn.fetchval("SELECT count(*) FROM lifecycle_runs WHERE status = 'running'"),
    )


async def test_a_killed_process_runs_are_interrupted_a_live_ones_are_not(
    engine: Engine, conn: asyncpg.Connection, database_url: str, days: Days
) -> None:
    alive, killed = start_owner(database_url), start_owner(database_url)
    try:
        stop(killed)
        status = await engine.status(alive_seconds=30)
        assert await running(conn) == (1, 1)  # the live owner's rows stay running
        assert status.last_sweep["status"] == "interrupted"  # the killed one, newest
        interrupted = await conn.fetch(
            "SELECT error FROM sweep_runs WHERE status = 'interrupted'"
            " UNION ALL SELECT error FROM lifecycle_runs WHERE status = 'interrupted'"
        )
        assert [row["error"] for row in interrupted] == ["its process ended while it ran"] * 2
    finally:
        stop(alive)
    report = await engine.sweep(now=days(1))  # the next sweep clears what is left
    assert await running(conn) == (0, 0)
    assert report.status == "completed"


async def test_a_prune_pass_writes_an_audit_row_when_it_prunes(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    empty = await engine.sweep(now=days(1), mode="prune")
    assert empty.run_id is None  # it pruned nothing: no row (issue 66)
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content, created_at) VALUES ('a', 'gone', $1)",
        days(0),
    )
    report = await engine.sweep(now=days(36500), mode="prune")
    row = await conn.fetchrow("SELECT mode, status FROM sweep_runs WHERE id = $1", report.run_id)
    assert report.totals()[2] == 1
    assert report.run_id is not None and dict(row) == {"mode": "prune", "status": "completed"}
