"""LangGraph's suites' stores: ethos's, each on a database of its own, cloned from a
template migrated for their embeddings (CharacterEmbeddings(dims=500), LangGraph's test
utility). A database is emptied after its test and used again by the next, never
dropped: a DROP DATABASE waits for a checkpoint, and each clone's pages are written
out by one, seconds where a suite's test takes a fraction of one."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import pytest
from langchain_core.embeddings import Embeddings

from ethos.adapters.langgraph import EthosStore
from ethos.db import store
from ethos.services.engine import migrate
from ethos.settings import DatabaseSettings, EmbeddingSettings, Settings
from tests.conftest import database_uri

TEMPLATE = "ethos_template_langgraph"
DIMENSION = 500  # the dims of the suites' fake_embeddings

TABLES = """
SELECT format('%I', c.relname) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
"""


async def _empty_tables(conn: asyncpg.Connection) -> str:
    """The tables a test writes to: those the migrations leave empty (not the policies
    and settings they seed, nor alembic's version)."""
    tables = [row[0] for row in await conn.fetch(TABLES)]
    return ", ".join(
        [t for t in tables if not await conn.fetchval(f"SELECT EXISTS (SELECT FROM {t})")]
    )


class Databases:
    """The suites' databases, taken and given back from any thread (a sync test's, or
    beside an async test's running loop: each statement runs on a thread of its own)."""

    def __init__(self, admin_uri: str) -> None:
        self.admin_uri = admin_uri
        self._free: list[str] = []
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._emptied = _run(database_uri(admin_uri, TEMPLATE), _empty_tables)

    def take(self) -> tuple[str, Settings]:
        """A database as migrated (its name, settings for a store on it)."""
        with self._lock:
            name = self._free.pop() if self._free else None
        if name is None:
            name = f"langgraph_{os.getpid()}_{next(self._names)}"
            _run(self.admin_uri, f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        # A minute to connect: test_large_batches_async opens the pool's connections under
        # 60,000 operations at once, beside the rest of the suite on two cores, where the
        # default 10 s ran out once in CI (a connection late, nothing wrong).
        return name, Settings(
            database=DatabaseSettings(
                url=database_uri(self.admin_uri, name), connect_timeout_seconds=60.0
            ),
            embedding=EmbeddingSettings(dimension=DIMENSION),
        )

    def give_back(self, name: str) -> None:
        """Empty the database (no store open on it) for the next test."""
        _run(database_uri(self.admin_uri, name), f"TRUNCATE {self._emptied} RESTART IDENTITY")
        with self._lock:
            self._free.append(name)


def _run(url: str, work: str | Callable[[asyncpg.Connection], Awaitable[Any]]) -> Any:
    """A statement (or `work` on a connection) on the database `url`, on a thread of its
    own."""

    async def execute() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await (conn.execute(work) if isinstance(work, str) else work(conn))
        finally:
            await conn.close()

    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(execute()))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


@pytest.fixture(scope="session")
def databases(admin_uri: str) -> Databases:
    asyncio.run(store.ensure_database(admin_uri, TEMPLATE))
    settings = Settings(embedding=EmbeddingSettings(dimension=DIMENSION))
    asyncio.run(migrate(settings, database_uri(admin_uri, TEMPLATE)))
    return Databases(admin_uri)


class Stores:
    """A test's databases and the sync stores it opened on them: closed, and the
    databases given back, when it ends."""

    def __init__(self, databases: Databases) -> None:
        self.databases = databases
        self.taken: list[str] = []
        self.opened: list[EthosStore] = []

    def settings(self) -> Settings:
        name, settings = self.databases.take()
        self.taken.append(name)
        return settings

    def opening(self, opened: EthosStore) -> EthosStore:
        self.opened.append(opened)
        return opened.__enter__()

    def close(self) -> None:
        for opened in self.opened:
            opened.__exit__(None, None, None)
        for name in self.taken:
            self.databases.give_back(name)


@pytest.fixture
def stores(databases: Databases) -> Iterator[Stores]:
    made = Stores(databases)
    yield made
    made.close()


# The Stores of the test running: the suites' own helpers take no fixture, and open
# their stores through it.
_running: list[Stores] = []


def running() -> Stores:
    return _running[-1]


@pytest.fixture(autouse=True)
def _running_stores(stores: Stores) -> Iterator[None]:
    _running.append(stores)
    yield
    _running.pop()


def vector_index(
    vector_type: str, distance_type: str, embeddings: Embeddings, fields: list[str] | None
) -> Any:
    """The index the suites' _create_vector_store gives PostgresStore, for ethos's store."""
    return {"dims": embeddings.dims, "embed": embeddings,  # type: ignore[attr-defined]
            "ann_index_config": {"vector_type": vector_type},
            "distance_type": distance_type, "fields": fields}  # fmt: skip
