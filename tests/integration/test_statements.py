"""Every statement the store can run, rendered for every table and every variant its
builder takes, is parsed and planned by PostgreSQL itself (a prepared statement on a
migrated database): a builder that renders broken SQL for a combination no other test
happens to run fails here, by the statement's name."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import ethos.db.store.sql
from ethos.db.store import core
from ethos.db.store.query import NamedStatements, Query, sql
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


# A statement's parts (each query level: a subquery, a CTE, the statement around them)
# that name a memory table and pick rows by id must name their agent too: two agents may
# hold one id (their keys lead with the agent), and a part that names only the id
# reaches both agents' rows.
_MEMORY_TABLE = re.compile(r"\b(?:episodic_traces|semantic_facts|memory_vectors|memory_links)\b")
_BY_ID = re.compile(r"(?<![\w.])(?:\w+\.)?(?:id|source_id|a_id|b_id)\s*(?:=|<>|\bIN\b)", re.I)
_BY_AGENT = re.compile(
    r"(?:\w+\.)?agent_id(?:\s+COLLATE\s+\"C\")?\s*(?:=|\bIN\b)"  # agent_id = …
    r"|=\s*(?:\w+\.)?agent_id\b"  # … = x.agent_id
    r"|\(\s*agent_id\s*,\s*id\s*\)\s*(?:=|\bIN\b)",  # (agent_id, id) IN (…)
    re.I,
)
_SUBQUERY = re.compile(r"\s*(?:SELECT|WITH|VALUES|UPDATE|DELETE|INSERT)\b", re.I)

# The statements allowed to pick rows by id without naming an agent, each operator-wide
# or a lookup whose answer names the agents (builder or statement names; every variant).
_ACROSS_AGENTS = {
    # Which agent holds an id: the lookups that find the agent the next statement names,
    # or say that an id is unknown or pruned (read only).
    "core.build_id_states_query",
    # Schedule hints (derived data) made anew for the rows a dropped hint held, of any
    # agent: they write no memory.
    "lifecycle.build_rehint_rows_query",
    # The sweep: every agent's due rows, found through hints by their places.
    "sweep.build_due_batch_query",
}


def _parts(text: str) -> list[str]:
    """Each query level of a statement, without its comments, string literals and
    subqueries (a parenthesis that opens with a verb is a level of its own)."""
    text = re.sub(r"'(?:[^']|'')*'", "''", re.sub(r"--[^\n]*", "", text))
    parts: list[str] = []

    def level(i: int) -> tuple[str, int]:
        own: list[str] = []
        while i < len(text):
            if text[i] == "(":
                inner, i = level(i + 1)
                if _SUBQUERY.match(inner):
                    parts.append(inner)
                    own.append("(…)")
                else:
                    own.append(f"({inner})")
            elif text[i] == ")":
                return "".join(own), i + 1
            else:
                own.append(text[i])
                i += 1
        return "".join(own), i

    parts.append(level(0)[0])
    return parts


def _names_no_agent(query: Query) -> bool:
    return any(
        _MEMORY_TABLE.search(part) and _BY_ID.search(part) and not _BY_AGENT.search(part)
        for part in _parts(query.text)
    )


def test_every_statement_about_one_agents_memories_names_the_agent() -> None:
    """Issue 64: a merge matched ids alone and pruned another agent's memory of the same
    id; an update, a forget with no agent, a purge, a recovery and an item's TTL did the
    same. Zero statements pick a memory by id without its agent, but those allowed above
    (each an operator's statement over every agent, or a lookup of the agents)."""
    found = {name for name, query in STATEMENTS.items() if _names_no_agent(query)}
    allowed = {name for name in found if name.split("(")[0] in _ACROSS_AGENTS}
    assert sorted(found - allowed) == []
    # every entry of the allow-list still matches a statement: none is left stale
    assert {name.split("(")[0] for name in allowed} == _ACROSS_AGENTS


def test_the_check_of_agents_reads_each_part_of_a_statement() -> None:
    """The check above finds a part without its agent even when another part has one."""
    merge_before = sql(
        "WITH members AS (SELECT m.id FROM unnest($1::uuid[]) AS g(id)"
        " JOIN semantic_facts AS m ON m.id = g.id)"
        " UPDATE semantic_facts AS m SET pruned = true FROM members AS r"
        " WHERE m.agent_id = 'a' AND m.id = r.id"
    )
    assert _names_no_agent(merge_before)
    assert not _names_no_agent(
        sql(merge_before.text.replace("ON m.id", "ON m.agent_id = 'a' AND m.id"))
    )
    assert _names_no_agent(
        sql("DELETE FROM memory_vectors WHERE id IN (SELECT id FROM x) -- agent_id = 1")
    )
    assert not _names_no_agent(sql("SELECT count(*) FROM episodic_traces WHERE agent_id = $1"))
    assert not _names_no_agent(sql("SELECT id FROM decay_policies WHERE id = $1"))
