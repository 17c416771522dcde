"""A daemon serving /metrics and /healthz, scraped as Prometheus would."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from prometheus_client.parser import text_string_to_metric_families

from ethos import db
from ethos.settings import Settings
from tests.acceptance.daemons import DaemonProcess, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def get(port: int, path: str) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    answer = (await asyncio.wait_for(reader.read(), 10)).decode()
    writer.close()
    head, _, body = answer.partition("\r\n\r\n")
    return int(head.split()[1]), body


async def listening(port: int) -> None:
    for _ in range(300):
        try:
            await get(port, "/healthz")
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError("the metrics endpoint never answered")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_the_counters_match_sweep_runs(
    database_url: str, conn: asyncpg.Connection, daemons: list[DaemonProcess], tmp_path: Path
) -> None:
    old = datetime.now(UTC) - timedelta(days=400)
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content, created_at)"
        " SELECT 'a', 'e' || g, $1 FROM generate_series(1, 30) g",
        old,
    )
    await conn.execute("INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'fresh')")
    await conn.execute(
        "INSERT INTO memory_vectors (agent_id, content, embedding, expires_at)"
        " VALUES ('a', 'gone', array_fill(0.1, ARRAY[384])::vector, now() - interval '1 hour')"
    )
    port = free_port()
    listen = {"ETHOS_METRICS__LISTEN": f"127.0.0.1:{port}"}
    daemons.append(
        DaemonProcess(database_url, tmp_path, "d1", ETHOS_DAEMON__INTERVAL_SECONDS="3", **listen)
    )
    await listening(port)
    done = "SELECT count(*) FROM sweep_runs WHERE trigger = 'daemon' AND mode = 'due'" \
           " AND status = 'completed'"  # fmt: skip
    await wait_for(conn, f"SELECT ({done}) >= 2", within=20)
    status, text = await get(port, "/metrics")
    runs = await conn.fetchval(done)
    pruned = await conn.fetchval("SELECT sum(pruned) FROM sweep_runs WHERE trigger = 'daemon'")
    assert status == 200
    found = samples(text)
    swept = found[("ethos_sweeps_total", (("mode", "due"), ("outcome", "completed"),
                                          ("trigger", "daemon")))]  # fmt: skip
    assert swept == runs == 2
    by_decay = (("reason", "decay"), ("table", "episodic_traces"))
    by_expiry = (("reason", "expired"), ("table", "memory_vectors"))
    assert found[("ethos_rows_pruned_total", by_decay)] == 30
    assert found[("ethos_rows_pruned_total", by_expiry)] == 1
    assert pruned == 31
    assert found[("ethos_leader_lock_held", ())] == 1
    assert found[("ethos_ltp_backlog", (("buffer", "queue"),))] == 0
    assert 0 <= found[("ethos_last_sweep_age_seconds", ())] < 10
    assert ("ethos_sweep_duration_seconds_count", (("mode", "due"),)) in found
    assert ("ethos_memories", (("state", "live"), ("table", "episodic_traces"))) in found
    assert found[("ethos_retrievals_total", (("outcome", "dropped"),))] == 0
    assert found[("ethos_retrieval_dead_letters", ())] == 0
    assert json.loads((await get(port, "/healthz"))[1])["status"] == "ok"
    await conn.execute(
        "INSERT INTO retrieval_dead_letters (agent_id, table_name, memory_id, at, kind,"
        " enqueued_at, reason)"
        " VALUES ('a', 'semantic_facts', ethos_uuid_v7(), now(), 'retrieval', now(), 'x')"
    )
    status, body = await get(port, "/healthz")
    assert status == 200 and json.loads(body)["status"] == "degraded"
    assert samples((await get(port, "/metrics"))[1])[("ethos_retrieval_dead_letters", ())] == 1
    assert (await get(port, "/nope"))[0] == 404


async def test_healthz_follows_the_database(tmp_path: Path, daemons: list[DaemonProcess]) -> None:
    data_dir = tmp_path / "pg"
    url = db.embedded_uri(data_dir, "postgres")
    await asyncio.to_thread(db.migrate, Settings(), url)
    port = free_port()
    try:
        daemons.append(
            DaemonProcess(url, tmp_path, "d1", ETHOS_METRICS__LISTEN=f"127.0.0.1:{port}")
        )
        await listening(port)
        conn = await asyncpg.connect(url)
        await wait_for(conn, "SELECT count(*) >= 1 FROM sweep_runs WHERE status = 'completed'")
        await conn.close()
        status, body = await get(port, "/healthz")
        assert (status, json.loads(body)["role"]) == (200, "leader")
        db.stop_embedded(data_dir)
        started = time.monotonic()
        while (await get(port, "/healthz"))[0] != 503:
            assert time.monotonic() - started < 5, "still healthy without a database"
            await asyncio.sleep(0.1)
        status, body = await get(port, "/healthz")
        assert body.count("\n") == 1 and json.loads(body)["reason"].startswith("database:")
        db.embedded_uri(data_dir)
        started = time.monotonic()
        while (await get(port, "/healthz"))[0] != 200:
            assert time.monotonic() - started < 15, "not healthy again after the database"
            await asyncio.sleep(0.2)
    finally:
        db.stop_embedded(data_dir)
