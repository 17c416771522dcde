"""Term statistics (migration 0016): the write path keeps each agent's lexeme document
frequencies, document count and summed length exact, whatever the statement; and
(migration 0028) bounds of each lexeme's term frequency and of the length of the
memories holding it that always hold, and are exact after a rebuild; a hard delete takes
its rows' revisions and their share, a statement at a time (migration 0053)."""

from __future__ import annotations

import uuid

import asyncpg

from tests.conftest import DISTRIBUTED, truncate

# What the triggers keep, and the same computed from the tables themselves.
KEPT = """
SELECT coalesce(jsonb_object_agg(agent_id || ':' || lexeme, docs) FILTER (WHERE docs <> 0),
                '{}') FROM lexeme_stats
UNION ALL
SELECT coalesce(jsonb_object_agg(agent_id, jsonb_build_array(docs, length))
                FILTER (WHERE docs <> 0), '{}') FROM agent_text_stats
"""
COUNTED = """
WITH m AS (SELECT agent_id, content_tsv FROM episodic_traces
           UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
           UNION ALL SELECT agent_id, content_tsv FROM memory_vectors)
SELECT coalesce(jsonb_object_agg(k, n), '{}') FROM (
    SELECT m.agent_id || ':' || w AS k, count(*) AS n
    FROM m, unnest(tsvector_to_array(m.content_tsv)) AS w
    WHERE w <> ethos_agent_lexeme(m.agent_id) GROUP BY 1) AS x
UNION ALL
SELECT coalesce(jsonb_object_agg(agent_id, jsonb_build_array(n, len)), '{}') FROM (
    SELECT agent_id, count(*) AS n, sum(ethos_text_length(content_tsv)) AS len
    FROM m GROUP BY agent_id) AS y
"""


# Each lexeme's bounds as kept, and its largest tf and shortest memory as they are.
BOUNDS = """
WITH m AS (SELECT agent_id, content_tsv FROM episodic_traces
           UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
           UNION ALL SELECT agent_id, content_tsv FROM memory_vectors),
actual AS (
    SELECT m.agent_id, w.lexeme, max(coalesce(array_length(w.positions, 1), 1)) AS max_tf,
           min(ethos_text_length(m.content_tsv)) AS min_length
    FROM m, unnest(m.content_tsv) AS w
    WHERE w.lexeme <> ethos_agent_lexeme(m.agent_id) GROUP BY 1, 2)
SELECT a.agent_id, a.lexeme, a.max_tf, a.min_length, l.max_tf AS kept_tf,
       l.min_length AS kept_length
FROM actual AS a LEFT JOIN lexeme_stats AS l USING (agent_id, lexeme)
"""


async def assert_exact(conn: asyncpg.Connection) -> None:
    kept = [row[0] for row in await conn.fetch(KEPT)]
    assert kept == [row[0] for row in await conn.fetch(COUNTED)]
    for row in await conn.fetch(BOUNDS):  # bounds: never below what the memories hold
        assert row["kept_tf"] >= row["max_tf"] and row["kept_length"] <= row["min_length"], row


async def assert_tight(conn: asyncpg.Connection) -> None:
    for row in await conn.fetch(BOUNDS):
        assert (row["kept_tf"], row["kept_length"]) == (row["max_tf"], row["min_length"]), row


async def test_lexeme_bounds_widen_with_writes_and_are_exact_after_a_rebuild(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'dog'),"
        " ('a', 'the dog ran far away'), ('b', 'dog dog')"
    )
    await assert_tight(conn)
    bounds = "SELECT max_tf, min_length FROM lexeme_stats WHERE agent_id = $1 AND lexeme = 'dog'"
    assert tuple(await conn.fetchrow(bounds, "a")) == (1, 1)
    assert tuple(await conn.fetchrow(bounds, "b")) == (2, 1)
    # The same lexemes, more often: counts unchanged, the bound widens.
    await conn.execute("UPDATE episodic_traces SET content = 'dog dog dog ran far away'"
                       " WHERE content = 'the dog ran far away'")  # fmt: skip
    assert tuple(await conn.fetchrow(bounds, "a")) == (3, 1)
    await assert_exact(conn)
    # Removing the memories that set them leaves the bounds (still bounds) until a rebuild.
    await conn.execute("DELETE FROM episodic_traces WHERE content LIKE 'dog dog dog%'")
    await conn.execute("UPDATE episodic_traces SET content = 'a dog ran' WHERE content = 'dog'")
    assert tuple(await conn.fetchrow(bounds, "a")) == (3, 1)
    await assert_exact(conn)
    await conn.execute("SELECT ethos_text_stats_rebuild()")
    assert tuple(await conn.fetchrow(bounds, "a")) == (1, 2)
    await assert_tight(conn)


