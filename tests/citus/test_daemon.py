"""The daemon on a database distributed by agent (issue 40): a real `ethos daemon` on the
coordinator merges what plain SQL inserted twice, sweeps (due sweeps and prune passes,
each shard group on its node), purges, and stops at SIGTERM with status 0; every run it
recorded completed."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from tests.acceptance.daemons import DaemonProcess, wait_for
from tests.citus.cluster import MEMORIES_DISTRIBUTED, Copy


async def test_the_daemon_runs_its_cycle_on_the_cluster(cluster_copy: Copy, tmp_path: Path) -> None:
    citus_database = await cluster_copy(MEMORIES_DISTRIBUTED)
    conn = await asyncpg.connect(citus_database)
    try:
        await conn.execute("""INSERT INTO semantic_facts (agent_id, content)
                              VALUES ('alice', 'twice'), ('alice', 'twice')""")
        daemon = DaemonProcess(
            citus_database, tmp_path, "citus", ETHOS_DAEMON__INTERVAL_SECONDS="3",
            ETHOS_DAEMON__PRUNE_INTERVAL_SECONDS="0.5", ETHOS_RETENTION__PURGE_AFTER_DAYS="1",
        )  # fmt: skip
        try:
            done = "SELECT count(*) FROM sweep_runs WHERE mode = 'due' AND status = 'completed'"
            await wait_for(conn, f"SELECT ({done}) >= 2", within=30)
            # A prune pass that prunes nothing leaves no row: give one a memory to prune.
            # A due sweep would prune it as well, so it is added, already expired, just
            # after a due sweep ends: the next is 3 s away, a prune pass at most 0.5 s.
            await wait_for(conn, f"SELECT ({done}) > $1", await conn.fetchval(done), within=30)
            await conn.execute("""INSERT INTO semantic_facts (agent_id, content, expires_at)
                                  VALUES ('bob', 'passing', now())""")
            await wait_for(conn, "SELECT count(*) >= 1 FROM sweep_runs WHERE mode = 'prune'")
            await wait_for(conn, "SELECT count(*) >= 1 FROM lifecycle_runs WHERE kind = 'purge'")
        finally:
            code, _ = daemon.stop()
        assert code == 0, daemon.log()
        assert await conn.fetchval(
            "SELECT count(*) FROM semantic_facts WHERE content = 'twice' AND NOT pruned"
        ) == 1  # fmt: skip
        assert await conn.fetchval(
            "SELECT prune_reason FROM semantic_facts WHERE content = 'passing' AND pruned"
        ) == "expired"  # fmt: skip
        # the memories added (unscheduled), swept on their shards: each scheduled now, by
        # a due sweep or a prune pass (whose row counts only what it pruned)
        unscheduled, live = await conn.fetchrow("""
            SELECT count(*) FILTER (WHERE '-infinity' IN (due_at, prune_at)), count(*)
            FROM (SELECT due_at, prune_at FROM episodic_traces WHERE NOT pruned
                  UNION ALL SELECT due_at, prune_at FROM semantic_facts WHERE NOT pruned
                  UNION ALL SELECT due_at, prune_at FROM memory_vectors WHERE NOT pruned) AS m
        """)
        assert unscheduled == 0 and live > 50
        failed = await conn.fetch(
            """SELECT 'sweep' AS run, status, error FROM sweep_runs WHERE status <> 'completed'
               UNION ALL
               SELECT kind, status, error FROM lifecycle_runs WHERE status <> 'completed'"""
        )
        assert [r for r in failed if r["status"] != "interrupted"] == [], failed
    finally:
        await conn.close()
