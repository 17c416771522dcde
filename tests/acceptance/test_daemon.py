"""The daemon as a real process against the real embedded PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos import db
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, LtpSettings, PolicySettings, Settings
from tests.acceptance.daemons import FAST, DaemonProcess, wait_for
from tests.conftest import TEMPLATE, ConfiguredEngine

if TYPE_CHECKING:
    from tests.conftest import Cli


async def test_daemon_sweeps_every_interval(
    database_url: str,
    conn: asyncpg.Connection,
    daemons: list[DaemonProcess],
    tmp_path: Path,
    cli: Cli,
) -> None:
    daemons.append(DaemonProcess(database_url, tmp_path, "d1"))
    await wait_for(
        conn,
        "SELECT count(*) >= 3 FROM sweep_runs WHERE trigger = 'daemon' AND status = 'completed'",
    )
    status = cli("status", "--json", env={**FAST, "ETHOS_DATABASE__URL": database_url})
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    [daemon] = report["daemons"]
    assert f":{daemons[0].process.pid}:" in daemon["id"]
    assert daemon["holds_leader_lock"] and daemon["role"] == "leader"
    assert daemon["next_sweep_due"] is not None and daemon["ltp_dropped"] == 0
    assert report["last_sweep"]["trigger"] == "daemon"
    assert isinstance(report["last_sweep"]["tables"], dict)
    started = datetime.fromisoformat(report["last_sweep"]["started_at"])
    assert report["last_sweep"]["started_at"] == started.isoformat()  # ISO 8601, with a T
    # (the daemon may have begun its next sweep since: a running one has no duration yet)
    running = report["last_sweep"]["status"] == "running"
    assert isinstance(report["last_sweep"]["duration_ms"], type(None) if running else int)
    code, seconds = daemons[0].stop()
    assert code == 0 and seconds < 10
    assert '"decay_sweep_complete"' in daemons[0].log()
    assert await conn.fetchval("SELECT count(*) FROM daemons WHERE stopped_at IS NOT NULL") == 1


async def test_one_sweeper_at_a_time_and_takeover_after_kill_9(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    daemons += [DaemonProcess(database_url, tmp_path, f"d{i}") for i in (1, 2)]
    await wait_for(conn, "SELECT count(*) >= 4 FROM sweep_runs WHERE trigger = 'daemon'")
    sweepers = await conn.fetch("SELECT DISTINCT daemon_id FROM sweep_runs")
    assert len(sweepers) == 1
    leader_id = sweepers[0]["daemon_id"]
    leader = next(d for d in daemons if f":{d.process.pid}:" in leader_id)
    standby = next(d for d in daemons if d is not leader)
    killed_at = datetime.now(UTC)
    leader.kill()  # the lock goes with its connection
    took_over = await wait_for(
        conn,
        "SELECT min(started_at) FROM sweep_runs WHERE daemon_id <> $1 AND started_at > $2",
        leader_id,
        killed_at,
        within=10,
    )
    # within one standby poll plus one interval (and some slack for a busy machine)
    assert (took_over - killed_at).total_seconds() < 4  # type: ignore[operator]
    assert len(await conn.fetch("SELECT DISTINCT daemon_id FROM sweep_runs")) == 2
    code, _ = standby.stop()
    assert code == 0


async def test_sigterm_during_a_long_sweep_exits_cleanly_with_whole_batches(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    # (the policy given: a new row's own, read from its words, is planned again by Citus
    # for every row on a cluster, where this load took over 120 s; runbooks/scaling.md)
    await conn.execute(
        """INSERT INTO episodic_traces (agent_id, content, salience, strength, policy)
           SELECT 'a', 'm' || g, 0, 0.9, 'standard' FROM generate_series(1, 200000) g"""
    )
    daemons.append(
        DaemonProcess(
            database_url,
            tmp_path,
            "d1",
            ETHOS_DAEMON__INTERVAL_SECONDS="3600",
            ETHOS_DECAY__BATCH_SIZE="100",
            # (one connection reads the table as one range; with more, a range that got to
            # its end ends on a short batch, so the count below is whole batches only here)
            ETHOS_SWEEP__WORKERS="1",
        )
    )
    await wait_for(conn, "SELECT count(*) FROM episodic_traces WHERE salience > 0", within=20)
    beat = await conn.fetchval("SELECT heartbeat_at FROM daemons")
    await asyncio.sleep(0.5)
    assert await conn.fetchval("SELECT heartbeat_at FROM daemons") > beat  # alive mid-sweep
    code, seconds = daemons[0].stop()
    assert code == 0 and seconds < 10
    run = await conn.fetchrow("SELECT * FROM sweep_runs WHERE trigger = 'daemon'")
    assert run["status"] == "interrupted"
    refreshed = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE salience > 0")
    assert 0 < refreshed < 200_000
    assert refreshed == run["updated"]  # the audit row counts exactly the committed batches
    assert refreshed % 100 == 0  # and they were whole


async def test_daemon_outlives_a_database_outage(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    data_dir = tmp_path / "pg"
    url = db.embedded_uri(data_dir, "postgres")
    await asyncio.to_thread(db.migrate, Settings(), url)
    try:
        daemons.append(DaemonProcess(url, tmp_path, "d1"))
        conn = await asyncpg.connect(url)
        await wait_for(conn, "SELECT count(*) >= 1 FROM sweep_runs WHERE status = 'completed'")
        await conn.close()
        db.stop_embedded(data_dir)
        await asyncio.sleep(6)
        assert daemons[0].process.poll() is None
        db.embedded_uri(data_dir)
        restarted = datetime.now(UTC)
        conn = await asyncpg.connect(url)
        await wait_for(
            conn,
            "SELECT count(*) FROM sweep_runs WHERE status = 'completed' AND started_at > $1",
            restarted,
            within=10,
        )
        await conn.close()
        code, _ = daemons[0].stop()
        assert code == 0
        warnings = daemons[0].log().count('"daemon_database_unavailable"')
        assert 1 <= warnings <= 30  # backoff (0.5 s to 1 s here): no flood
    finally:
        db.stop_embedded(data_dir)


async def test_a_busy_system_still_sweeps_within_max_defer(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    memory = await conn.fetchval(
        "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'x') RETURNING id"
    )
    settings = Settings(
        database=DatabaseSettings(url=database_url), ltp=LtpSettings(flush_interval_seconds=0.05)
    )
    async with Engine(settings) as engine:
        await engine.record_retrieval("episode", [memory])
        await engine.ltp.drain(5)
        daemons.append(
            DaemonProcess(
                database_url,
                tmp_path,
                "d1",
                ETHOS_DAEMON__IDLE_SECONDS="30",
                ETHOS_DAEMON__MAX_DEFER_SECONDS="2",
            )
        )
        # Never idle: a retrieval every 0.2 s, until the daemon has started three sweeps
        # (two gaps). Counted, not timed: on a busy machine the daemon's own start takes
        # seconds of any fixed window.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            await engine.record_retrieval("episode", [memory])
            await asyncio.sleep(0.2)
            if await conn.fetchval("SELECT count(*) FROM sweep_runs") >= 3:
                break
    code, _ = daemons[0].stop()
    assert code == 0
    starts = [
        r["started_at"] for r in await conn.fetch("SELECT started_at FROM sweep_runs ORDER BY 1")
    ]
    assert len(starts) >= 3
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    # due every ~1 s, deferred while busy, but never more than max_defer (2 s) past due
    assert max(gaps) < 1.05 + 2 + 1.5  # (heartbeat ticks and a busy machine: slack)
    assert min(gaps) > 2  # and it did defer: the system was never idle
    assert '"decay_sweep_deferred"' in daemons[0].log()


async def test_a_prune_pass_prunes_on_time_while_the_sweep_is_held_back(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        ltp=LtpSettings(flush_interval_seconds=0.05),
        policies={"blink": PolicySettings(lifetime="4s")},
    )
    async with ConfiguredEngine(settings) as engine:
        busy = await engine.add("episode", agent_id="a", content="busy")
        await engine.record_retrieval("episode", [busy])
        await engine.ltp.drain(5)
        daemons.append(
            DaemonProcess(
                database_url,
                tmp_path,
                "d1",
                ETHOS_DAEMON__IDLE_SECONDS="30",  # never idle: the sweep waits ...
                ETHOS_DAEMON__MAX_DEFER_SECONDS="3600",  # ... all along
                ETHOS_DAEMON__PRUNE_INTERVAL_SECONDS="1",
                ETHOS_POLICIES__BLINK__LIFETIME="4s",
            )
        )
        memory = await engine.add("episode", agent_id="a", content="blink", policy="blink")
        created = await conn.fetchval(
            "SELECT created_at FROM episodic_traces WHERE id = $1", memory
        )
        deadline = time.monotonic() + 20
        pruned_at = None
        while pruned_at is None and time.monotonic() < deadline:
            await engine.record_retrieval("episode", [busy])
            await asyncio.sleep(0.2)
            pruned_at = await conn.fetchval(
                "SELECT pruned_at FROM episodic_traces WHERE id = $1 AND pruned", memory
            )
    code, _ = daemons[0].stop()
    assert code == 0
    assert pruned_at is not None, daemons[0].log()
    late = (pruned_at - (created + timedelta(seconds=4))).total_seconds()
    assert 0 <= late < 1 + 1.5  # within the prune interval (and slack for a busy machine)
    assert await conn.fetchval("SELECT count(*) FROM sweep_runs WHERE mode = 'due'") == 0
    assert await conn.fetchval("SELECT count(*) FROM sweep_runs WHERE mode = 'prune'") >= 1
    assert '"decay_sweep_deferred"' in daemons[0].log()


@pytest.mark.own_server
async def test_while_the_database_is_gone_every_log_event_is_one_json_line(
    admin_uri: str, template_uri: str, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    """The driver logs a lost pool connection with a multi-line traceback through the
    standard logging module: it must come out as one JSON event like ethos's own."""
    admin = await asyncpg.connect(admin_uri)
    try:
        await admin.execute(f"CREATE DATABASE gone_soon TEMPLATE {TEMPLATE}")
        url = admin_uri.replace("/postgres?", "/gone_soon?", 1)
        daemons.append(DaemonProcess(url, tmp_path, "d", ETHOS_LOGGING__LEVEL="debug"))
        conn = await asyncpg.connect(url)
        await wait_for(conn, "SELECT count(*) >= 1 FROM sweep_runs WHERE status = 'completed'")
        await conn.close()
        await admin.execute("DROP DATABASE gone_soon WITH (FORCE)")
        await asyncio.sleep(3)
        daemons[0].stop()
    finally:
        await admin.execute("DROP DATABASE IF EXISTS gone_soon WITH (FORCE)")
        await admin.close()
    lines = daemons[0].log().splitlines()
    events = [json.loads(line) for line in lines]  # each line is one whole event
    assert any(e.get("level") in ("warning", "error") for e in events)
