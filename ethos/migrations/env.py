"""Alembic environment: runs migrations over asyncpg on ethos's database.

`ethos migrate` passes the URL and settings in config.attributes; a bare
`alembic` call loads ethos's settings and resolves the database the same way.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection, pool
from sqlalchemy.ext.asyncio import create_async_engine

from ethos.db import resolve_url
from ethos.schema import build_metadata
from ethos.settings import Settings, load_settings

# Serialises concurrent `ethos migrate` runs against one database.
MIGRATION_LOCK = 0x45_54_48_4F_53  # "ETHOS"

config = context.config
settings: Settings = config.attributes.setdefault("settings", None) or load_settings()
config.attributes["settings"] = settings
target_metadata = build_metadata(settings.embedding.dimension)


def _sqlalchemy_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"postgresql+asyncpg://{rest}" if scheme in ("postgres", "postgresql") else url


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata)
    with context.begin_transaction():
        context.execute(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        # Index builds in migrations get the memory the settings give them (a validated
        # value: SET takes no bind parameter).
        memory = settings.database.index_build_memory
        context.execute(f"SET LOCAL maintenance_work_mem = '{memory}'")
        context.run_migrations()


async def _migrate() -> None:
    url = config.attributes.get("url") or await resolve_url(settings)
    engine = create_async_engine(_sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


asyncio.run(_migrate())
