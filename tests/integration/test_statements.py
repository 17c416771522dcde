"""Every statement the store can run, rendered for every table and every variant its
builder takes, is parsed and planned by PostgreSQL itself (a prepared statement on a
migrated database): a builder that renders broken SQL for a combination no other test
happens to run fails here, by the statement's name."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import ethos.db.store.sql
from ethos.db.store import core
from ethos.db.store.query import NamedStatements, Query
from ethos.db.store.sql.cluster import NEEDS_CITUS
from ethos.db.store.sql.items import ITEM_SCORES
from ethos.domain.tables import MEMORY_TABLES

MODULES = [core] + [
    importlib.import_module(f"{ethos.db.store.sql.__name__}.{m.name}")
    for m in pkgutil.iter_modules(ethos.db.store.sql.__path__)
]
# The values each builder parameter is rendered with, by its name; a bool takes both.
SAMPLES: dict[str, tuple[Any, ...]] = {
    "spec": MEMORY_TABLES,
    "tables": (MEMORY_TABLES, MEMORY_TABLES[1:2]),
    "columns": (("agent_id", "content"),),
    "batch_size": (500,),
    "ranked_by": (None, *ITEM_SCORES, "text"),
    "links_tau": (30.0,),
    "links_prune": (0.05,),
    "learning_rate": (0.1,),
    "wrong_factor": (0.5,),
}


def _label(value: Any) -> str:
    if isinstance(value, tuple) and all(hasattr(v, "alias") for v in value):
        return "+".join(v.alias for v in value)
    return str(getattr(value, "alias", value))


def _variants(builder: Any) -> Iterator[tuple[str, Query]]:
    parameters = inspect.signature(builder).parameters.values()
    choices = [
        (False, True) if p.annotation in (bool, "bool") else SAMPLES[p.name] for p in parameters
    ]
    for values in itertools.product(*choices):
        arguments = dict(zip((p.name for p in parameters), values, strict=True))
        yield ",".join(f"{k}={_label(v)}" for k, v in arguments.items()), builder(**arguments)


def statements() -> Iterator[tuple[str, Query]]:
    for module in MODULES:
        short = module.__name__.rsplit(".", 1)[-1]
        for name, value in vars(module).items():
            if isinstance(value, Query):
                yield f"{short}.{name}", value
            elif (
                name.startswith("build_")
                and callable(value)
                and inspect.unwrap(value).__module__ == module.__name__  # not an import
            ):
                for label, query in _variants(value):
                    yield f"{short}.{name}({label})", query


STATEMENTS = dict(statements())


def test_every_module_of_statements_is_read() -> None:
    """A new module of statements, or a builder parameter without a sample (a KeyError
    above), shows here rather than going unchecked."""
    assert {name.split(".")[0] for name in STATEMENTS} == {
        m.__name__.rsplit(".", 1)[-1] for m in MODULES
    }


def test_every_named_block_is_a_statement_the_store_takes() -> None:
    """Each .sql file belongs to one module, which takes every block in it: a statement
    no code runs is dead, and a file no module reads would go unchecked above."""
    files = {m.STATEMENTS.path: m.STATEMENTS for m in MODULES if hasattr(m, "STATEMENTS")}
    assert set(files) == set(Path(ethos.db.store.sql.__path__[0]).glob("*.sql"))
    assert {path.name: named.untaken() for path, named in files.items()} == {
        path.name: set() for path in files
    }


def test_a_named_block_file_reads_as_its_statements(tmp_path: Path) -> None:
    path = tmp_path / "some.sql"
    path.write_text(
        "-- A header.\n\n-- name: one\n-- What it does.\nSELECT %(a)s\n  + 1;\n\n"
        "-- name: two\nSELECT 2\n"
    )
    named = NamedStatements(path)
    assert named["one"] == Query("SELECT $1\n  + 1", ("a",))
    assert named.untaken() == {"two"}
    with pytest.raises(KeyError, match=r"some\.sql has no statement named three"):
        named["three"]
    path.write_text("-- name: one\nSELECT 1;\n-- name: one\nSELECT 2;\n")
    with pytest.raises(ValueError, match="two statements named one"):
        NamedStatements(path)


async def test_postgresql_parses_and_plans_every_statement(conn: asyncpg.Connection) -> None:
    """(But those of a Citus coordinator's: tests/citus/test_statements.py.)"""
    failed = []
    for name, query in STATEMENTS.items():
        if query in NEEDS_CITUS:
            continue
        try:
            await conn.prepare(query.text)
        except asyncpg.PostgresError as exc:
            failed.append(f"{name}: {exc}")
    assert not failed, "\n".join(failed)
    assert len(STATEMENTS) > 150
