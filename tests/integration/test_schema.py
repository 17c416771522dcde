"""The database: ethos/db/schema and the migrations build the same one; what it accepts and
what it refuses."""

from __future__ import annotations

import asyncio
import difflib
import subprocess
from pathlib import Path

import asyncpg
import pytest

from ethos import db
from ethos.db import store
from ethos.domain.errors import ConfigError
from ethos.settings import Settings
from tests.conftest import database_uri


def schema_dump(pg_data_dir: Path, url: str) -> list[str]:
    """pg_dump --schema-only of the database at url, without its comments and settings,
    and the seeded rows (their timestamps left out)."""
    server = db._pgserver().get_server(pg_data_dir, cleanup_mode=None, start=False)
    dump = subprocess.run(
        [str(server.bin_path / "pg_dump"), "--schema-only", "--no-owner", "-d", url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [
        line
        for line in dump.splitlines()
        if line
        and not line.startswith(("--", "\\", "SET ", "SELECT pg_catalog."))
        and "SET (pg_attver=" not in line  # what Citus's coordinator marks each column with
    ]


SEEDS = """
SELECT json_agg(to_jsonb(p) - 'changed_at' ORDER BY name)::text FROM decay_policies AS p
UNION ALL SELECT json_agg(to_jsonb(s) - 'updated_at')::text FROM ethos_settings AS s
UNION ALL SELECT json_agg(v)::text FROM alembic_version AS v
UNION ALL SELECT count(*) || ' words ' || md5(string_agg(word || ' ' || zipf, ',' ORDER BY word))
FROM word_prior
"""


async def built(admin_uri: str, name: str, *, from_baseline: bool) -> str:
    await store.ensure_database(admin_uri, name)
    url = database_uri(admin_uri, name)
    await asyncio.to_thread(db.migrate, Settings(), url, from_baseline=from_baseline)
    return url


async def seeds(url: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        return [row[0] for row in await conn.fetch(SEEDS)]
    finally:
        await conn.close()


def differences(a: list[str], b: list[str]) -> list[str]:
    return [line for line in difflib.unified_diff(a, b, lineterm="", n=0)]


async def test_the_schema_and_the_baseline_with_every_migration_build_the_same_database(
    admin_uri: str, pg_data_dir: Path
) -> None:
    """One database made from ethos/db/schema, one by the baseline and every migration
    after it. A migration whose result differs from the schema (or a schema edit without
    its migration) fails here, with the lines that differ."""
    made = await built(admin_uri, "ethos_by_schema", from_baseline=False)
    migrated = await built(admin_uri, "ethos_by_migrations", from_baseline=True)
    schema = schema_dump(pg_data_dir, made)
    assert differences(schema, schema_dump(pg_data_dir, migrated)) == []
    assert await seeds(made) == await seeds(migrated)


async def test_the_comparison_sees_a_migration_that_differs_from_the_schema(
    admin_uri: str, database_url: str, pg_data_dir: Path
) -> None:
    """Broken on purpose: a migration that wrote one function otherwise."""
    migrated = await built(admin_uri, "ethos_broken_on_purpose", from_baseline=True)
    conn = await asyncpg.connect(migrated)
    try:
        await conn.execute(
            "CREATE OR REPLACE FUNCTION ethos_auto_half(half float8, average float8)"
            " RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT half $$"
        )
    finally:
        await conn.close()
    # (the test's database, a copy of the one made from the schema; on a Citus cluster
    # the template takes no connection)
    found = differences(schema_dump(pg_data_dir, database_url), schema_dump(pg_data_dir, migrated))
    assert "+    AS $$ SELECT half $$;" in found


async def test_a_database_from_before_the_baseline_is_refused_in_one_line(
    database_url: str,
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE alembic_version SET version_num = '0030'")
    finally:
        await conn.close()
    with pytest.raises(ConfigError) as refused:
        await asyncio.to_thread(db.migrate, Settings(), database_url)
    assert "\n" not in str(refused.value)
    assert "at ethos migration 0030, from before the baseline 0039" in str(refused.value)


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