async def test_stats_follow_inserts_updates_deletes_and_truncates(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(
        """INSERT INTO episodic_traces (agent_id, content)
           SELECT 'a', 'the dog ran ' || (ARRAY['far', 'home', 'fast'])[i % 3 + 1]
           FROM generate_series(1, 30) AS i"""
    )
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content) VALUES ('a', 'dog named Rex'),"
        " ('b', 'cats sleep')"
    )
    stats = await conn.fetchrow("SELECT docs, length FROM agent_text_stats WHERE agent_id = 'a'")
    assert (stats["docs"], stats["length"]) == (31, 30 * 3 + 3)
    assert (
        await conn.fetchval("SELECT docs FROM lexeme_stats WHERE agent_id = 'a' AND lexeme = 'dog'")
        == 31
    )
    await assert_exact(conn)
    await conn.execute(
        "UPDATE episodic_traces SET content = 'a cat slept' WHERE content LIKE '%far'"
    )
    if not DISTRIBUTED:  # Citus moves no row to another agent ("the partition value")
        await conn.execute("UPDATE semantic_facts SET agent_id = 'b' WHERE content LIKE 'dog%'")
    await conn.execute("UPDATE episodic_traces SET pruned = true, salience = 0.01")  # no change
    await assert_exact(conn)
    await conn.execute("DELETE FROM episodic_traces WHERE content LIKE '%home'")
    await conn.execute(
        "INSERT INTO memory_vectors (agent_id, content, embedding)"
        " VALUES ('b', 'owls hunt', array_fill(0.1, ARRAY[384])::vector)"
    )
    await assert_exact(conn)
    await truncate(conn, "episodic_traces")
    await assert_exact(conn)
    await conn.execute("DELETE FROM semantic_facts WHERE agent_id = 'b'")
    await conn.execute("DELETE FROM memory_vectors")
    await assert_exact(conn)
    assert (
        await conn.fetchval("SELECT count(*) FROM lexeme_stats WHERE agent_id = 'b' AND docs = 0")
        == 0
    )  # nothing of an agent whose memories are gone
    assert await conn.fetchval("SELECT count(*) FROM agent_text_stats WHERE agent_id = 'b'") == 0


async def test_summed_idf_is_higher_for_rarer_words(conn: asyncpg.Connection) -> None:
    await conn.execute(
        """INSERT INTO episodic_traces (agent_id, content)
           SELECT 'a', 'Caroline said hello' FROM generate_series(1, 50)
           UNION ALL SELECT 'a', 'Caroline talked about her marriage'"""
    )
    idf = await conn.fetchrow(
        """SELECT ethos_text_idf('a', to_tsvector('english', 'Caroline')) AS common,
                  ethos_text_idf('a', to_tsvector('english', 'marriage')) AS rare,
                  ethos_text_idf('a', to_tsvector('english', 'zebra')) AS unseen,
                  ethos_text_idf('nobody', to_tsvector('english', 'Caroline')) AS empty"""
    )
    assert idf["common"] < idf["rare"] < idf["unseen"]
    assert idf["common"] > 0 and idf["empty"] > 0


async def test_a_delete_takes_its_rows_revisions_and_no_others(conn: asyncpg.Connection) -> None:
    # Two agents' memories of one id (an id is an agent's own: a tenant can pick it), and
    # another memory of each; every one revised once. One statement deletes three: all of
    # a's, and b's other.
    same, a_other, b_other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, id, content) VALUES ('a', $1, 'first'),"
        " ('b', $1, 'first'), ('a', $2, 'first'), ('b', $3, 'first')",
        same,
        a_other,
        b_other,
    )
    await conn.execute("UPDATE episodic_traces SET content = 'second'")
    revised = "SELECT agent_id, memory_id FROM memory_revisions ORDER BY agent_id, memory_id"
    assert len(await conn.fetch(revised)) == 4
    deleted = await conn.execute(
        "DELETE FROM episodic_traces WHERE agent_id = 'a' OR id = $1", b_other
    )
    assert deleted == "DELETE 3"
    assert [tuple(row) for row in await conn.fetch(revised)] == [("b", same)]
    await assert_exact(conn)
