"""Sweeps on a database distributed by agent (issue 40): each shard group is swept on the
node that holds it, against its shards (ethos.db.store.sweep.ShardSweep), and writes
what one server's sweep writes. The same memories in two databases of the cluster, one
distributed in place after the adds, swept at the same moments (due, full, prune, one
agent's), come out equal: salience, prunes and their reasons, the schedule; every live
row stays hinted no later than it is due (never late).

Before, every sweep failed on the cluster: "Recursively planned distributed
modifications with ctid on where clause are not supported"."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import asyncpg

from ethos.services.engine import Engine
from ethos.services.sweep import Mode
from ethos.settings import DatabaseSettings, DecaySettings, Settings
from tests.citus.cluster import AT_ONCE, AT_ONCE_DISTRIBUTED, DISTRIBUTED, MADE, TABLES, Copy
from tests.integration.test_http_bounds import AGENT_SHARDS, tables_locked

# (mode, days after the adds, the agent swept alone)
SWEEPS: tuple[tuple[Mode, float, str | None], ...] = (
    ("due", 0.5, None),
    ("due", 2, None),
    ("full", 3, None),
    ("prune", 4, None),
    ("due", 6, "alice"),
    ("due", 9, None),
    ("full", 30, None),
    ("due", 400, None),
)
STATE = """SELECT id, agent_id, content, round(salience::numeric, 9) AS salience, pruned,
                  pruned_at, prune_reason, due_at, prune_at,
                  extract(epoch FROM due_at) AS due, extract(epoch FROM prune_at) AS prune
           FROM {table} ORDER BY agent_id, content"""
HINTS = "SELECT prune, extract(epoch FROM at) AS at, ids FROM {table}_due"


def unhinted(rows: list[dict[str, Any]], hints: list[asyncpg.Record]) -> list[str]:
    """The live rows whose write or prune is scheduled with no hint of it at or before
    its moment: those a due sweep would be late for."""
    earliest: dict[tuple[bool, Any], Any] = {}
    for hint in hints:
        for id_ in hint["ids"]:
            key = (hint["prune"], id_)
            earliest[key] = min(earliest.get(key, hint["at"]), hint["at"])
    late = []
    for row in rows:
        for prune, moment in ((False, row["due"]), (True, row["prune"])):
            hinted = earliest.get((prune, row["id"]))
            if not row["pruned"] and moment is not None and (hinted is None or hinted > moment):
                late.append(row["content"])
    return late


async def state(url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        found: dict[str, Any] = {}
        for table in TABLES:
            rows = [dict(r) for r in await conn.fetch(STATE.format(table=table))]
            hints = await conn.fetch(HINTS.format(table=table))
            found[f"{table} unhinted"] = unhinted(rows, hints)
            found[table] = [
                {k: v for k, v in r.items() if k not in ("id", "due", "prune")} for r in rows
            ]
        return found
    finally:
        await conn.close()


async def test_sweeps_write_what_they_write_on_one_server(cluster_copy: Copy) -> None:
    # distributed in place: its hints made again on the shards
    single, citus_database = await cluster_copy(AT_ONCE), await cluster_copy(AT_ONCE_DISTRIBUTED)
    engines = []
    for url in (single, citus_database):
        # small batches: a shard group takes several, as a large table does
        settings = Settings(database=DatabaseSettings(url=url), decay=DecaySettings(batch_size=7))
        engines.append(Engine(settings, url=url, check_settings=False))
    async with engines[0] as one, engines[1] as many:
        groups = await many.store.sweep_parts(None)
        assert len({part.node for part in groups}) == 2  # both workers sweep
        assert len(await many.store.sweep_parts("alice")) == 1
        pruned: list[int] = []
        for mode, days, agent in SWEEPS:
            at = MADE + timedelta(days=days)
            reports = [
                await engine.sweep(now=at, mode=mode, agent=agent, trigger="manual")
                for engine in (one, many)
            ]
            assert [r.status for r in reports] == ["completed"] * 2
            assert reports[0].tables == reports[1].tables, (mode, days)
            ours, theirs = await state(single), await state(citus_database)
            for key in ours:
                assert ours[key] == theirs[key], (mode, days, key)
                if key.endswith("unhinted"):
                    assert theirs[key] == [], (mode, days, key)
            pruned.append(sum(r["pruned"] for r in theirs["episodic_traces"]))
        # the sweeps met live rows, pruned some and then the rest
        assert any(0 < n < len(theirs["episodic_traces"]) for n in pruned), pruned


async def test_a_due_sweep_visits_only_the_shard_groups_with_something_due(
    cluster_copy: Copy,
) -> None:
    # Each visit of a shard group costs its round trips whatever it holds: a sweep every
    # hour over 30 days took 0.2 s a sweep on this cluster's 32 groups.
    citus_database = await cluster_copy(DISTRIBUTED)
    settings = Settings(database=DatabaseSettings(url=citus_database))
    async with Engine(settings, url=citus_database, check_settings=False) as engine:
        await engine.add("episode", agent_id="alice", content="tea at noon")
        coordinator = await asyncpg.connect(citus_database)
        try:
            alice = (await coordinator.fetchrow(AGENT_SHARDS, "alice"))["names"]
            others = [f"idle {i}" for i in range(50)]
            groups = [(await coordinator.fetchrow(AGENT_SHARDS, a))["names"] for a in others]
            idle = next(a for a, names in zip(others, groups, strict=True) if names != alice)
        finally:
            await coordinator.close()
        # Another group's memory tables locked on their node: a visit would wait there.
        async with tables_locked(citus_database, idle, distributed=True):
            report = await asyncio.wait_for(engine.sweep(mode="due", trigger="manual"), timeout=30)
    assert report.status == "completed"
    assert report.tables["episodic_traces"].scanned == 1
