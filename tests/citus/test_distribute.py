"""`ethos distribute` (issue 40): on a Citus coordinator, a migrated database with its
memories distributed by agent in place, in one command; run again, it converges. The
due tables' hints named places and rows of any agent on one server: they are made again
on each shard from its rows' own moments. On a server without Citus the command says
so and changes nothing."""

from __future__ import annotations

import json

import asyncpg
import pytest

from ethos.db.store import core
from ethos.db.store.sql.cluster import DISTRIBUTED, REFERENCE
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import MEMORIES, MIGRATED, TABLES, Copy
from tests.conftest import Cli


def test_distribute_needs_a_citus_coordinator(cli: Cli, database_url: str) -> None:
    result = cli("distribute", env={"ETHOS_DATABASE__URL": database_url})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "ethos: error: this server has no Citus: `ethos distribute` needs a coordinator"
    ]


async def test_distribute_in_place_converges(cli: Cli, cluster_copy: Copy) -> None:
    citus_database = await cluster_copy(MEMORIES)
    env = {"ETHOS_DATABASE__URL": citus_database}
    first = cli("distribute", "--json", env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    done = json.loads(first.stdout)
    assert done["distributed"] == list(DISTRIBUTED)
    assert done["reference"] == list(REFERENCE) and done["already"] == []
    assert done["workers"] == 2 and done["planned_each_call"]
    again = json.loads(cli("distribute", "--json", env=env, timeout=300).stdout)
    assert again["distributed"] == again["reference"] == again["planned_each_call"] == []
    assert sorted(again["already"]) == sorted([*REFERENCE, *DISTRIBUTED])
    assert again["hinted"] == done["hinted"]

    conn = await asyncpg.connect(citus_database)
    try:
        shard = "get_shard_id_for_distribution_column($1, agent_id)"
        for table in TABLES:
            rows = {
                r["id"]: r
                for r in await conn.fetch(
                    f"""SELECT id, ctid AS place, {shard} AS shard, due_at, prune_at
                        FROM {table} WHERE NOT pruned""",
                    table,
                )
            }
            hints = await conn.fetch(
                f"SELECT {shard} AS shard, prune, ids, places FROM {table}_due", table
            )
            hinted = set()
            for hint in hints:  # each in its rows' shard, at their places there
                for id_, place in zip(hint["ids"], hint["places"], strict=True):
                    assert (rows[id_]["shard"], rows[id_]["place"]) == (hint["shard"], place)
                    hinted.add((hint["prune"], id_))
            # every moment of every live row hinted, and nothing else
            moments = {
                (prune, id_)
                for id_, r in rows.items()
                for prune, at in ((False, r["due_at"]), (True, r["prune_at"]))
                if at is not None
            }
            assert hinted == moments and sum(len(h["ids"]) for h in hints) == len(moments)
            assert done["hinted"][table] == len(moments) > 0
    finally:
        await conn.close()


async def test_an_engine_open_before_distribute_routes_after_it(
    cli: Cli, cluster_copy: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine read once whether the tables were distributed: one opened before
    `ethos distribute` kept writing statements for one server, and Citus refused its LTP
    flushes (a lock across shards), whose events were set aside for good. Now it reads
    again (core.DISTRIBUTION_RECHECK_SECONDS), and a flush refused before it has read
    again (one statement naming two agents, whose rows lie in two shards) is retried,
    routed."""
    # (no reading again on its own before the flush: the refused flush must see it)
    monkeypatch.setattr(core, "DISTRIBUTION_RECHECK_SECONDS", 3600.0, raising=False)
    citus_database = await cluster_copy(MIGRATED)
    settings = Settings(database=DatabaseSettings(url=citus_database))
    async with Engine(settings) as engine:
        memory = await engine.add("fact", agent_id="alice", content="alice keeps owls")
        other = await engine.add("fact", agent_id="bob", content="bob keeps bees")
        assert not await engine.store.distributed()
        done = cli("distribute", env={"ETHOS_DATABASE__URL": citus_database}, timeout=300)
        assert done.returncode == 0, done.stderr
        await engine.record_retrieval("fact", [memory], agent="alice")
        await engine.record_retrieval("fact", [other], agent="bob")
        await engine.feedback("fact", [memory], "useful", agent="alice")
        await engine.ltp.drain(30)
        stats = engine.ltp.stats
        assert (stats.applied, stats.set_aside, stats.dropped) == (3, 0, 0)
        assert await engine.store.distributed()
        report = await engine.sweep(mode="full")
        assert report.status == "completed" and report.totals()[0] >= 1
    conn = await asyncpg.connect(citus_database)
    try:
        counts = "SELECT retrieval_count, useful_count FROM semantic_facts WHERE id = $1"
        assert tuple(await conn.fetchrow(counts, memory)) == (2, 1)
    finally:
        await conn.close()
