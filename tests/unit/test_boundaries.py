"""The architecture's boundaries, checked like any other behaviour: the decay math is
pure, and only the store (and the migrations) talk to the database driver."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ethos"
# Modules that may import asyncpg: the store runs SQL, db opens connections, and the
# loops that must tell a lost database from a bug (ltp, daemon, sweep's deadlock retry).
DRIVER_USERS = {"store", "db", "ltp", "daemon", "sweep", "engine", "cli"}


def imports(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("name", ["decay", "explain", "curve"])
def test_the_math_does_no_io(name: str) -> None:
    found = imports(PACKAGE / f"{name}.py")
    forbidden = {"asyncpg", "sqlalchemy", "ethos.db", "ethos.store", "ethos.queries"}
    assert not found & forbidden


def test_only_the_store_and_the_loops_import_the_driver() -> None:
    users = {path.stem for path in PACKAGE.glob("*.py") if "asyncpg" in imports(path)}
    assert users <= DRIVER_USERS


SQL = re.compile(r"\b(SELECT\b.+\bFROM|UPDATE\s+\w+\s+SET|INSERT\s+INTO|DELETE\s+FROM)\b", re.S)


def test_sql_lives_in_queries() -> None:
    for path in PACKAGE.glob("*.py"):
        if path.stem == "queries":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not SQL.search(node.value), f"{path.name} holds SQL: {node.value[:60]!r}"
