"""Statements as the store writes them: named parameters (Query, sql), the named blocks
of a .sql file (statements), a statement of one agent (of_agent) or placed on a Citus
node's shards (on_shard), and the binds of what a statement takes in bulk (embeddings,
mem0's filter terms)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_NAMED = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class Query:
    """A statement in asyncpg's $n form, and the name behind each position."""

    text: str
    names: tuple[str, ...]

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The binds in position order; values the statement does not name are ignored,
        a name without a value is a bug."""
        missing = [name for name in self.names if name not in values]
        if missing:
            raise TypeError(f"query parameters without a value: {', '.join(missing)}")
        return [values[name] for name in self.names]


def sql(text: str) -> Query:
    """%(name)s → $n; a name used twice is one parameter."""
    names: list[str] = []

    def position(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return Query(_NAMED.sub(position, text), tuple(names))


def of_agent(by_agent: bool, alias: str | None = None) -> str:
    """The condition that a statement is of agent %(agent)s (`by_agent`; else none): a
    plain equality, which Citus routes to the agent's shard, where it reads
    `%(agent)s IS NULL OR ...` as every shard (decision 0019)."""
    column = f"{alias}.agent_id" if alias else "agent_id"
    return f"AND {column} = %(agent)s" if by_agent else ""


def on_shard(query: Query, names: Mapping[str, str]) -> Query:
    """`query` against the shards of one Citus shard group, on the node that holds them:
    each table it names (`names`' keys: a bare identifier, or quoted as a regclass) by its
    shard's name there. Citus plans what names a distributed table as a distributed
    statement, and refuses a sweep's (its place lists span shards); a shard is a plain
    table to its node, which keeps one generic plan of the statement a session."""
    return _on_shard(query, tuple(sorted(names.items())))


@cache
def _on_shard(query: Query, names: tuple[tuple[str, str], ...]) -> Query:
    shard = dict(names)
    # the longest name first: episodic_traces_due is not episodic_traces followed by _due
    tables = "|".join(sorted(map(re.escape, shard), key=len, reverse=True))
    bare = re.compile(rf"(?<![\w'.])({tables})(?![\w'])")
    regclass = re.compile(rf"'({tables})'::regclass")
    text = regclass.sub(lambda m: f"'{shard[m.group(1)]}'::regclass", query.text)
    return Query(bare.sub(lambda m: shard[m.group(1)], text), query.names)


_BLOCK_NAME = re.compile(r"^-- name: (\w+)[ \t]*$", re.MULTILINE)


class NamedStatements:
    """The statements of a .sql file of named blocks: `-- name: <name>`, the block's
    comment lines, then one statement (its `;` optional), up to the next name. psql and
    SQL tools read the file as it is; each statement is taken by name, and a test sees
    that every block is taken."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _, *parts = _BLOCK_NAME.split(path.read_text(encoding="utf-8"))
        self._texts: dict[str, str] = {}
        for name, block in zip(parts[::2], parts[1::2], strict=True):
            if name in self._texts:
                raise ValueError(f"{path.name}: two statements named {name}")
            lines = block.strip().splitlines()
            while lines and lines[0].startswith("--"):
                lines.pop(0)  # the block's comment is for its readers
            self._texts[name] = "\n".join(lines).strip().removesuffix(";")
        self.taken: set[str] = set()

    def __getitem__(self, name: str) -> Query:
        if name not in self._texts:
            raise KeyError(f"{self.path.name} has no statement named {name}")
        self.taken.add(name)
        return sql(self._texts[name])

    def untaken(self) -> set[str]:
        return set(self._texts) - self.taken


def statements(module_file: str) -> NamedStatements:
    """The statements of the .sql file beside a module, by the module's name."""
    return NamedStatements(Path(module_file).with_suffix(".sql"))


def embedding_binds(embeddings: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The binds of embeddings written (sql.fragments.embedding_at): their numbers in one
    float8 array, which the driver sends binary (pgvector's text form took a third of a
    millisecond a 384-number vector to write), and how many each has."""
    return {
        "embeddings": list(itertools.chain.from_iterable(embeddings)),
        "dimension": len(embeddings[0]) if embeddings else 0,
    }


def terms(matching: Sequence[Mapping[str, Any]] | None) -> str | None:
    """mem0's filter terms (owners and metadata each, an OR of them) as the jsonb
    %(matching)s its statements match (fragments.held); None: no filter."""
    return None if matching is None else json.dumps(list(matching))
