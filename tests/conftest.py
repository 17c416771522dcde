"""Shared fixtures: one embedded PostgreSQL for the session, a migrated template
database, and a fresh database cloned from it for every test that asks for one."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from ethos import db
from ethos.engine import Engine
from ethos.settings import DatabaseSettings, Settings

# A developer's own settings must never leak into a test.
for _name in [n for n in os.environ if n.startswith("ETHOS_")]:
    del os.environ[_name]

TEMPLATE = "ethos_template"
_counter = itertools.count()


def database_uri(admin_uri: str, name: str) -> str:
    return admin_uri.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(scope="session")
def pg_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    data_dir = tmp_path_factory.mktemp("pg") / "data"
    yield data_dir
    db.stop_embedded(data_dir)


@pytest.fixture(scope="session")
def admin_uri(pg_data_dir: Path) -> str:
    return db.embedded_uri(pg_data_dir, "postgres")


@pytest.fixture(scope="session")
def template_uri(admin_uri: str) -> str:
    asyncio.run(db.ensure_database(admin_uri, TEMPLATE))
    uri = database_uri(admin_uri, TEMPLATE)
    db.migrate(Settings(), uri)
    return uri


@pytest.fixture
async def database_url(admin_uri: str, template_uri: str) -> AsyncIterator[str]:
    name = f"test_{os.getpid()}_{next(_counter)}"
    conn = await asyncpg.connect(admin_uri)
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        yield database_uri(admin_uri, name)
        await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database=DatabaseSettings(url=database_url))


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[Engine]:
    async with Engine(settings) as opened:
        yield opened


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real `ethos` command in a subprocess."""
    ethos = Path(sys.executable).parent / "ethos"
    return subprocess.run(
        [str(ethos), *args],
        env={**os.environ, "ETHOS_LOGGING__FORMAT": "json", **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
