"""The statements only a Citus coordinator can plan (its catalogue and functions,
sql.cluster.NEEDS_CITUS) parse and plan on one, migrated: tests/integration's
test_statements plans every other statement on one server."""

from __future__ import annotations

import asyncpg

from ethos.db.store.sql.cluster import NEEDS_CITUS
from tests.citus.cluster import MIGRATED, Copy


async def test_the_coordinators_statements_parse_and_plan(cluster_copy: Copy) -> None:
    conn = await asyncpg.connect(await cluster_copy(MIGRATED))
    try:
        for query in NEEDS_CITUS:
            await conn.prepare(query.text)
    finally:
        await conn.close()
