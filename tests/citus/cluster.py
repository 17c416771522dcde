"""A Citus cluster's databases for ethos (issue 40), for the tests and `bench/citus.py`:
one on every node with both extensions and the workers joined, and an ethos database
distributed by agent."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

CITUS_DIR = Path(os.environ.get("CITUS_DIR", "/tmp/ethos-citus"))


def configured_url() -> tuple[str | None, str]:
    """The coordinator's URL and where it came from (for the skip's reason)."""
    # (not an ETHOS_ variable: tests/conftest.py removes those, settings of a developer's)
    if os.environ.get("CITUS_URL"):
        return os.environ["CITUS_URL"], "CITUS_URL"
    path = CITUS_DIR / "url"
    if path.is_file():
        return path.read_text().strip(), str(path)
    return None, f"CITUS_URL is not set and {path} does not exist"


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def create_cluster_database(url: str, name: str) -> str:
    """Database `name` on the coordinator and every worker, with citus and vector, the
    coordinator registered and the workers added: what scripts/citus.sh db does."""
    coordinator = await asyncpg.connect(url)
    try:
        workers = await coordinator.fetch(
            "SELECT node_name, node_port FROM citus_get_active_worker_nodes() ORDER BY 2"
        )
    finally:
        await coordinator.close()
    parts = urlsplit(url)
    user = parts.username or "postgres"
    nodes = [(parts.hostname or "127.0.0.1", parts.port or 5432)]
    nodes += [(w["node_name"], w["node_port"]) for w in workers]
    for host, port in nodes:
        admin = await asyncpg.connect(host=host, port=port, user=user, database="postgres")
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        conn = await asyncpg.connect(host=host, port=port, user=user, database=name)
        try:
            await conn.execute("CREATE EXTENSION citus; CREATE EXTENSION vector")
        finally:
            await conn.close()
    conn = await asyncpg.connect(with_database(url, name))
    try:
        await conn.execute("SELECT citus_set_coordinator_host($1, $2)", nodes[0][0], nodes[0][1])
        for host, port in nodes[1:]:
            await conn.execute("SELECT citus_add_node($1, $2)", host, port)
    finally:
        await conn.close()
    return with_database(url, name)


async def drop_cluster_database(url: str, name: str) -> None:
    coordinator = await asyncpg.connect(url)
    try:
        workers = await coordinator.fetch(
            "SELECT node_name, node_port FROM citus_get_active_worker_nodes()"
        )
        await coordinator.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await coordinator.close()
    user = urlsplit(url).username or "postgres"
    for w in workers:
        conn = await asyncpg.connect(
            host=w["node_name"], port=w["node_port"], user=user, database="postgres"
        )
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


_counter = itertools.count()


@asynccontextmanager
async def fresh_database(url: str, prefix: str) -> AsyncIterator[str]:
    """A database of its own on every node of the cluster at `url`, dropped after."""
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    made = await create_cluster_database(url, name)
    try:
        yield made
    finally:
        await drop_cluster_database(url, name)


# The tables Citus distributes by agent, colocated with the first; the shared ones it
# copies to every node (decision record 0019). The rest stay on the coordinator for now.
DISTRIBUTED = (
    "episodic_traces", "semantic_facts", "memory_vectors", "memory_links", "memory_revisions",
    "agent_policies", "lexeme_stats", "agent_text_stats", "agent_vector_stats",
    "episodic_traces_due", "semantic_facts_due", "memory_vectors_due",
)  # fmt: skip
REFERENCE = ("decay_policies", "importance_tiers", "ethos_settings")
GENERIC_PLANS = """SELECT p.oid::regprocedure::text FROM pg_proc AS p
                   WHERE 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig)"""


async def distribute(url: str) -> None:
    """Distribute a migrated ethos database by agent, rows and all. The memory tables'
    triggers are off while their rows move to the shards (they would fire there for the
    rows copied, which were written already) and on again after. The functions that keep
    one plan a session plan each call instead: Citus routes a statement by the agent it
    names, a value a generic plan does not have (and refuses to plan one)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SET citus.enable_unsafe_triggers = on")
        for function in await conn.fetch(GENERIC_PLANS):
            await conn.execute(f"ALTER FUNCTION {function[0]} RESET plan_cache_mode")
        for table in REFERENCE:
            await conn.execute("SELECT create_reference_table($1)", table)
        for table in DISTRIBUTED:
            await conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            await conn.execute(
                "SELECT create_distributed_table($1, 'agent_id', colocate_with => $2)",
                table, "none" if table == DISTRIBUTED[0] else DISTRIBUTED[0],
            )  # fmt: skip
            await conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
    finally:
        await conn.close()
