"""ethos on a PostgreSQL 15 server: the cluster's coordinator with ethos's tables its own,
not distributed (a single-server deployment on a configured URL of a server older than
the embedded 18). The suite's other tests run on 18. PostgreSQL before 17 refuses to
subtract an infinite timestamp, the moment a never-pruned memory is due: the due sweep
grouped its hints by such a difference and failed on every permanent memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import MIGRATED, Copy

T0 = datetime(2026, 6, 1, tzinfo=UTC)


async def test_the_commands_run_on_postgresql_15(cluster_copy: Copy) -> None:
    citus_database = await cluster_copy(MIGRATED)  # (`ethos migrate` made the template on 15)
    conn = await asyncpg.connect(citus_database)
    try:
        assert (await conn.fetchval("SHOW server_version_num")).startswith("15")
    finally:
        await conn.close()
    settings = Settings(database=DatabaseSettings(url=citus_database))
    async with Engine(settings, url=citus_database, check_settings=False) as engine:
        kept = await engine.add(
            "semantic_facts", agent_id="ann", content="ann's birthday is in May",
            policy="permanent", created_at=T0,
        )  # fmt: skip
        brief = await engine.add(
            "episodic_traces", agent_id="ann", content="ann had tea at noon",
            policy="working", created_at=T0,
        )  # fmt: skip
        conn = await asyncpg.connect(citus_database)
        try:  # rows of every policy, and the planner's statistics of them
            await conn.execute(
                """INSERT INTO memory_vectors (agent_id, content, embedding, policy, created_at,
                                               retrieval_count)
                   SELECT 'agent-' || (g % 10), 'note ' || g,
                          array_fill(g::real, ARRAY[384])::vector,
                          (ARRAY['standard', 'working', 'long_term', 'permanent'])[1 + g % 4],
                          $1::timestamptz - g * interval '1 minute', g % 5
                   FROM generate_series(1, 2000) AS g""",
                T0,
            )
            await conn.execute("VACUUM ANALYZE")
        finally:
            await conn.close()
        hits = await engine.recall("ann", "birthday tea", now=T0 + timedelta(minutes=2))
        assert {h.id for h in hits} == {kept, brief}
        await engine.ltp.drain(10)
        assert (await engine.explain("semantic_facts", kept)).retrieval_count == 1
        due = await engine.sweep(now=T0 + timedelta(days=1))
        full = await engine.sweep(now=T0 + timedelta(days=30), mode="full")
        assert (due.status, full.status) == ("completed", "completed")
        assert due.tables["episodic_traces"].pruned == 1  # working memory: hours
        recovered = await engine.recover(
            "episodic_traces", Selector(ids=(brief,)), now=T0 + timedelta(days=31)
        )
        assert [r["id"] for r in recovered.rows] == [str(brief)]
        await engine.forget("episodic_traces", [brief], now=T0 + timedelta(days=32))
        purged = await engine.purge(T0 + timedelta(days=33), now=T0 + timedelta(days=33))
        assert purged.counts["episodic_traces"] == {"manual": 1}
        erased = await engine.erase("ann", dry_run=False)
        assert erased.counts["semantic_facts"] == 1
