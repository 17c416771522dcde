"""`ethos migrate` on a database already distributed (issue 40): a migration after
`ethos distribute` reaches every node. Until the first release there is none after the
baseline (decision 0025), so the test writes one as a release would: it replaces a
function, adds a trigger to a distributed table, and makes a table that it makes a
reference table where the database is distributed (as word_prior's migration did before
the fold). The baseline's own shared tables, word_prior among them, are reference tables
by `ethos distribute`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import asyncpg

from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import cluster_nodes, distribute, with_database
from tests.conftest import Cli
from tests.later_migration import REVISION, migrate_later

LATER = """
-- (a distributed table takes a trigger only with this set; elsewhere it is a no-op)
SET LOCAL citus.enable_unsafe_triggers = on;

CREATE OR REPLACE FUNCTION ethos_prior_share(length bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 60 / (60 + greatest(coalesce(length, 0), 0)::float8) $$;

CREATE FUNCTION ethos_later_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN NEW;
END
$$;
CREATE TRIGGER episodic_traces_later BEFORE UPDATE ON episodic_traces
    FOR EACH ROW EXECUTE FUNCTION ethos_later_seen();

CREATE TABLE later_words (word text PRIMARY KEY);
DO $$
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN  -- (nested: one server lacks it)
        IF EXISTS (SELECT FROM pg_dist_partition
                   WHERE logicalrelid = 'episodic_traces'::regclass AND partmethod = 'h') THEN
            PERFORM create_reference_table('later_words'::regclass);
        END IF;
    END IF;
END $$;
INSERT INTO later_words VALUES ('storm');
"""

REFERENCE_TABLE = "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = $1::regclass"


async def on_each_node(url: str, query: str, *args: Any) -> list[Any]:
    """`query`'s value on each node of the cluster (the coordinator first), in `url`'s
    database."""
    name = url.rsplit("/", 1)[1]
    found = []
    for host, port in await cluster_nodes(url):
        conn = await asyncpg.connect(with_database(f"postgresql://postgres@{host}:{port}", name))
        try:
            found.append(await conn.fetchval(query, *args))
        finally:
            await conn.close()
    return found


async def shard_triggers(url: str, name: str) -> int:
    """How many shards of the workers have a trigger `name` (Citus suffixes the shard's)."""
    query = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE $1 || '\\_%'"
    return sum((await on_each_node(url, query, name))[1:])


async def test_a_migration_after_distribute_reaches_every_node(
    cli: Cli, citus_database: str, tmp_path: Path
) -> None:
    env = {"ETHOS_DATABASE__URL": citus_database}
    made = cli("migrate", env=env, timeout=300)
    assert made.returncode == 0, made.stderr
    await distribute(citus_database)
    # the baseline's word prior: a reference table, seeded on every node
    prior = REFERENCE_TABLE + " AND partmethod = 'n'"
    assert await on_each_node(citus_database, prior, "word_prior") == [1, 1, 1]
    seeded = await on_each_node(citus_database, "SELECT count(*) FROM word_prior")
    assert len(set(seeded)) == 1 and seeded[0] > 0
    share = "SELECT pg_get_functiondef('ethos_prior_share'::regproc)"
    assert all("SELECT 50 /" in text for text in await on_each_node(citus_database, share))

    settings = Settings(database=DatabaseSettings(url=citus_database))
    await asyncio.to_thread(migrate_later, settings, citus_database, tmp_path, LATER)
    after = await on_each_node(citus_database, share)
    assert len(after) == 3 and len(set(after)) == 1 and "SELECT 60 /" in after[0]
    conn = await asyncpg.connect(citus_database)
    try:
        shards = await conn.fetchval(
            "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = $1::regclass",
            "episodic_traces",
        )
        assert await conn.fetchval("SELECT version_num FROM alembic_version") == REVISION
    finally:
        await conn.close()
    assert await shard_triggers(citus_database, "episodic_traces_later") == shards > 0
    assert await on_each_node(citus_database, prior, "later_words") == [1, 1, 1]
    assert await on_each_node(citus_database, "SELECT word FROM later_words") == ["storm"] * 3
