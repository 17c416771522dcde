"""The lifecycle on a database distributed by agent (issue 40): forget, recover (by ids
and by reason, naming no agent), purge and erase write what they write on one server,
and leave every live row hinted in time and nothing of an erased agent.

On the cluster a statement that locks rows names their agent: a recovery naming no
agent recovers the matching agents' rows one agent after another. Before, a recovery by
ids was refused ("could not run distributed query with FOR UPDATE/SHARE commands"); a
hard delete's trigger ("cannot execute a distributed query from a query on a shard":
the statistics' DELETE named its agents by a join only, migration 0048); an erase's hints
("cannot push down this subquery")."""

from __future__ import annotations

from typing import Any

import asyncpg

from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from tests.citus.cluster import (
    AT_ONCE,
    AT_ONCE_DISTRIBUTED,
    DIMENSION,
    MADE,
    TABLES,
    Copy,
    direction,
    side_by_side,
)
from tests.citus.test_ltp import day, ids_by_content
from tests.citus.test_sweep import state


async def lifecycle(engine: Engine, url: str) -> list[Any]:
    conn = await asyncpg.connect(url)
    try:
        episodes = await ids_by_content(conn, "episodic_traces")
    finally:
        await conn.close()
    forgotten = ["alice rowed 0 miles", "bob walked 1 hills", "carol walked 2 hills"]
    done: list[Any] = []
    report = await engine.forget("episode", [episodes[c] for c in forgotten], now=day(1))
    done.append(report.counts)
    await engine.sweep(now=day(200))
    recovered = await engine.recover(
        "episode", Selector(ids=(episodes["alice rowed 0 miles"], episodes["bob walked 1 hills"])),
        now=day(201),
    )  # fmt: skip
    done.append(sorted(r["content"] for r in recovered.rows))
    by_reason = await engine.recover("fact", Selector(reason="decay"), now=day(202))
    done.append(sorted(r["content"] for r in by_reason.rows))
    purged = await engine.purge(day(199), now=day(203))
    done.append(purged.counts)
    erased = await engine.erase("bob", dry_run=False)
    done.append(erased.counts)
    return done


async def test_the_lifecycle_writes_what_it_writes_on_one_server(cluster_copy: Copy) -> None:
    single, citus_database = await cluster_copy(AT_ONCE), await cluster_copy(AT_ONCE_DISTRIBUTED)
    reports = await side_by_side(single, citus_database, lifecycle)
    assert reports[0] == reports[1]
    forgot, recovered, by_reason, purged, erased = reports[1]
    assert forgot == {"episodic_traces": {"manual": 3}}
    assert recovered == ["alice rowed 0 miles", "bob walked 1 hills"]
    assert purged["episodic_traces"] == {"manual": 1}  # carol's: the others came back
    assert len(by_reason) > 3 and sum(erased.values()) > 10
    ours, theirs = await state(single), await state(citus_database)
    for key in ours:
        assert ours[key] == theirs[key], key
        if key.endswith("unhinted"):
            assert theirs[key] == [], key
    conn = await asyncpg.connect(citus_database)
    try:
        for table in TABLES:
            left = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE agent_id = 'bob'")
            hints = await conn.fetchval(f"SELECT count(*) FROM {table}_due WHERE agent_id = 'bob'")
            assert (left, hints) == (0, 0), table
    finally:
        await conn.close()


async def merge_near(engine: Engine, url: str) -> list[Any]:
    """Exact duplicates that plain SQL inserted (two agents) and near duplicates of three
    agents (a vector and its copy nudged; two vectors of episodes, whose merge merges the
    episodes and points the vectors at the survivor), merged."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            """INSERT INTO semantic_facts (agent_id, content, created_at)
               VALUES ('alice', 'a twice', $1), ('alice', 'a twice', $1),
                      ('bob', 'b twice', $1), ('bob', 'b twice', $1)""",
            MADE,
        )
    finally:
        await conn.close()
    for agent in ("alice", "bob", "carol"):
        for i, nudge in ((20, 0.0), (20, 1e-4), (30, 0.0), (30, 2e-4)):
            vector = direction(i)
            vector[2] += nudge
            await engine.add(
                "vector", agent_id=agent, content=f"{agent} {i} {nudge}", embedding=vector
            )
        for nudge in (0.0, 1e-4):  # episodes by their embeddings
            await engine.add(
                "episode", agent_id=agent, content=f"{agent} saw {nudge}",
                embedding=[nudge, -20.0] + [0.25] * (DIMENSION - 2),
            )  # fmt: skip
    exact = await engine.merge(now=day(2))
    near = await engine.merge(near=True, now=day(2))
    return [exact.counts, near.counts]


async def test_duplicates_merge_as_on_one_server(cluster_copy: Copy) -> None:
    """On the cluster each shard group is searched for near duplicates on its node
    (Citus refused the search's lateral join on the distributed table), and each agent's
    groups merge there (it refused the merge's lock of rows across shards)."""
    single, citus_database = await cluster_copy(AT_ONCE), await cluster_copy(AT_ONCE_DISTRIBUTED)
    merged = await side_by_side(single, citus_database, merge_near)
    assert merged[0] == merged[1]
    exact, near = merged[1]
    assert exact["semantic_facts"]["merged"] == 2 and near["near"]["merged"] >= 9
    assert near["near"]["episodic_traces_merged"] == 3
    ours, theirs = await state(single), await state(citus_database)
    for key in ours:  # (which of two equal duplicates survives follows their ids: any)
        assert sorted(map(repr, ours[key])) == sorted(map(repr, theirs[key])), key
