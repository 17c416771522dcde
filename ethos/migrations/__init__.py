"""ethos's Alembic migrations (shipped inside the package as ethos.migrations)."""

import importlib
import re

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


def earlier_function(module: str, name: str, script: str = "FUNCTIONS") -> str:
    """Function `name` as the earlier migration `module` defined it in its `script`, as a
    CREATE OR REPLACE (which keeps the grants later migrations gave it): what a
    downgrade puts back after an upgrade replaced it."""
    text: str = getattr(importlib.import_module(f"{__name__}.versions.{module}"), script)
    found = re.search(rf"CREATE (?:OR REPLACE )?FUNCTION {name}\(", text)
    if found is None:
        raise LookupError(f"{module}.{script} defines no function {name}")
    opening = text.index("$$", found.end())  # the body's quote; the next `$$;` closes it
    end = text.index("$$;", opening + 2) + 3
    return f"CREATE OR REPLACE FUNCTION {name}(" + text[found.end() : end]


def branches(
    statement: str, cases: dict[str, dict[str, object]], otherwise: str | None = None
) -> str:
    """One static `statement` per case: IF <case> THEN <its statement> ELSIF ... END IF
    (PL/pgSQL plans each once a session, where EXECUTE plans on every run), and
    `otherwise`, the same statement run through EXECUTE, for any other case: a table
    ethos does not ship attaches the same trigger functions."""
    arms = [
        f"{'ELSIF' if i else 'IF'} {case} THEN\n{statement.format(**values)}"
        for i, (case, values) in enumerate(cases.items())
    ]
    if otherwise is not None:
        arms.append(f"ELSE\n        {otherwise}")
    return "\n    ".join(arms) + "\n    END IF;"
