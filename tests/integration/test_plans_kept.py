"""A write's triggers plan their statements once a session (migration 0035): once a
connection has written a few memories, the next insert or delete plans nothing, short
memory or long. Counted by PostgreSQL itself: with log_planner_stats on, every planning
reports "PLANNER STATISTICS" to the client."""

from __future__ import annotations

import asyncpg
import pytest

from tests.vectors import at_cosine, unit

WARM = 8  # writes before counting: PostgreSQL tries 5 custom plans before it keeps one
SHORT = "memory {} of a day"  # three lexemes: the words query's custom plan looked cheaper
LONG = "{} lisbon porto maria sister moved tuesday harbour lighthouse ferry bakery garden"


@pytest.fixture(autouse=True)
async def _a_server_that_keeps_sql_function_plans(conn: asyncpg.Connection) -> None:
    if int(await conn.fetchval("SHOW server_version_num")) < 180000:
        pytest.skip("PostgreSQL before 18 plans a SQL function's statements at every call")


async def plannings(conn: asyncpg.Connection, statement: str, *args: object) -> int:
    """How many times PostgreSQL plans while `statement` runs."""
    reports: list[str] = []

    def listener(_: object, message: asyncpg.PostgresLogMessage) -> None:
        reports.append(message.message)

    conn.add_log_listener(listener)
    await conn.execute("SET log_planner_stats = on; SET client_min_messages = log")
    try:
        await conn.execute(statement, *args)
    finally:
        await conn.execute("RESET log_planner_stats; RESET client_min_messages")
        conn.remove_log_listener(listener)
    return sum(report == "PLANNER STATISTICS" for report in reports)


async def test_a_warm_insert_of_an_episode_or_fact_plans_nothing(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content)"
        " SELECT 'a', 'another memory of a day, number ' || g FROM generate_series(1, 20) g"
    )
    for table in ("episodic_traces", "semantic_facts"):
        insert = f"INSERT INTO {table} (agent_id, content) VALUES ('a', $1)"
        for text in (SHORT, LONG):
            for i in range(WARM):
                await conn.execute(insert, text.format(i))
            assert await plannings(conn, insert, text.format(WARM)) == 0, (table, text)
    # an automatic importance was measured all along, by words the agent had written
    assert (
        await conn.fetchval(
            "SELECT count(*) FROM episodic_traces WHERE content LIKE 'memory %'"
            " AND auto_importance < 1 - 2 ^ (-3 / 4.0)"
        )
        == WARM + 1
    )


async def test_a_warm_delete_plans_nothing(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content)"
        " SELECT 'a', 'memory ' || g FROM generate_series(1, 20) g"
    )
    delete = "DELETE FROM episodic_traces WHERE content = $1"
    for i in range(1, WARM + 1):
        await conn.execute(delete, f"memory {i}")
    assert await plannings(conn, delete, f"memory {WARM + 1}") == 0
    assert await conn.fetchval("SELECT docs FROM agent_text_stats WHERE agent_id = 'a'") == 11


async def test_a_warm_vector_that_tiers_its_source_plans_nothing(
    conn: asyncpg.Connection,
) -> None:
    common = unit(7)
    episode = "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', $1) RETURNING id"
    embed = """SELECT ethos_embed('episodic_traces', ARRAY['a'], ARRAY[$1::uuid], ARRAY['$'],
                                  ARRAY[$2::text::vector], NULL, NULL)"""
    for i in range(12 + WARM):  # the agent's first 10 vectors tier nothing yet
        memory = await conn.fetchval(episode, SHORT.format(i))
        await conn.execute(embed, memory, str(at_cosine(common, 0.9, i)))
    last = await conn.fetchval(episode, SHORT.format("last"))
    assert await plannings(conn, embed, last, str(at_cosine(common, 0.3, 99))) == 0
    assert await conn.fetchval(
        "SELECT auto_particularity > 1 FROM episodic_traces WHERE id = $1", last
    )
