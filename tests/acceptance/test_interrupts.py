"""Long commands stopped mid-way, as a person stops them: Ctrl-C (SIGINT) or SIGTERM on
the real `ethos` in a subprocess, or its connections cut. Each keeps what it committed,
counts it in its audit row, says how far it got and that a rerun finishes it; the rerun
does the rest (issues 64 and 66)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from ethos.db.store.sessions import node_url
from tests.acceptance.daemons import wait_for
from tests.citus.cluster import cluster_nodes
from tests.conftest import DISTRIBUTED

ETHOS = str(Path(sys.executable).parent / "ethos")
# Enough rows in small batches that a signal lands mid-run (a recovery batch of 20 takes
# about 50 ms here, with its statements' planning) (a Citus batch is a distributed
# transaction, about ten times slower: larger ones keep the run within its time).
BATCH = "100" if DISTRIBUTED else "20"
# "recovered 4180 of 20000 episodic_traces rows (audit: recoveries #1)"
FAR = re.compile(r"ethos: interrupted: (?:recovered|deleted|swept) (\d+) of (\d+) ")


def environment(database_url: str) -> dict[str, str]:
    return {**os.environ, "ETHOS_DATABASE__URL": database_url, "ETHOS_DECAY__BATCH_SIZE": BATCH}


PRUNE_ALL = (
    "UPDATE episodic_traces SET pruned = true, pruned_at = now() - interval '1 day',"
    " prune_reason = 'decay', due_at = NULL, prune_at = NULL"
)


ROWS = 3000  # recovered or purged
LIVE_ROWS = 20_000  # erased or swept: faster batches


def episodes(n: int) -> str:
    """n episodes of agent a, in one statement (generate_series), on the default policy:
    automatic importance measures nothing these tests read, and on a Citus cluster
    measuring 20,000 took 51 s (3.4 s with the policy given), inside the first test's
    timeout."""
    return (
        "INSERT INTO episodic_traces (agent_id, content, policy)"
        f" SELECT 'a', 'memory ' || g, 'standard' FROM generate_series(1, {n}) g"
    )


async def pruned_rows(conn: asyncpg.Connection) -> None:
    """ROWS episodes of agent a, pruned. The tests are marked `filled` with it: the rows
    are written once, and each test has a copy."""
    await conn.execute(f"{episodes(ROWS)}; {PRUNE_ALL}")


async def live_rows(conn: asyncpg.Connection) -> None:
    await conn.execute(episodes(LIVE_ROWS))


async def stopped(
    args: list[str],
    env: dict[str, str],
    sig: int,
    conn: asyncpg.Connection,
    begun: str,
) -> tuple[int, str, str]:
    """Run `ethos args`, send `sig` once `begun` (a query) holds: its exit code, stdout
    and stderr."""
    process = await asyncio.create_subprocess_exec(
        ETHOS, *args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        await wait_for(conn, begun, within=60)
    except BaseException:
        process.kill()
        await process.communicate()
        raise
    process.send_signal(sig)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def rerun(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ETHOS, *args], env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.filled.with_args(pruned_rows)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_an_interrupted_recover_is_recorded_and_a_rerun_finishes_it(
    database_url: str, conn: asyncpg.Connection, sig: int
) -> None:
    env = environment(database_url)
    args = ["recover", "episodic_traces", "--agent", "a"]
    code, out, err = await stopped(
        args, env, sig, conn, "SELECT count(*) > 200 FROM episodic_traces WHERE NOT pruned"
    )
    assert code == 128 + sig, err
    live = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE NOT pruned")
    assert 0 < live < ROWS, "the signal landed after the end: make the run longer"
    # The audit row counts exactly what was committed, and says it was interrupted.
    rows = await conn.fetch("SELECT recovered, status, command FROM recoveries ORDER BY id")
    assert [(r["recovered"], r["status"]) for r in rows] == [(live, "interrupted")]
    # One line on stderr: how far, of what, the audit row, how to finish.
    far = FAR.search(err)
    assert far is not None, err
    assert (int(far[1]), int(far[2])) == (live, ROWS)
    assert "recoveries #" in err and "run the same command again to finish" in err
    assert f"recovered {live} of {ROWS} episodic_traces rows" in out
    assert "Traceback" not in err and "CancelledError" not in err
    assert "\r" not in err  # no progress line off a terminal
    # The rerun brings back the rest, and records it.
    second = rerun(args, env)
    assert second.returncode == 0, second.stderr
    assert f"recovered {ROWS - live} of {ROWS - live} episodic_traces rows" in second.stdout
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE pruned") == 0
    rows = await conn.fetch("SELECT recovered, status FROM recoveries ORDER BY id")
    assert [(r["recovered"], r["status"]) for r in rows] == [
        (live, "interrupted"),
        (ROWS - live, "completed"),
    ]


CUT = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


async def cut_on_the_workers(database_url: str, ended: asyncio.Future[object]) -> None:
    """On a Citus cluster a recovery's batches run on the agent's node, over connections
    of the command's own there: those are cut too, until the command ends. (With the
    coordinator's alone cut, the recovery often finished: a connection cut between two
    of its statements is only opened again.)"""
    workers = []
    try:
        for host, port in (await cluster_nodes(database_url))[1:]:
            workers.append(await asyncpg.connect(node_url(database_url, host, port)))
        async with asyncio.timeout(60):
            while not ended.done():
                for worker in workers:
                    await worker.execute(f"{CUT} AND application_name LIKE 'ethos %'")
                await asyncio.sleep(0.02)
    finally:
        for worker in workers:
            await worker.close()


@pytest.mark.filled.with_args(pruned_rows)
async def test_a_recover_cut_off_from_the_database_records_what_it_committed(
    database_url: str, conn: asyncpg.Connection
) -> None:
    env = environment(database_url)
    args = ["recover", "episodic_traces", "--agent", "a"]
    # The batch of the 1000th row (in id order, as recover goes) waits on this lock, so
    # the command gets that far and no further however fast it runs (on a busy machine
    # it once got through all 3,000 before a cut meant to land after 200).
    held = 1000
    before = (held - 1) // int(BATCH) * int(BATCH)  # the rows of the batches before
    async with conn.transaction():
        await conn.execute(
            # (in a subquery: FOR UPDATE beside OFFSET locks the rows skipped too)
            "SELECT FROM episodic_traces WHERE agent_id = 'a' AND id = (SELECT id"
            " FROM episodic_traces WHERE agent_id = 'a' AND pruned ORDER BY id OFFSET $1"
            " LIMIT 1) FOR UPDATE",
            held - 1,
        )
        process = await asyncio.create_subprocess_exec(
            ETHOS, *args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        await wait_for(
            conn, "SELECT count(*) = $1 FROM episodic_traces WHERE NOT pruned", before, within=60
        )
        # Every connection of the command, cut: the batch in flight is lost with its
        # transaction, the audit row is written on a new connection.
        ended = asyncio.ensure_future(process.communicate())
        await conn.execute(CUT)
        if DISTRIBUTED:
            await cut_on_the_workers(database_url, ended)
        _, err = await asyncio.wait_for(ended, 60)
    live = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE NOT pruned")
    rows = await conn.fetch("SELECT recovered, status FROM recoveries ORDER BY id")
    assert live == before, err
    assert process.returncode == 1, err  # the error, after the line saying how far
    assert [(r["recovered"], r["status"]) for r in rows] == [(live, "interrupted")], err
    assert f"ethos: stopped: recovered {live} of {ROWS} episodic_traces rows" in err.decode()
    second = rerun(args, env)
    assert second.returncode == 0, second.stderr
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE pruned") == 0


@pytest.mark.filled.with_args(live_rows)
async def test_an_interrupted_erase_says_how_far_it_got(
    database_url: str, conn: asyncpg.Connection
) -> None:
    env = environment(database_url)
    args = ["erase", "--agent", "a", "--yes"]
    code, _, err = await stopped(
        args,
        env,
        signal.SIGINT,
        conn,
        "SELECT (counts ->> 'episodic_traces')::int > 200 FROM lifecycle_runs",
    )
    assert code == 130, err
    left = await conn.fetchval("SELECT count(*) FROM episodic_traces")
    run = await conn.fetchrow("SELECT status, counts FROM lifecycle_runs")
    assert run["status"] == "interrupted"
    assert json.loads(run["counts"])["episodic_traces"] == LIVE_ROWS - left
    far = FAR.search(err)
    assert far is not None, err
    assert (int(far[1]), int(far[2])) == (LIVE_ROWS - left, LIVE_ROWS)
    assert "run the same command again to finish" in err
    assert rerun(args, env).returncode == 0
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0


@pytest.mark.filled.with_args(pruned_rows)
async def test_an_interrupted_purge_says_how_far_it_got(
    database_url: str, conn: asyncpg.Connection
) -> None:
    env = environment(database_url)
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    args = ["purge", "--pruned-before", an_hour_ago.isoformat()]
    code, _, err = await stopped(
        args, env, signal.SIGTERM, conn, f"SELECT count(*) < {ROWS - 200} FROM episodic_traces"
    )
    assert code == 143, err
    gone = ROWS - await conn.fetchval("SELECT count(*) FROM episodic_traces")
    run = await conn.fetchrow("SELECT status, counts FROM lifecycle_runs")
    assert run["status"] == "interrupted"
    assert json.loads(run["counts"])["episodic_traces"] == {"decay": gone}
    far = FAR.search(err)
    assert far is not None, err
    assert (int(far[1]), int(far[2])) == (gone, ROWS)
    assert rerun(args, env).returncode == 0
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0


@pytest.mark.filled.with_args(live_rows)
async def test_an_interrupted_sweep_logs_a_warning_and_says_how_far_it_got(
    database_url: str, conn: asyncpg.Connection
) -> None:
    env = environment(database_url)
    # Once batches are committed: a full sweep schedules each row it reads (a new one is
    # due at -infinity). Not half a second after the audit row: on a Citus cluster the
    # sweep visits the shard groups in turn, and the one holding these rows (one agent's)
    # came more than a second after it, the groups before it holding nothing to count.
    code, _, err = await stopped(
        ["sweep", "--full"],
        env,
        signal.SIGINT,
        conn,
        "SELECT count(*) > 200 FROM episodic_traces WHERE due_at > '-infinity'",
    )
    assert code == 130, err
    assert "decay_sweep_interrupted" in err
    assert "decay_sweep_error" not in err and "CancelledError" not in err
    run = await conn.fetchrow("SELECT status, scanned, error FROM sweep_runs")
    assert (run["status"], run["error"]) == ("interrupted", None)
    assert 0 < run["scanned"] < LIVE_ROWS
    far = FAR.search(err)
    assert far is not None, err
    assert (int(far[1]), int(far[2])) == (run["scanned"], LIVE_ROWS)
    assert "sweep_runs #" in err and "run the same command again to finish" in err
