"""ethos's policies and settings on the cluster's reference tables (issue 40): with
decay_policies, importance_tiers and ethos_settings made reference tables (and the tables
with a foreign key to decay_policies thereby Citus-managed), applying changed settings
and assigning an agent's policy work. Citus refuses now() in an upsert's DO UPDATE SET;
the moments come from the row proposed."""

from __future__ import annotations

import asyncpg

from ethos.db.store.sql.cluster import REFERENCE
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, PolicySettings, Settings
from tests.citus.cluster import MIGRATED, Copy


async def test_settings_and_assignments_write_to_reference_tables(cluster_copy: Copy) -> None:
    citus_database = await cluster_copy(MIGRATED)
    conn = await asyncpg.connect(citus_database)
    try:
        for table in REFERENCE:
            await conn.execute("SELECT create_reference_table($1)", table)
        kinds = {
            r["table"]: r["kind"]
            for r in await conn.fetch(
                "SELECT logicalrelid::text AS table, partmethod::text AS kind"
                " FROM pg_dist_partition"
            )
        }
        assert {t: kinds.get(t) for t in REFERENCE} == dict.fromkeys(REFERENCE, "n")

        before = await conn.fetchval(
            "SELECT base_tau_days FROM decay_policies WHERE name = 'long_term'"
        )
        changed = Settings(
            database=DatabaseSettings(url=citus_database),
            policies={"long_term": PolicySettings(lifetime="30d")},
        )
        async with Engine(changed, url=citus_database, check_settings=False) as engine:
            await engine.apply_settings()
            await engine.assign_policy("agent-1", "permanent")
            await engine.assign_policy("agent-1", "long_term")  # the upsert's update
        after = await conn.fetchval(
            "SELECT base_tau_days FROM decay_policies WHERE name = 'long_term'"
        )
        assert after < before  # a lifetime of 30 days, not 365
        assert (
            await conn.fetchval("SELECT policy FROM agent_policies WHERE agent_id = 'agent-1'")
            == "long_term"
        )
    finally:
        await conn.close()
