"""ethos's Alembic migrations (shipped inside the package as ethos.db.migrations): frozen
deltas that carry a database made earlier up to ethos/db/schema. A fresh database is made
from ethos/db/schema itself (env.py)."""

from __future__ import annotations

from pathlib import Path

from alembic import context, op
from sqlalchemy import Connection
from sqlalchemy.util import await_only

VERSIONS = Path(__file__).parent / "versions"


def execute_script(script: str, connection: Connection | None = None) -> None:
    """Run several SQL statements at once, as written, on connection (by default the
    migration's).

    op.execute prepares one statement at a time; a script goes to asyncpg's simple
    query protocol instead, inside the migration's transaction.
    """
    driver = (connection or op.get_bind()).connection.driver_connection
    assert driver is not None  # an async engine's connection always has its driver's
    await_only(driver.execute(script))


def execute_frozen(name: str) -> None:
    """Run the frozen SQL file `name` of versions/, its vectors of the configured
    dimension."""
    dimension = context.config.attributes["settings"].embedding.dimension
    text = (VERSIONS / name).read_text()
    execute_script(text.replace("{dimension}", str(int(dimension))))
