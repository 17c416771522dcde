"""A Citus cluster's databases for ethos (issue 40), for the tests and `bench/citus.py`:
one on every node with both extensions and the workers joined, an ethos database
distributed by agent, and the memories the tests add to it and to one server."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from ethos.services.engine import Engine, migrate
from ethos.settings import DatabaseSettings, Settings

T = TypeVar("T")
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


async def cluster_nodes(url: str) -> list[tuple[str, int]]:
    """The coordinator at `url` and its active workers, as (host, port)."""
    coordinator = await asyncpg.connect(url)
    try:
        workers = await coordinator.fetch(
            "SELECT node_name, node_port FROM citus_get_active_worker_nodes() ORDER BY 2"
        )
    finally:
        await coordinator.close()
    parts = urlsplit(url)
    return [(parts.hostname or "127.0.0.1", parts.port or 5432)] + [
        (w["node_name"], w["node_port"]) for w in workers
    ]


async def _on_every_node(
    url: str, nodes: list[tuple[str, int]], statement: str, database: str = "postgres"
) -> None:
    """Run `statement` in `database` of each node, the nodes at once (a CREATE or DROP
    DATABASE waits on each node's disk). A database in use (a maintenance daemon
    restarting may look into the template a CREATE DATABASE copies) is waited for, up to
    5 s."""
    user = urlsplit(url).username or "postgres"

    async def on(host: str, port: int) -> None:
        conn = await asyncpg.connect(host=host, port=port, user=user, database=database)
        try:
            for attempt in range(50):
                try:
                    await conn.execute(statement)
                    break
                except asyncpg.ObjectInUseError:
                    if attempt == 49:
                        raise
                    await asyncio.sleep(0.1)
        finally:
            await conn.close()

    await asyncio.gather(*(on(host, port) for host, port in nodes))


async def create_cluster_database(url: str, name: str) -> str:
    """Database `name` on the coordinator and every worker, with citus and vector, the
    coordinator registered and the workers added: what scripts/citus.sh db does."""
    nodes = await cluster_nodes(url)
    await _on_every_node(url, nodes, f'CREATE DATABASE "{name}"')
    await _on_every_node(url, nodes, "CREATE EXTENSION citus; CREATE EXTENSION vector", name)
    conn = await asyncpg.connect(with_database(url, name))
    try:
        await conn.execute("SELECT citus_set_coordinator_host($1, $2)", *nodes[0])
        for host, port in nodes[1:]:
            await conn.execute("SELECT citus_add_node($1, $2)", host, port)
    finally:
        await conn.close()
    return with_database(url, name)


async def freeze_cluster_database(url: str, name: str) -> None:
    """Make cluster database `name` a template: no one connects to it any more, Citus's
    maintenance daemons and the nodes' connections to each other included, for CREATE
    DATABASE copies only a database no one is in."""
    await _on_every_node(
        url,
        await cluster_nodes(url),
        f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false;'
        " SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        f" WHERE datname = '{name}' AND pid <> pg_backend_pid()",
    )


async def copy_cluster_database(url: str, template: str, name: str) -> str:
    """A copy of the frozen cluster database `template` as `name`: each node's database
    copied from its own `template`. The copies' catalogues name the same nodes and shards,
    so together they are one cluster database again, rows and all."""
    copied = f'CREATE DATABASE "{name}" TEMPLATE "{template}"'
    await _on_every_node(url, await cluster_nodes(url), copied)
    return with_database(url, name)


async def drop_cluster_database(url: str, name: str) -> None:
    dropped = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    await _on_every_node(url, await cluster_nodes(url), dropped)


async def distribute(url: str) -> None:
    """Distribute a migrated ethos database by agent, rows and all: `ethos distribute`."""
    settings = Settings(database=DatabaseSettings(url=url))
    async with Engine(settings, url=url, check_settings=False) as engine:
        await engine.distribute()


AGENTS = ("alice", "bob", "carol")
TABLES = ("episodic_traces", "semantic_facts", "memory_vectors")
DIMENSION = 384


def direction(i: int) -> list[float]:
    return [float(i % 7) - 3.0, 1.0 + i] + [0.25] * (DIMENSION - 2)


async def add_memories(url: str) -> None:
    """The same memories into any database: the engine's adds of three agents (an
    answer, a given importance, eleven vectors and a fact's own), many at once, plain
    SQL of six agents in one statement, and COPY."""
    settings = Settings(database=DatabaseSettings(url=url))
    async with Engine(settings, url=url, check_settings=False) as engine:
        for agent in AGENTS:
            await engine.add("episodic_traces", agent_id=agent, content=f"where did {agent} sail?")
            await engine.add(
                "episodic_traces", agent_id=agent, content=f"{agent} sailed the northern lake"
            )  # (an answer: its words count answer-fold)
            await engine.add(
                "semantic_facts", agent_id=agent, content=f"{agent} fears storms", importance=0.9
            )
            for i in range(11):  # (particularity counts from ten vectors on)
                await engine.add(
                    "memory_vectors", agent_id=agent, content=f"{agent} note {i}",
                    embedding=direction(i),
                )  # fmt: skip
            await engine.add(
                "semantic_facts", agent_id=agent, content=f"{agent} keeps owls",
                embedding=[-9.0] + [0.25] * (DIMENSION - 1),
            )  # fmt: skip
        rowed = [f"alice rowed {i} miles" for i in range(4)]
        await engine.add_many("episodic_traces", agent_id="alice", contents=rowed)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("""
            INSERT INTO episodic_traces (agent_id, content)
            SELECT agent, agent || ' walked ' || i || ' hills'
            FROM unnest(ARRAY['alice', 'bob', 'carol', 'dave', 'erin', 'frank']) AS agent,
                 generate_series(1, 3) AS i""")
        await conn.copy_records_to_table(
            "semantic_facts", columns=["agent_id", "content"],
            records=[(f"agent{i}", f"a copied fact, number {i}") for i in range(12)],
        )  # fmt: skip
    finally:
        await conn.close()


# Two databases' memories are made at this moment, so that the same sweeps and
# retrievals see the same ages (each database added them at its own pace).
MADE = datetime(2026, 1, 1, tzinfo=UTC)


async def made_at_once(url: str) -> None:
    """Every memory of the database made at MADE."""
    conn = await asyncpg.connect(url)
    try:
        for table in TABLES:
            await conn.execute(f"UPDATE {table} SET created_at = $1, anchor_at = $1", MADE)
    finally:
        await conn.close()


async def side_by_side(
    single: str, distributed: str, work: Callable[[Engine, str], Awaitable[T]]
) -> list[T]:
    """`work` on an engine of each database, in that order: the same memories (copies of
    AT_ONCE and AT_ONCE_DISTRIBUTED) left on one server and distributed in place. What
    each gave."""
    done = []
    for url in (single, distributed):
        settings = Settings(database=DatabaseSettings(url=url))
        async with Engine(settings, url=url, check_settings=False) as engine:
            done.append(await work(engine, url))
    return done


@dataclass(frozen=True)
class Template:
    """A cluster database the tests copy (CREATE DATABASE … TEMPLATE on every node, a
    second where migrating and distributing take half a minute or more): a copy of
    `source` (a new cluster database if None) that `build` made what `name` says."""

    name: str
    source: Template | None
    build: Callable[[str], Awaitable[None]]


async def migrated(url: str) -> None:
    await migrate(Settings(database=DatabaseSettings(url=url)), url)


async def nothing(url: str) -> None:
    """Both extensions and the workers joined are all a bare database holds."""


BARE = Template("bare", None, nothing)
MIGRATED = Template("migrated", BARE, migrated)  # its tables the coordinator's own
DISTRIBUTED = Template("distributed", MIGRATED, distribute)
MEMORIES = Template("memories", MIGRATED, add_memories)  # on one server
MEMORIES_DISTRIBUTED = Template("memories_distributed", MEMORIES, distribute)  # in place
AT_ONCE = Template("at_once", MEMORIES, made_at_once)
AT_ONCE_DISTRIBUTED = Template("at_once_distributed", AT_ONCE, distribute)


Copy = Callable[[Template], Awaitable[str]]  # the cluster_copy fixture


class Templates:
    """The templates of one test session (one pytest-xdist worker: `suffix`), each made
    the first time a test asks for a copy of it, all dropped at close()."""

    def __init__(self, url: str, suffix: str) -> None:
        self.url, self.suffix = url, suffix
        self._made: dict[Template, str] = {}
        self._names: list[str] = []  # made, to drop (one whose build failed too)
        self._copies = itertools.count()

    async def _template(self, template: Template) -> str:
        if template not in self._made:
            name = f"citus_template_{template.name}_{self.suffix}"
            await drop_cluster_database(self.url, name)  # left by a session cut short
            if template.source is None:
                made = await create_cluster_database(self.url, name)
            else:
                source = await self._template(template.source)
                made = await copy_cluster_database(self.url, source, name)
            self._names.append(name)
            await template.build(made)
            await freeze_cluster_database(self.url, name)
            self._made[template] = name
        return self._made[template]

    @asynccontextmanager
    async def copy(self, template: Template) -> AsyncIterator[str]:
        """A database of its own on every node, a copy of `template`, dropped after: its
        URL."""
        name = f"citus_{template.name}_{os.getpid()}_{next(self._copies)}"
        made = await copy_cluster_database(self.url, await self._template(template), name)
        try:
            yield made
        finally:
            await drop_cluster_database(self.url, name)

    async def close(self) -> None:
        for name in reversed(self._names):
            await drop_cluster_database(self.url, name)
