"""ethos's Alembic migrations (shipped inside the package as ethos.migrations)."""

from alembic import op
from sqlalchemy.util import await_only


def execute_script(script: str) -> None:
    """Run several SQL statements at once, as written.

    op.execute prepares one statement at a time; a script goes to asyncpg's simple
    query protocol instead, inside the migration's transaction.
    """
    driver = op.get_bind().connection.driver_connection
    assert driver is not None  # an async engine's connection always has its driver's
    await_only(driver.execute(script))
