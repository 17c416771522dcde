"""Shared fixtures: one embedded PostgreSQL for the session, a migrated template
database, a fresh database cloned from it for every test that asks for one, the real
`ethos` command and psql, and the fixed moment the tests' memories live around."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from ethos import db
from ethos.db import store
from ethos.services.engine import Engine, migrate
from ethos.settings import DatabaseSettings, ImportanceSettings, Settings

# A developer's own settings must never leak into a test.
for _name in [n for n in os.environ if n.startswith("ETHOS_")]:
    del os.environ[_name]
# Nor remember a test's data folder as the user's last (ethos.db.last_used_file); and each
# test remembers its own, or one test's folder makes another's a "new, empty" one.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="ethos-test-state-")


@pytest.fixture(autouse=True)
def _own_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


# One per pytest-xdist worker: workers sharing a TEST_ADMIN_URL server make their own.
TEMPLATE = "_".join(["ethos_template", *filter(None, [os.environ.get("PYTEST_XDIST_WORKER")])])
# TEST_DISTRIBUTED: TEST_ADMIN_URL is a Citus coordinator, and every test's database is a
# cluster database distributed by agent (`ethos distribute`), on all its nodes (issue 40).
DISTRIBUTED = bool(os.environ.get("TEST_DISTRIBUTED"))
_counter = itertools.count()


def database_uri(admin_uri: str, name: str) -> str:
    parts = urlsplit(admin_uri)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def pg_data_dir() -> Iterator[Path]:
    # Outside pytest's temp root: a second pytest session started as root resets that
    # root's permissions, which the server's own user then can no longer enter.
    root = Path(tempfile.mkdtemp(prefix="ethos-test-pg-"))
    root.chmod(0o755)
    data_dir = root / "data"
    yield data_dir
    db.stop_embedded(data_dir)
    shutil.rmtree(root, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not os.environ.get("TEST_ADMIN_URL"):
        return
    skip = pytest.mark.skip(reason="needs the embedded server to itself (TEST_ADMIN_URL set)")
    for item in items:
        if item.get_closest_marker("own_server"):
            item.add_marker(skip)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n 2` (pytest-xdist's `--dist load`): every test sent to the next free worker as
    before, but tests/citus all to one, sent first: its cluster templates are made once
    a session (tests/citus/conftest.py), and its minutes start while the rest spreads
    around them. (`--dist loadgroup` would do it, but pytest 9 no longer reads the
    group from a test's id.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class CitusTogether(LoadScopeScheduling):
        # (largest scope first: LoadScopeScheduling's default order)
        def _split_scope(self, nodeid: str) -> str:
            return "tests/citus" if nodeid.startswith("tests/citus/") else nodeid

    return CitusTogether(config, log)


@pytest.fixture(scope="session")
def admin_uri(request: pytest.FixtureRequest) -> str:
    """The server the tests make their databases on: the embedded one, or the server
    whose `postgres` database TEST_ADMIN_URL names (another PostgreSQL version, a
    Citus coordinator's own tables)."""
    if url := os.environ.get("TEST_ADMIN_URL"):
        return url
    uri = db.embedded_uri(request.getfixturevalue("pg_data_dir"), "postgres")
    asyncio.run(_not_durable(uri))
    return uri


async def _not_durable(admin_uri: str) -> None:
    """The tests' own server is thrown away after the session, so nothing is flushed to
    disk: every test's DROP DATABASE forces a checkpoint, and every commit a WAL flush,
    each an fsync a busy disk makes wait (as scripts/citus.sh's nodes)."""
    conn = await asyncpg.connect(admin_uri)
    try:
        for setting in ("fsync", "full_page_writes"):
            await conn.execute(f"ALTER SYSTEM SET {setting} = off")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


async def drop_database(admin_uri: str, name: str) -> None:
    conn = await asyncpg.connect(admin_uri)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def new_database(admin_uri: str, name: str) -> str:
    """An empty database `name`: its URL. Made anew, as a server that outlives the
    session (TEST_ADMIN_URL's) keeps the one an earlier run left, at an earlier schema's
    revision, which migrate refuses."""
    await drop_database(admin_uri, name)
    await store.ensure_database(admin_uri, name)
    return database_uri(admin_uri, name)


@pytest.fixture(scope="session")
def template_uri(admin_uri: str) -> str:
    if DISTRIBUTED:
        return asyncio.run(_distributed_template(admin_uri))
    uri = asyncio.run(new_database(admin_uri, TEMPLATE))
    asyncio.run(migrate(Settings(), uri))  # as `ethos migrate` leaves it
    return uri


async def _distributed_template(admin_uri: str) -> str:
    from tests.citus import cluster

    await cluster.drop_cluster_database(admin_uri, TEMPLATE)
    uri = await cluster.create_cluster_database(admin_uri, TEMPLATE)
    await migrate(Settings(), uri)
    await cluster.distribute(uri)
    await cluster.freeze_cluster_database(admin_uri, TEMPLATE)
    return uri


class ConfiguredEngine(Engine):
    """An Engine that writes its settings to the database as it opens, as `ethos
    settings apply` does: for tests of settings the database does not hold yet (an
    Engine only says where they differ)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, check_settings=False, **kwargs)

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        try:
            await self.apply_settings()
        except BaseException:
            await self.close()
            raise
        return self


@asynccontextmanager
async def template_copy(admin_uri: str, name: str, template: str = TEMPLATE) -> AsyncIterator[str]:
    """A database `name` copied from the migrated template, or another (on every node of
    the cluster, with TEST_DISTRIBUTED), dropped after: its URL."""
    if DISTRIBUTED:
        from tests.citus.cluster import copy_cluster_database, drop_cluster_database

        try:
            yield await copy_cluster_database(admin_uri, template, name)
        finally:
            await drop_cluster_database(admin_uri, name)
        return
    conn = await asyncpg.connect(admin_uri)
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield database_uri(admin_uri, name)
        finally:
            await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await conn.close()


# A test marked `filled(fill)` begins with what `fill(conn)` wrote: thousands of rows
# through the write path take seconds to minutes, and copying them a second. `fill` runs
# once a session, in a template of its own copied from the migrated one.
Fill = Callable[[asyncpg.Connection], Awaitable[object]]


@pytest.fixture(scope="session")
def filled(admin_uri: str) -> Iterator[dict[Fill, str]]:
    """The session's filled templates, made as tests ask for them: fill -> name."""
    made: dict[Fill, str] = {}
    yield made
    for name in made.values():
        asyncio.run(_drop_template(admin_uri, name))


async def _drop_template(admin_uri: str, name: str) -> None:
    if DISTRIBUTED:
        from tests.citus.cluster import drop_cluster_database

        await drop_cluster_database(admin_uri, name)
    else:
        await drop_database(admin_uri, name)


async def _filled_template(admin_uri: str, fill: Fill, made: dict[Fill, str]) -> str:
    if fill in made:
        return made[fill]
    name = f"{TEMPLATE}_{fill.__name__}"
    await _drop_template(admin_uri, name)  # left by a session cut short
    if DISTRIBUTED:
        from tests.citus.cluster import copy_cluster_database, freeze_cluster_database

        url = await copy_cluster_database(admin_uri, TEMPLATE, name)
    else:
        admin = await asyncpg.connect(admin_uri)
        try:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        finally:
            await admin.close()
        url = database_uri(admin_uri, name)
    try:
        conn = await asyncpg.connect(url)
        try:
            await fill(conn)
        finally:
            await conn.close()
        if DISTRIBUTED:
            await freeze_cluster_database(admin_uri, name)
        else:  # (a copy waits for no one then; autovacuum, which may look in, it stops)
            admin = await asyncpg.connect(admin_uri)
            try:
                await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            finally:
                await admin.close()
    except BaseException:
        await _drop_template(admin_uri, name)
        raise
    made[fill] = name
    return name


@pytest.fixture
async def database_url(
    request: pytest.FixtureRequest, admin_uri: str, template_uri: str, filled: dict[Fill, str]
) -> AsyncIterator[str]:
    marker = request.node.get_closest_marker("filled")
    template = await _filled_template(admin_uri, marker.args[0], filled) if marker else TEMPLATE
    async with template_copy(admin_uri, f"test_{os.getpid()}_{next(_counter)}", template) as url:
        yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database=DatabaseSettings(url=database_url))


