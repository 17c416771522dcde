"""Adds on a database distributed by agent write what they write on one server (issue 40):
the same adds, through the engine, plain SQL of many agents at once and COPY, into two
databases of the cluster, one of them distributed. The memories (policies, automatic
importance with an answer counted answer-fold and a vector's particularity, derived
text), the statistics and the sweep's hints come out equal; each hint lies in the shard
of the rows it names, at their places there (the sweep finds a row moved since by id).

Before the write path named the agents of the rows added in every statement, each add
failed on the cluster ("could not create distributed plan", then "could not run
distributed query with complex table expressions" and, for vectors, "STABLE functions
used in UPDATE queries cannot be called with column references"). A bulk load into one
shard failed until migration 0051 (its statistics' ANALYZE went to every shard)."""

from __future__ import annotations

from typing import Any

import asyncpg

from tests.citus.cluster import (
    DISTRIBUTED,
    MEMORIES,
    MEMORIES_DISTRIBUTED,
    MIGRATED,
    TABLES,
    Copy,
    add_memories,
)

MEMORY_ROWS = """SELECT id, agent_id, content, policy, importance, auto_importance, auto_answer,
                     auto_particularity, content_key, content_tsv::text AS words, salience,
                     strength, pruned
              FROM {table} ORDER BY agent_id, content"""
STATISTICS = (
    "SELECT * FROM lexeme_stats ORDER BY agent_id, lexeme",
    "SELECT * FROM agent_text_stats ORDER BY agent_id",
    """SELECT agent_id, vectors, round(vector_norm(total)::numeric, 6) AS norm
       FROM agent_vector_stats ORDER BY agent_id""",
    # (SQL for other uses, runbooks/recall.md: Citus refused it as an SQL function)
    """SELECT agent, ethos_text_idf(agent, to_tsvector('english', 'storms sailed lake')) AS idf
       FROM unnest(ARRAY['alice', 'bob', 'nobody']) AS agent ORDER BY agent""",
)


async def written(url: str) -> dict[str, Any]:
    """What the adds wrote, without the ids (each database made its own), and the hints:
    for each table, the (kind, moment, content) of each row hinted."""
    conn = await asyncpg.connect(url)
    try:
        found: dict[str, Any] = {}
        for table in TABLES:
            rows = [dict(r) for r in await conn.fetch(MEMORY_ROWS.format(table=table))]
            contents = {r.pop("id"): r["content"] for r in rows}
            found[table] = rows
            hints = await conn.fetch(f"SELECT prune, at, ids FROM {table}_due")
            found[f"{table} hints"] = sorted(
                (h["prune"], str(h["at"]), contents[i]) for h in hints for i in h["ids"]
            )
        for query in STATISTICS:
            found[query] = [dict(r) for r in await conn.fetch(query)]
        return found
    finally:
        await conn.close()


async def test_adds_write_what_they_write_on_one_server(cluster_copy: Copy) -> None:
    single, citus_database = await cluster_copy(MIGRATED), await cluster_copy(DISTRIBUTED)
    for url in (single, citus_database):
        await add_memories(url)
    one, many = await written(single), await written(citus_database)
    assert one.keys() == many.keys()
    for key in one:
        assert one[key] == many[key], key
    facts = {(r["agent_id"], r["content"]): r for r in many["semantic_facts"]}
    assert facts["alice", "alice keeps owls"]["auto_particularity"] > 1  # the vector raised it
    episodes = {(r["agent_id"], r["content"]): r for r in many["episodic_traces"]}
    assert episodes["bob", "bob sailed the northern lake"]["auto_answer"] == 4.0
    assert len(many["episodic_traces hints"]) == 2 * len(many["episodic_traces"])


async def test_each_hint_lies_in_the_shard_of_its_rows(cluster_copy: Copy) -> None:
    citus_database = await cluster_copy(DISTRIBUTED)
    await add_memories(citus_database)
    conn = await asyncpg.connect(citus_database)
    try:
        shard = "get_shard_id_for_distribution_column($1, {})"
        for table in TABLES:
            rows = {
                r["id"]: r
                for r in await conn.fetch(
                    f"""SELECT id, ctid AS place, {shard.format("agent_id")} AS shard,
                               auto_particularity IS NOT NULL AS moved FROM {table}""",
                    table,
                )
            }
            hints = await conn.fetch(
                f"SELECT {shard.format('agent_id')} AS shard, ids, places FROM {table}_due", table
            )
            assert hints
            for hint in hints:
                for id_, place in zip(hint["ids"], hint["places"], strict=True):
                    row = rows[id_]  # (a fact its vector raised is a newer version)
                    assert row["shard"] == hint["shard"] and (row["moved"] or row["place"] == place)
    finally:
        await conn.close()


async def test_a_bulk_load_into_one_shard_is_added(cluster_copy: Copy) -> None:
    """10,000 rows of one agent in one statement: on one server the write path analyzes
    the statistics after them; on a shard that ANALYZE was sent to every shard, and
    Citus refused the add ("a local execution has accessed a placement")."""
    citus_database = await cluster_copy(DISTRIBUTED)
    conn = await asyncpg.connect(citus_database)
    try:
        await conn.execute("""INSERT INTO episodic_traces (agent_id, content)
                              SELECT 'ada', 'note ' || g FROM generate_series(1, 10000) AS g""")
        assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 10000
        hinted = "SELECT sum(n) FROM episodic_traces_due WHERE NOT prune"
        assert await conn.fetchval(hinted) == 10000
        assert await conn.fetchval("SELECT docs FROM agent_text_stats") == 10000
    finally:
        await conn.close()


async def test_a_truncate_and_the_rebuilds_count_what_they_count_on_one_server(
    cluster_copy: Copy,
) -> None:
    """A TRUNCATE by hand and the statistics' rebuilds after it, in one transaction as the
    owner (runbooks/operations.md): the same statistics as on one server. As SECURITY
    DEFINER functions the rebuilds failed on the coordinator: Citus connected to the
    workers as ethos_definer ("not permitted to log in"), or refused it the shards the
    TRUNCATE had changed ("modified in this transaction by a different user")."""
    single, citus_database = await cluster_copy(MEMORIES), await cluster_copy(MEMORIES_DISTRIBUTED)
    counted = []
    for url in (single, citus_database):
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                "TRUNCATE semantic_facts CASCADE;"
                " SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()"
            )
            counted.append([[dict(r) for r in await conn.fetch(q)] for q in STATISTICS])
        finally:
            await conn.close()
    assert counted[0] == counted[1]
    words, texts, vectors, _ = counted[1]
    assert words and texts and vectors  # (the episodes and vectors are counted again)
