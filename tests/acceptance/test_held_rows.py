"""A row held for hours by a tenant's open transaction, as a daemon sees it (issue 64,
decision 0022): the daemon applies every other agent's queued retrievals and completes
its sweeps, says what waits (a log line, its metrics), and applies the held agent's
events once, after the lock is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from tests.acceptance.daemons import DaemonProcess, wait_for
from tests.acceptance.test_metrics import free_port, get, listening, samples

COUNT = "SELECT retrieval_count FROM episodic_traces WHERE id = $1"


async def test_a_daemon_works_around_a_held_row_and_says_so(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    add = ("INSERT INTO episodic_traces (agent_id, content, created_at)"
           " VALUES ($1, $2, now() - interval '1 hour') RETURNING id")  # fmt: skip
    a, b = [await conn.fetchval(add, agent, f"note of {agent}") for agent in ("a", "b")]
    await conn.execute("SELECT ethos_record_retrieval('episode', ARRAY[$1, $2]::uuid[])", a, b)
    holder = await asyncpg.connect(database_url)
    transaction = holder.transaction()
    await transaction.start()
    await holder.execute("UPDATE episodic_traces SET pinned = pinned WHERE id = $1", a)
    try:
        port = free_port()
        daemons.append(
            DaemonProcess(database_url, tmp_path, "d1", ETHOS_METRICS__LISTEN=f"127.0.0.1:{port}")
        )
        await listening(port)
        await wait_for(conn, f"SELECT ({COUNT}) = 1", b, within=20)
        swept = "SELECT count(*) FROM sweep_runs WHERE trigger = 'daemon' AND status = 'completed'"
        await wait_for(conn, f"SELECT ({swept}) >= 1", within=20)
        status, text = await get(port, "/metrics")
        assert status == 200
        seen = samples(text)
        assert seen[("ethos_ltp_held_agents", ())] == 1
        assert seen[("ethos_ltp_held_oldest_seconds", ())] > 0
        assert seen[("ethos_rows_held_total", (("table", "episodic_traces"),))] >= 1
        assert await conn.fetchval(COUNT, a) == 0
        log = daemons[0].log()
        assert "ltp_events_held" in log and "sweep_rows_held" in log
    finally:
        await transaction.rollback()
        await holder.close()
    await wait_for(conn, f"SELECT ({COUNT}) = 1", a, within=20)
    await asyncio.sleep(1.5)  # more drains and retries: applied once
    assert await conn.fetchval(COUNT, a) == 1
    assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 0
