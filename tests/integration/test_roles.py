"""The least-privilege role in runbooks/operations.md is enough to run ethos."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from ethos.engine import Engine
from ethos.errors import DatabaseError
from ethos.recovery import Selector
from ethos.settings import DatabaseSettings, Settings

RUNBOOK = Path(__file__).resolve().parents[2] / "runbooks" / "operations.md"


def role_sql() -> str:
    section = RUNBOOK.read_text().split("## A least-privilege role", 1)[1]
    match = re.search(r"```sql\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


async def test_the_documented_grants_run_ethos(
    database_url: str, conn: asyncpg.Connection, t0: datetime
) -> None:
    name = await conn.fetchval("SELECT current_database()")
    # Roles are cluster-wide: the runbook's names, made unique to this database.
    sql = role_sql()
    for role in ("app", "owner", "eraser"):
        sql = sql.replace(f"ethos_{role}", f"{name}_{role}")
    await conn.execute(sql.replace("DATABASE ethos", f"DATABASE {name}"))
    app_url = database_url.replace("postgresql://postgres:", f"postgresql://{name}_app:", 1)
    try:
        async with Engine(Settings(database=DatabaseSettings(url=app_url))) as engine:
            memory = await engine.add("episode", agent_id="a", content="x", created_at=t0)
            await engine.record_retrieval("episode", [memory], now=t0 + timedelta(days=1))
            await engine.ltp.drain(5)
            assert engine.ltp.stats.applied == 1
            await engine.sweep(now=t0 + timedelta(days=400))
            report = await engine.recover("episode", Selector(ids=(memory,)))
            assert len(report.rows) == 1
            await engine.store.heartbeat(
                "d", host="h", pid=1, role="leader", next_sweep_due=None, ltp_backlog=0,
                ltp_dropped=0,
            )  # fmt: skip
            assert (await engine.stats())["counts"] == [
                {"table_name": "episodic_traces", "live": 1, "pruned": 0, "pinned": 0}
            ]
            await engine.store.forget_ltp_flushes()
            # retrievals from plain SQL, queued and drained as the app role
            app = await asyncpg.connect(app_url)
            try:
                await app.fetchval(
                    "SELECT ethos_record_retrieval('episode', ARRAY[$1::uuid])", memory
                )
            finally:
                await app.close()
            assert await engine.ltp.drain_queue()
            assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 0
            await engine.consolidate()
            await engine.forget("episode", [memory])
            with pytest.raises(DatabaseError, match="permission denied"):
                await engine.purge(await engine.now())
            await engine.assign_policy("a", "long_term")
            with pytest.raises(DatabaseError, match="erase needs DELETE on memory_vectors, epi"):
                await engine.erase("a", dry_run=False)
        # A refused erase deleted nothing, and its audit row says so.
        assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 1
        assert await conn.fetchval("SELECT count(*) FROM agent_policies") == 1
        run = await conn.fetchrow(
            "SELECT status, counts FROM consolidation_runs WHERE kind = 'erase'"
        )
        assert run["status"] == "failed"
        assert set(json.loads(run["counts"]).values()) == {0}
        eraser_url = app_url.replace(f"{name}_app:", f"{name}_eraser:", 1)
        async with Engine(Settings(database=DatabaseSettings(url=eraser_url))) as engine:
            report = await engine.erase("a", dry_run=False)
            assert report.counts["episodic_traces"] == 1
        # and nothing can be hard-deleted
        app = await asyncpg.connect(app_url)
        try:
            denied = await app.fetchval(
                "SELECT has_table_privilege(current_user, 'episodic_traces', 'DELETE')"
            )
        finally:
            await app.close()
        assert denied is False
    finally:
        await conn.execute(
            f"DROP OWNED BY {name}_app, {name}_eraser; DROP ROLE {name}_eraser;"
            f" DROP ROLE {name}_app; DROP ROLE {name}_owner"
        )