# For tests that follow plain memories on a policy's curve (the default policy unless
# they name one), with no importance: automatic importance, on by default, would tier
# each by its words. test_auto_importance and test_policies test it on.
WORDS_IGNORED = ImportanceSettings(auto=False)


async def truncate(conn: asyncpg.Connection, *tables: str) -> None:
    """TRUNCATE runs no trigger (ethos/db/schema/write_path.sql): what the write path keeps
    of the rows is counted anew, as an operator would after it."""
    await conn.execute(
        f"TRUNCATE {', '.join(tables)} CASCADE;"
        " SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()"
    )


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[Engine]:
    """An engine on the test's settings (a module may override `settings`), applied."""
    async with ConfiguredEngine(settings) as opened:
        yield opened


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


def near(a: datetime | timedelta | None, b: datetime | timedelta | None, within: timedelta) -> bool:
    """Moments (or spans) within `within` of each other, or both absent. Plain arithmetic:
    pytest.approx on datetimes differs across the pytest versions ethos allows."""
    if a is None or b is None:
        return a is b
    return abs(a - b) <= within  # type: ignore[operator]


Cli = Callable[..., "subprocess.CompletedProcess[str]"]
Psql = Callable[[str, str], list[list[str]]]
Days = Callable[[float], datetime]


@pytest.fixture(scope="session")
def t0() -> datetime:
    """The moment the tests' memories are created around."""
    return datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="session")
def days(t0: datetime) -> Days:
    """days(n): n days after t0."""
    return lambda n: t0 + timedelta(days=n)


@pytest.fixture(scope="session")
def cli() -> Cli:
    """The real `ethos` command in a subprocess: cli("sweep", "--json", env={...})."""

    def run(
        *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        ethos = Path(sys.executable).parent / "ethos"
        return subprocess.run(
            [str(ethos), *args],
            env={**os.environ, "ETHOS_LOGGING__FORMAT": "json", **(env or {})},
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def psql() -> Psql:
    """The embedded server's own psql: psql(url, sql) -> rows of fields."""
    binary = db._pgserver().utils.POSTGRES_VERSIONS[18] / "psql"

    def run(url: str, sql: str) -> list[list[str]]:
        out = subprocess.run(
            [str(binary), url, "-XAt", "-F", "|", "-c", sql],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [line.split("|") for line in out.splitlines()]

    return run
