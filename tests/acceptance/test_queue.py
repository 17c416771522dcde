"""Retrievals recorded from plain SQL through ethos_record_retrieval(), and durable
buffers: applied exactly once by the daemon, whatever gets killed on the way."""

from __future__ import annotations

import asyncio
import random
import signal
import sys
import textwrap
from pathlib import Path

import asyncpg
import pytest

from ethos import db
from ethos.domain.errors import TransientDatabaseError
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, LtpSettings, Settings
from tests.acceptance.daemons import DaemonProcess, wait_for

QUEUE_EMPTY = "SELECT NOT EXISTS (SELECT 1 FROM retrieval_queue)"


async def test_eight_psql_sessions_recording_while_daemons_sweep_and_die(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    ids = [
        str(r["id"])
        for r in await conn.fetch(
            "INSERT INTO episodic_traces (agent_id, content) SELECT 'a', 'e' || g"
            " FROM generate_series(1, 200) g RETURNING id"
        )
    ]
    daemons.append(DaemonProcess(database_url, tmp_path, "d1"))
    scripts = []
    for number in range(8):  # 8 × 1,250 = 10,000, in calls of 1, 10 or 100 ids
        rng, lines, recorded = random.Random(number), [], 0
        while recorded < 1250:
            n = min(rng.choice((1, 1, 10, 100)), 1250 - recorded)
            picks = ", ".join(f"'{rng.choice(ids)}'" for _ in range(n))
            lines.append(  # each in the caller's own transaction, spread out in time
                f"BEGIN; SELECT ethos_record_retrieval('episodic_traces', ARRAY[{picks}]::uuid[]);"
                " COMMIT; SELECT pg_sleep(0.002);"
            )
            recorded += n
        scripts.append(tmp_path / f"session{number}.sql")
        scripts[-1].write_text("\n".join(lines) + "\n")
    psql = str(db._pgserver().utils.POSTGRES_VERSIONS[18] / "psql")
    sessions = [
        await asyncio.create_subprocess_exec(
            psql,
            database_url,
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            str(script),
            stdout=asyncio.subprocess.DEVNULL,
        )
        for script in scripts
    ]
    # SIGKILL the daemon once it has applied some: the next one applies the rest.
    await wait_for(conn, "SELECT sum(retrieval_count) > 1000 FROM episodic_traces")
    daemons[0].kill()
    daemons.append(DaemonProcess(database_url, tmp_path, "d2"))
    assert [await session.wait() for session in sessions] == [0] * 8
    await wait_for(conn, QUEUE_EMPTY, within=30)
    total = await conn.fetchval("SELECT sum(retrieval_count) FROM episodic_traces")
    assert total == 10_000
    assert await conn.fetchval("SELECT count(*) FROM sweep_runs WHERE trigger = 'daemon'") > 0


async def test_sql_callers_get_one_line_errors_and_nothing_is_queued(
    conn: asyncpg.Connection,
) -> None:
    with pytest.raises(asyncpg.InvalidParameterValueError, match="unknown table notes: use"):
        await conn.fetchval("SELECT ethos_record_retrieval('notes', ARRAY[gen_random_uuid()])")
    with pytest.raises(asyncpg.InvalidParameterValueError, match="at must be a moment"):
        await conn.fetchval("SELECT ethos_record_retrieval('fact', ARRAY[gen_random_uuid()], NULL)")
    assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 0
    # The short names work too. Each event is named by its memory's agent; an id of no
    # memory (of the agent named, where one is) is left out.
    added = "INSERT INTO semantic_facts (agent_id, content) VALUES ($1, 'x') RETURNING id"
    a, b = [await conn.fetchval(added, agent) for agent in ("a", "b")]
    every = "SELECT ethos_record_retrieval('fact', ARRAY[$1, $2, gen_random_uuid()]::uuid[])"
    assert await conn.fetchval(every, a, b) == 2
    named = "SELECT ethos_record_retrieval('fact', ARRAY[$1, $2]::uuid[], now(), 'a')"
    assert await conn.fetchval(named, a, b) == 1
    assert await conn.fetchval("SELECT backlog FROM ethos_retrieval_queue") == 3
    agents = "SELECT array_agg(agent_id ORDER BY agent_id) FROM retrieval_queue"
    assert await conn.fetchval(agents) == ["a", "a", "b"]


async def test_a_durable_process_killed_before_its_flush_loses_nothing(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    async with Engine(Settings(database=DatabaseSettings(url=database_url))) as engine:
        memory = await engine.add("fact", agent_id="a", content="durable")
    script = tmp_path / "record_and_die.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, os, signal
        from ethos.services.engine import Engine
        from ethos.settings import DatabaseSettings, LtpSettings, Settings

        async def main():
            settings = Settings(database=DatabaseSettings(url={database_url!r}),
                                ltp=LtpSettings(durable=True, flush_interval_seconds=3600))
            engine = await Engine(settings).__aenter__()
            for _ in range(100):
                await engine.record_retrieval("fact", [{str(memory)!r}] * 10)
            print(engine.ltp.stats.queued, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
    """)
    )
    died = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(died.communicate(), 60)
    assert died.returncode == -signal.SIGKILL
    assert out.decode().splitlines()[-1] == "1000"  # all in the queue when recorded
    assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 1000
    assert await conn.fetchval("SELECT retrieval_count FROM semantic_facts") == 0
    # The next daemon (here its engine, which drains the queue) applies all of them.
    settings = Settings(database=DatabaseSettings(url=database_url), ltp=LtpSettings())
    async with Engine(settings, drains_queue=True) as engine:
        await wait_for(conn, QUEUE_EMPTY)
        status = await engine.status(60)
    assert await conn.fetchval("SELECT retrieval_count FROM semantic_facts") == 1000
    assert status.ltp.queue_backlog == 0 and engine.ltp.stats.applied == 1000


@pytest.mark.parametrize("committed", [True, False])
async def test_an_enqueue_whose_answer_never_came_is_applied_once(
    database_url: str, conn: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    """The connection broke around the enqueue's COMMIT: the events went to the memory
    buffer, and where the COMMIT had gone through they were also queued, and applied
    twice. They are buffered under the receipt the enqueue wrote with them now."""
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        ltp=LtpSettings(durable=True, flush_interval_seconds=3600),
    )
    async with Engine(settings, drains_queue=True) as engine:
        memory = await engine.add("fact", agent_id="a", content="in doubt")
        enqueue = engine.store.enqueue

        async def broken(*args: object) -> None:
            if committed:
                await enqueue(*args)  # type: ignore[arg-type]
            raise TransientDatabaseError("connection lost while waiting for the answer")

        monkeypatch.setattr(engine.store, "enqueue", broken)
        await engine.record_retrieval("fact", [memory, memory], agent="a")
        assert engine.ltp.backlog == 2
        assert await engine.ltp.drain_queue()
        await engine.ltp.drain(10)
        assert engine.ltp.backlog == 0
    assert await conn.fetchval("SELECT retrieval_count FROM semantic_facts") == 2
