"""The database: ethos/db/schema and the migrations build the same one; what it accepts and
what it refuses."""

from __future__ import annotations

import asyncio
import difflib
import os
import subprocess
from pathlib import Path

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from ethos import db
from ethos.domain.errors import ConfigError
from ethos.settings import Settings
from tests.conftest import DISTRIBUTED, new_database
from tests.later_migration import migrate_later


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
    url = await new_database(admin_uri, name)
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
    after it. A migration whose result differs from the schema, or a schema edit without
    its migration (before the first release: without `make baseline`), fails here, with
    the lines that differ."""
    made = await built(admin_uri, "ethos_by_schema", from_baseline=False)
    migrated = await built(admin_uri, "ethos_by_migrations", from_baseline=True)
    schema = schema_dump(pg_data_dir, made)
    assert differences(schema, schema_dump(pg_data_dir, migrated)) == []
    assert await seeds(made) == await seeds(migrated)


# ethos_auto_half as the schema writes it, and otherwise
AUTO_HALF = (
    "CREATE OR REPLACE FUNCTION ethos_auto_half(half double precision, average double"
    " precision) RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$\n    {}\n$$"
)
AS_THE_SCHEMA = "SELECT half * greatest(coalesce(average, 10), 5) / 10"
OTHERWISE = "SELECT half"


@pytest.mark.skipif(
    DISTRIBUTED,
    reason="a cluster's test database is distributed (Citus's extension and settings in its"
    " dump) where the migrated one is not; the equality test above compares two plain builds",
)
@pytest.mark.parametrize(
    ("body", "differs"),
    [(AS_THE_SCHEMA, []), (OTHERWISE, [f"-    {AS_THE_SCHEMA}", f"+    {OTHERWISE}"])],
)
async def test_the_comparison_sees_a_migration_that_differs_from_the_schema(
    admin_uri: str,
    database_url: str,
    pg_data_dir: Path,
    tmp_path: Path,
    body: str,
    differs: list[str],
) -> None:
    """A migration after the baseline (none is in the package until the first release)
    that writes one function as the schema does, or otherwise: the comparison of the
    equality test above finds no difference, or that one."""
    # (named by the worker too: tmp_path's name is cut to the test's first 30 characters
    # and numbered in each worker's own folder, so both cases may have the same one)
    migrated = await new_database(admin_uri, f"{tmp_path.name}_{os.getpid()}")
    later = AUTO_HALF.format(body)
    await asyncio.to_thread(
        migrate_later, Settings(), migrated, tmp_path, later, from_baseline=True
    )
    # (the test's database, a copy of the one made from the schema; on a Citus cluster
    # the template takes no connection)
    found = differences(schema_dump(pg_data_dir, database_url), schema_dump(pg_data_dir, migrated))
    assert [line for line in found if not line.startswith(("---", "+++", "@@"))] == differs


@pytest.mark.parametrize("revision", ["0059", "0123456789ab"])
async def test_a_database_of_a_folded_migration_or_an_earlier_baseline_is_refused(
    database_url: str, revision: str
) -> None:
    """A developer's database stamped by a migration folded into the baseline (0040 to
    0059 were), or made from an earlier baseline: one line, and nothing changes."""
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE alembic_version SET version_num = $1", revision)
        with pytest.raises(ConfigError) as refused:
            await asyncio.to_thread(db.migrate, Settings(), database_url)
        assert await conn.fetchval("SELECT version_num FROM alembic_version") == revision
    finally:
        await conn.close()
    base = ScriptDirectory.from_config(db.alembic_config(Settings())).get_base()
    assert "\n" not in str(refused.value)
    assert f"at ethos migration {revision}, unknown to this ethos" in str(refused.value)
    assert f"start at the baseline {base}" in str(refused.value)


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
