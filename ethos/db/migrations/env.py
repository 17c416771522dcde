"""Alembic environment: runs migrations over asyncpg on ethos's database.

`ethos migrate` passes the URL and settings in config.attributes; a bare
`alembic` call loads ethos's settings and resolves the database the same way.

A database with no ethos tables yet is made from ethos/db/schema and stamped with the
newest revision; one made earlier is carried up by the migrations after its revision.
`config.attributes["from_baseline"]` makes even a new database by the migrations, from
the baseline on (the test that holds the two ways equal).
"""

from __future__ import annotations

import asyncio

from alembic import context
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, pool, text
from sqlalchemy.ext.asyncio import create_async_engine

from ethos.db import resolve_url, schema
from ethos.db.migrations import execute_script
from ethos.domain.errors import ConfigError
from ethos.settings import Settings, load_settings

# Serialises concurrent `ethos migrate` runs against one database.
MIGRATION_LOCK = 0x45_54_48_4F_53  # "ETHOS"

config = context.config
settings: Settings = config.attributes.setdefault("settings", None) or load_settings()
config.attributes["settings"] = settings


def _sqlalchemy_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"postgresql+asyncpg://{rest}" if scheme in ("postgres", "postgresql") else url


def _revision(connection: Connection) -> str | None:
    """The revision the database is at; None: no ethos tables yet."""
    if connection.execute(text("SELECT to_regclass('alembic_version')")).scalar() is None:
        return None
    return connection.execute(text("SELECT max(version_num) FROM alembic_version")).scalar()


def _check_known(revision: str, script: ScriptDirectory) -> None:
    if revision in {r.revision for r in script.walk_revisions()}:
        return
    base = script.get_base()
    # Before the first release the baseline is rewritten and the migrations folded into
    # it (decision 0025): a database of an earlier one is refused, not taken for it.
    raise ConfigError(
        f"the database is at ethos migration {revision}, unknown to this ethos (its"
        f" migrations start at the baseline {base}; unreleased ones are folded into it):"
        f" export its memories and import them into a new database"
    )


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=None)
    script = ScriptDirectory.from_config(config)
    with context.begin_transaction():
        context.execute(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        # Index builds get the memory the settings give them (a validated value: SET
        # takes no bind parameter).
        memory = settings.database.index_build_memory
        context.execute(f"SET LOCAL maintenance_work_mem = '{memory}'")
        revision = _revision(connection)
        if revision is None and not config.attributes.get("from_baseline"):
            execute_script(schema.script(settings.embedding.dimension), connection)
            context.get_context().stamp(script, "head")
            return
        if revision is not None:
            _check_known(revision, script)
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
