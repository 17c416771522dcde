"""LTP on a database distributed by agent (issue 40): searches (which find what they
find on one server, scores and all) recorded, a retrieval
recorded, feedback (useful and wrong) and events through the durable queue strengthen
the same memories and learn the same links as on one server, with nothing set aside;
a flush retried after an in-doubt commit is applied once (its receipt commits with its
writes, on the coordinator and the shards, in one distributed transaction); the hints a
flush writes through the coordinator are made in the transaction ids of the node that
keeps them, by which that node's full sweeps drop old hints.

On the cluster each statement of a flush names one agent, which routes it to the
agent's shard. Before, every flush was refused ("could not run distributed query with
FOR UPDATE/SHARE commands": it locked rows by id across shards) and its events set
aside; then the links' upsert ("functions used in the DO UPDATE SET clause of INSERTs on
distributed tables must be marked IMMUTABLE", then "could not determine data type of
parameter")."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg

from ethos.domain.tables import table_spec
from ethos.services.engine import Engine
from ethos.services.ltp_flush import Events, apply_retrievals
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import (
    AGENTS,
    AT_ONCE,
    AT_ONCE_DISTRIBUTED,
    MADE,
    MEMORIES_DISTRIBUTED,
    TABLES,
    Copy,
    direction,
    side_by_side,
    with_database,
)

MEMORY = """SELECT agent_id, content, retrieval_count, useful_count, wrong_count, surfaced_count,
                   round(strength::numeric, 9) AS strength, round(salience::numeric, 9) AS salience,
                   policy, anchor_at, last_retrieved_at, due_at, prune_at, pruned, prune_reason
            FROM {table} ORDER BY agent_id, content"""
LINKS = """SELECT l.agent_id, a.content AS a, b.content AS b, round(l.weight::numeric, 9) AS weight,
                  l.weighted_at, l.co_retrievals, l.useful_count, l.wrong_count, l.fades_at
           FROM memory_links AS l
           JOIN ethos_memories AS a ON a.agent_id = l.agent_id AND a.id = l.a_id
           JOIN ethos_memories AS b ON b.agent_id = l.agent_id AND b.id = l.b_id
           ORDER BY 1, 2, 3"""


def day(n: float) -> Any:
    return MADE + timedelta(days=n)


async def ids_by_content(conn: asyncpg.Connection, table: str) -> dict[str, uuid.UUID]:
    return {r["content"]: r["id"] for r in await conn.fetch(f"SELECT id, content FROM {table}")}


async def retrieve(engine: Engine, url: str) -> dict[str, Any]:
    """The same retrievals, in the same order, at the same moments: what they found, and
    the LTP counts."""
    found = []
    for agent in AGENTS:
        for hits in (
            await engine.recall(agent, "sailed northern lake", now=day(1)),
            await engine.nearest(agent, direction(3), k=4, now=day(2)),
        ):
            found.append([(h.table, h.content, round(h.score, 9)) for h in hits])
    conn = await asyncpg.connect(url)
    try:
        episodes = await ids_by_content(conn, "episodic_traces")
        facts = await ids_by_content(conn, "semantic_facts")
        await engine.record_retrieval(
            "episode", [episodes["alice rowed 1 miles"], episodes["alice rowed 2 miles"]],
            now=day(3),
        )  # fmt: skip
        await engine.feedback(
            "episode", [episodes["bob sailed the northern lake"], episodes["where did bob sail?"]],
            "useful", now=day(4),
        )  # fmt: skip
        await engine.feedback("fact", [facts["carol keeps owls"]], "wrong", now=day(4))
        await engine.ltp.drain(30)
        # the durable path: plain SQL queues, a drain applies
        await conn.execute(
            "SELECT ethos_record_retrieval('fact', $1, $2)",
            [facts["alice fears storms"], facts["a copied fact, number 3"]], day(5),
        )  # fmt: skip
    finally:
        await conn.close()
    assert await engine.ltp.drain_queue()
    stats = engine.ltp.stats
    return {
        "applied": stats.applied, "links": stats.links,
        "set_aside": stats.set_aside, "dropped": stats.dropped, "skipped": stats.skipped,
        "found": found,
    }  # fmt: skip


async def state(url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        found: dict[str, Any] = {
            table: [dict(r) for r in await conn.fetch(MEMORY.format(table=table))]
            for table in TABLES
        }
        found["links"] = [dict(r) for r in await conn.fetch(LINKS)]
        found["dead letters"] = await conn.fetch("SELECT reason FROM retrieval_dead_letters")
        return found
    finally:
        await conn.close()


async def test_ltp_writes_what_it_writes_on_one_server(cluster_copy: Copy) -> None:
    single, citus_database = await cluster_copy(AT_ONCE), await cluster_copy(AT_ONCE_DISTRIBUTED)
    counts = await side_by_side(single, citus_database, retrieve)
    assert counts[0] == counts[1]  # what the searches found too, scores and all
    assert all(counts[1]["found"])
    assert counts[1]["applied"] > 10 and counts[1]["links"] > 0
    assert counts[1]["set_aside"] == counts[1]["dropped"] == 0
    ours, theirs = await state(single), await state(citus_database)
    for key in ours:
        assert ours[key] == theirs[key], key
    assert theirs["dead letters"] == []
    facts = {(r["agent_id"], r["content"]): r for r in theirs["semantic_facts"]}
    assert facts["alice", "alice fears storms"]["retrieval_count"] == 1
    assert facts["carol", "carol keeps owls"]["wrong_count"] == 1


async def test_a_retried_flush_is_applied_once_on_the_cluster(cluster_copy: Copy) -> None:
    citus_database = await cluster_copy(MEMORIES_DISTRIBUTED)
    settings = Settings(database=DatabaseSettings(url=citus_database))
    conn = await asyncpg.connect(citus_database)
    try:
        episodes = await ids_by_content(conn, "episodic_traces")
        spec = table_spec("episode")
        pending = {  # two agents, two shards
            (spec, episodes["alice rowed 0 miles"], None): {day(1): Events(retrievals=2, units=2)},
            (spec, episodes["bob walked 1 hills"], "bob"): {day(1): Events(retrievals=1, units=1)},
        }
        async with Engine(settings, url=citus_database, check_settings=False) as engine:
            flush = uuid.uuid4()
            first = await apply_retrievals(engine.store, pending, flush)
            again = await apply_retrievals(engine.store, pending, flush)
        assert (first.applied, first.replayed) == (3, False)
        assert (again.applied, again.replayed) == (3, True)
        counts = await conn.fetch(
            "SELECT content, retrieval_count FROM episodic_traces WHERE content = ANY ($1)",
            ["alice rowed 0 miles", "bob walked 1 hills"],
        )
        assert {r["content"]: r["retrieval_count"] for r in counts} == {
            "alice rowed 0 miles": 2, "bob walked 1 hills": 1,
        }  # fmt: skip
    finally:
        await conn.close()


NEXT_ID = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
HINT_NODES = """SELECT h.made::text::bigint AS made, s.nodename AS host, s.nodeport AS port
                FROM episodic_traces_due AS h
                JOIN citus_shards AS s ON s.shardid = get_shard_id_for_distribution_column(
                    'episodic_traces_due', h.agent_id)
                WHERE h.at = $1"""


async def test_a_flush_hints_in_the_ids_of_the_node_that_keeps_them(cluster_copy: Copy) -> None:
    """Migration 0051: a column default was computed on the coordinator, whose
    transaction ids mean nothing on a worker, and a worker's full sweep dropped the hints
    of the rows retrieved while it ran (test_due_sweeps on the cluster: 57 rows unhinted)."""
    citus_database = await cluster_copy(MEMORIES_DISTRIBUTED)
    settings = Settings(database=DatabaseSettings(url=citus_database))
    conn = await asyncpg.connect(citus_database)
    nodes = {
        (r["nodename"], r["nodeport"]): await asyncpg.connect(
            with_database(f"postgresql://postgres@{r['nodename']}:{r['nodeport']}", "postgres")
        )
        for r in await conn.fetch("SELECT DISTINCT nodename, nodeport FROM citus_shards")
    }
    try:
        episodes = await ids_by_content(conn, "episodic_traces")
        chosen = [episodes[f"{agent} sailed the northern lake"] for agent in AGENTS]
        before = {node: await c.fetchval(NEXT_ID) for node, c in nodes.items()}
        async with Engine(settings, url=citus_database, check_settings=False) as engine:
            await engine.record_retrieval("episode", chosen, now=day(5))
            await engine.ltp.drain(30)
        after = {node: await c.fetchval(NEXT_ID) for node, c in nodes.items()}
        hints = await conn.fetch(HINT_NODES, day(5))
        assert len({(h["host"], h["port"]) for h in hints}) == 2  # three agents, both workers
        for hint in hints:
            node = (hint["host"], hint["port"])
            assert before[node] <= hint["made"] < after[node], (node, before, after, hint["made"])
    finally:
        await conn.close()
        for c in nodes.values():
            await c.close()
