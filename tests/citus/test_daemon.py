"""The daemon on a database distributed by agent (issue 40): a real `ethos daemon` on the
coordinator merges what plain SQL inserted twice, sweeps (due sweeps and prune passes,
each shard group on its node), purges, and stops at SIGTERM with status 0; every run it
recorded completed."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from ethos.services.engine import migrate
from ethos.settings import DatabaseSettings, Settings
from tests.acceptance.daemons import DaemonProcess, wait_for
from tests.citus.cluster import add_memories, distribute


async def test_the_daemon_runs_its_cycle_on_the_cluster(
    citus_database: str, tmp_path: Path
) -> None:
    await migrate(Settings(database=DatabaseSettings(url=citus_database)), citus_database)
    await add_memories(citus_database)
    await distribute(citus_database)
    conn = await asyncpg.connect(citus_database)
    try:
        await conn.execute("""INSERT INTO semantic_facts (agent_id, content)
                              VALUES ('alice', 'twice'), ('alice', 'twice')""")
        daemon = DaemonProcess(
            citus_database, tmp_path, "citus",
            ETHOS_DAEMON__PRUNE_INTERVAL_SECONDS="0.5", ETHOS_RETENTION__PURGE_AFTER_DAYS="1",
        )  # fmt: skip
        try:
            await wait_for(conn, "SELECT count(*) >= 2 FROM sweep_runs WHERE mode = 'due'")
            await wait_for(conn, "SELECT count(*) >= 1 FROM sweep_runs WHERE mode = 'prune'")
            await wait_for(conn, "SELECT count(*) >= 1 FROM lifecycle_runs WHERE kind = 'purge'")
        finally:
            code, _ = daemon.stop()
        assert code == 0, daemon.log()
        assert await conn.fetchval(
            "SELECT count(*) FROM semantic_facts WHERE content = 'twice' AND NOT pruned"
        ) == 1  # fmt: skip
        swept = await conn.fetchval("SELECT sum(scanned) FROM sweep_runs")
        assert swept > 50  # the memories added (unscheduled), swept on their shards
        failed = await conn.fetch(
            """SELECT 'sweep' AS run, status, error FROM sweep_runs WHERE status <> 'completed'
               UNION ALL
               SELECT kind, status, error FROM lifecycle_runs WHERE status <> 'completed'"""
        )
        assert [r for r in failed if r["status"] != "interrupted"] == [], failed
    finally:
        await conn.close()
