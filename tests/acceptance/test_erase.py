"""An erase killed with kill -9 and run again: the audit rows' counts add up to the rows
that went, because each batch is counted in the transaction that deletes it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.acceptance.daemons import wait_for
from tests.conftest import DISTRIBUTED

ETHOS = str(Path(sys.executable).parent / "ethos")
# Small batches, so the kill lands mid-erase. On a Citus cluster a batch is a distributed
# transaction, about 55 ms here against 5 ms on one server: larger batches keep the run
# within its time.
BATCH = "100" if DISTRIBUTED else "20"


async def test_a_killed_erase_rerun_counts_every_row_once(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content)"
        " SELECT 'a', 'e ' || g FROM generate_series(1, 20000) g;"
        " INSERT INTO semantic_facts (agent_id, content)"
        " SELECT 'a', 'f ' || g FROM generate_series(1, 300) g;"
        " INSERT INTO episodic_traces (agent_id, content) VALUES ('b', 'kept')"
    )
    env = {**os.environ, "ETHOS_DATABASE__URL": database_url, "ETHOS_DECAY__BATCH_SIZE": BATCH}
    first = await asyncio.create_subprocess_exec(ETHOS, "erase", "--agent", "a", "--yes", env=env)
    try:
        await wait_for(
            conn,
            "SELECT (counts ->> 'episodic_traces')::int > 0 FROM lifecycle_runs"
            " WHERE kind = 'erase'",
        )
    finally:
        first.kill()
        await first.wait()
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE agent_id = 'a'") > 0
    second = await asyncio.to_thread(
        subprocess.run, [ETHOS, "erase", "--agent", "a", "--yes"], env=env, timeout=120
    )
    assert second.returncode == 0
    runs = await conn.fetch("SELECT status, counts FROM lifecycle_runs ORDER BY id")
    assert [run["status"] for run in runs] == ["interrupted", "completed"]
    counted = [json.loads(run["counts"]) for run in runs]
    assert sum(c.get("episodic_traces", 0) for c in counted) == 20000
    assert sum(c.get("semantic_facts", 0) for c in counted) == 300
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 1  # b's
