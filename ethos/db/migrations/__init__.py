"""ethos's Alembic migrations (shipped inside the package as ethos.db.migrations): the
baseline, and the frozen deltas after it that carry a database made earlier up to
ethos/db/schema; before the first release the baseline is the schema itself and there
are none after it (decision 0025). A fresh database is made from
ethos/db/schema itself (env.py)."""

from __future__ import annotations

import re
from pathlib import Path

from alembic import context, op
from sqlalchemy import Connection
from sqlalchemy.util import await_only

VERSIONS = Path(__file__).parent / "versions"


# A script's pieces that may hold a ";" that ends no statement: comments, quoted strings
# and identifiers, dollar-quoted bodies (their closing tag matched by the backreference).
_SCRIPT_TOKENS = re.compile(
    r"""
      --[^\n]*                                 # a line comment
    | /\*.*?\*/                                # a block comment
    | (?<!\w)[eE]'(?:[^'\\]|\\.|'')*'           # a string with backslash escapes
    | '(?:[^']|'')*'                           # a string
    | "(?:[^"]|"")*"                           # a quoted identifier
    | (\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$).*?\1   # a dollar-quoted body
    | ;
    """,
    re.DOTALL | re.VERBOSE,
)


def script_statements(script: str) -> list[str]:
    """The statements of an SQL script, split at each ";" that ends one, as psql reads
    a file (comments alone are no statement)."""
    found, start = [], 0
    for token in _SCRIPT_TOKENS.finditer(script):
        if token.group() == ";":
            found.append(script[start : token.end()])
            start = token.end()
    found.append(script[start:])
    return [s.strip() for s in found if _SCRIPT_TOKENS.sub("", s.replace(";", "")).strip()]


def execute_script(script: str, connection: Connection | None = None) -> None:
    """Run an SQL script's statements, one after another, on connection (by default the
    migration's), inside its transaction.

    One at a time, as psql runs a file: Citus passes an ALTER TABLE of a distributed
    table on to its shards as the text it was sent, and refuses a text of several
    statements. Through asyncpg's simple query protocol (op.execute would prepare each).
    """
    driver = (connection or op.get_bind()).connection.driver_connection
    assert driver is not None  # an async engine's connection always has its driver's
    for statement in script_statements(script):
        await_only(driver.execute(statement))


def execute_definition(text: str) -> None:
    """Run a schema definition (the schema's, or a frozen copy of it), its vectors of the
    configured dimension."""
    dimension = context.config.attributes["settings"].embedding.dimension
    execute_script(text.replace("{dimension}", str(int(dimension))))
