"""The schema as migrated: what it accepts, what it refuses, and that it matches
the declared metadata."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import create_async_engine

from ethos import db
from ethos.schema import build_metadata
from ethos.settings import Settings


async def test_migrated_schema_matches_declared_metadata(database_url: str) -> None:
    engine = create_async_engine(database_url.replace("postgresql://", "postgresql+asyncpg://"))
    metadata = build_metadata(Settings().embedding.dimension)

    def diff(connection):  # type: ignore[no-untyped-def]
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return [
            d
            for d in compare_metadata(context, metadata)
            if d[0] not in ("add_index", "remove_index")
        ]

    try:
        async with engine.connect() as connection:
            assert await connection.run_sync(diff) == []
    finally:
        await engine.dispose()


async def test_plain_sql_insert_with_listed_columns_is_a_valid_memory(
    conn: asyncpg.Connection,
) -> None:
    row = await conn.fetchrow(
        """
        INSERT INTO episodic_traces (agent_id, content, salience, created_at, emotional_tone)
        VALUES ('a', 'bulk', 0.7, '2026-01-01Z', 0.4)
        RETURNING strength, anchor_at, created_at, pruned, pinned, retrieval_count
        """
    )
    assert row["strength"] == 0.7
    assert row["anchor_at"] == row["created_at"]
    assert (row["pruned"], row["pinned"], row["retrieval_count"]) == (False, False, 0)
    fact = await conn.fetchrow(
        "INSERT INTO semantic_facts (agent_id, content, confidence) VALUES ('a', 'f', 0.8)"
        " RETURNING confidence_strength, strength"
    )
    assert (fact["confidence_strength"], fact["strength"]) == (0.8, 1.0)


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO episodic_traces (agent_id, content, salience) VALUES ('a', 'x', 'NaN')",
        "INSERT INTO episodic_traces (agent_id, content, salience) VALUES ('a', 'x', 1.5)",
        "INSERT INTO episodic_traces (agent_id, content, emotional_tone) VALUES ('a', 'x', -0.1)",
        "INSERT INTO semantic_facts (agent_id, content, confidence) VALUES ('a', 'x', 2)",
        "INSERT INTO episodic_traces (agent_id, content, retrieval_count) VALUES ('a', 'x', -1)",
    ],
)
async def test_checks_refuse_out_of_range_values(conn: asyncpg.Connection, statement: str) -> None:
    with pytest.raises(asyncpg.CheckViolationError):
        await conn.execute(statement)


async def test_wrong_dimension_is_refused_by_the_database_too(conn: asyncpg.Connection) -> None:
    with pytest.raises(asyncpg.DataError, match="expected 384 dimensions"):
        await conn.execute(
            "INSERT INTO memory_vectors (agent_id, content, embedding) VALUES ('a', 'x', '[1,2,3]')"
        )


async def test_downgrade_to_base_and_upgrade_again(database_url: str) -> None:
    settings = Settings()
    await asyncio.to_thread(db.downgrade, settings, database_url, "base")
    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT to_regclass('episodic_traces')") is None
        await asyncio.to_thread(db.migrate, settings, database_url)
        assert await conn.fetchval("SELECT to_regclass('episodic_traces')::text") == (
            "episodic_traces"
        )
        revision = await conn.fetchval("SELECT version_num FROM alembic_version")
    finally:
        await conn.close()
    head = ScriptDirectory.from_config(db.alembic_config(settings)).get_current_head()
    assert revision == head


# Everything the migrations build beside the tables' columns, each as PostgreSQL prints
# it back: functions (not pgvector's), triggers, views, indexes, constraints, row
# policies and grants.
CATALOG = r"""
SELECT 'function' AS kind, p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS def
FROM pg_proc AS p
WHERE p.pronamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT FROM pg_depend AS d WHERE d.objid = p.oid AND d.deptype = 'e')
UNION ALL
SELECT 'trigger', t.tgrelid::regclass || '.' || t.tgname, pg_get_triggerdef(t.oid, true)
FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT 'view', c.relname, pg_get_viewdef(c.oid, true)
FROM pg_class AS c WHERE c.relkind IN ('v', 'm') AND c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT 'index', indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'
UNION ALL
SELECT 'constraint', conrelid::regclass || '.' || conname, pg_get_constraintdef(oid, true)
FROM pg_constraint  -- NOT NULL: the metadata test above
WHERE connamespace = 'public'::regnamespace AND contype <> 'n'
UNION ALL
SELECT 'policy', tablename || '.' || policyname, array_to_string(roles, ',') || ' ' || cmd
    || coalesce(' USING ' || qual, '') || coalesce(' CHECK ' || with_check, '')
FROM pg_policies WHERE schemaname = 'public'
UNION ALL
SELECT 'grant', c.relname, c.relacl::text
FROM pg_class AS c WHERE c.relacl IS NOT NULL AND c.relnamespace = 'public'::regnamespace
ORDER BY 1, 2
"""
SNAPSHOT = Path(__file__).resolve().parents[1] / "schema.sql"


async def test_migrated_schema_matches_the_snapshot(conn: asyncpg.Connection) -> None:
    """tests/schema.sql is what the migrations build: a migration that changes a function,
    trigger, view or index changes it, in review, on purpose. After such a change:
    `make schema` writes it anew."""
    rows = await conn.fetch(CATALOG)
    dump = "".join(f"-- {r['kind']} {r['name']}\n{r['def'].strip()};\n\n" for r in rows)
    if os.environ.get("UPDATE_SCHEMA_SNAPSHOT") == "1":
        SNAPSHOT.write_text(dump)
    assert dump == SNAPSHOT.read_text(), "the schema moved: `make schema`, then review the diff"
