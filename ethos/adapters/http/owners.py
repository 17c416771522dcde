"""mem0's owners as ethos keeps them, and which memories a request may reach.

A memory added through mem0's shape keeps the owners it was added with (user_id,
agent_id, run_id) in its metadata under "mem0", fixed at add; the first of them is its
ethos agent. A memory added otherwise is its agent's: owner user_id. A request's owners,
top-level and in `filters`, combine as an AND (filters may add metadata equalities and
an OR): it reaches the memories of the ethos agent its first owner names that hold
every owner it names, and no other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from ethos.adapters.http.shapes import IDS, OWNERS
from ethos.domain.errors import InputError
from ethos.domain.inputs import agent_id

# One alternative of a request's filters: the owners and the metadata a memory holds.
Term = tuple[dict[str, str], dict[str, Any]]
MAX_TERMS = 64  # the alternatives an AND of ORs may multiply into
# mem0's filter operators: a value holding one is a comparison, not an equality (refused
# rather than matched as jsonb containment, which would find nothing, silently).
OPERATORS = frozenset({"in", "nin", "gt", "gte", "lt", "lte", "ne", "contains", "icontains"})


@dataclass(frozen=True)
class Named:
    """The owners a request names (at least one); `agent` is the ethos agent whose
    memories it looks at. `terms`: what a memory must hold for the request's filters, an
    OR of them, each its owners and metadata (equality: jsonb containment)."""

    ids: Mapping[str, str]
    terms: tuple[Term, ...] = ()

    @property
    def agent(self) -> str:
        return next(self.ids[key] for key in IDS if key in self.ids)

    @property
    def only_owners(self) -> bool:
        """Whether the request names owners alone, all of them held (no OR, no metadata)."""
        return len(self.terms) <= 1 and not any(metadata for _, metadata in self.terms)

    def matching(self) -> list[dict[str, Any]]:
        """The terms as the store matches them in SQL (ethos.db.store.sql.memories)."""
        return [{"owners": owners, "metadata": metadata} for owners, metadata in self.terms]


def owners_of(metadata: Mapping[str, Any] | None, agent: str) -> Mapping[str, Any]:
    """The mem0 owners of a memory of `agent` with this metadata (as the store's
    statements read them: ethos.db.store.sql.fragments.mem0_owners)."""
    kept = (metadata or {}).get(OWNERS)
    return kept if isinstance(kept, Mapping) else {"user_id": agent}


def named(given: Mapping[str, Any], filters: Mapping[str, Any] | None = None) -> Named:
    """The owners of the top-level ids in `given` and of `filters`, which may also hold
    metadata equalities ({"metadata": {...}}), AND and OR of them (as mem0 writes them);
    one value per owner. Every alternative names the same ethos agent (its first owner):
    a request looks at one agent's memories."""
    top = {key: given[key] for key in IDS if given.get(key) not in (None, "")}
    terms = _all([_terms({key: value}) for key, value in top.items()] + [_terms(filters or {})])
    firsts = {next(((k, o[k]) for k in IDS if k in o), None) for o, _ in terms}
    if None in firsts:
        raise InputError("give user_id, agent_id or run_id (or filters): whose memories")
    if len(firsts) > 1:
        raise InputError(
            "filters: every alternative of an OR names the same first owner (user_id, else"
            " agent_id, else run_id): one agent's memories"
        )
    common = {k: v for k, v in terms[0][0].items() if all(o.get(k) == v for o, _ in terms)}
    return Named(common, tuple(terms))


def _terms(filters: Mapping[str, Any]) -> list[Term]:
    """A filter as an OR of terms, each an AND of owners and metadata."""
    parts: list[list[Term]] = []
    for key, value in filters.items():
        if key in ("AND", "OR") and isinstance(value, list) and value:
            each = [_terms(p if isinstance(p, Mapping) else {"?": p}) for p in value]
            parts.append(_all(each) if key == "AND" else [t for part in each for t in part])
        elif key in IDS and isinstance(value, str) and value:
            _equality(repr(key), value)
            agent_id(value, key)  # a text PostgreSQL can hold: each is matched in jsonb
            parts.append([({key: value}, {})])
        elif key == "metadata" and isinstance(value, Mapping) and OWNERS not in value:
            for name, wanted in value.items():
                _equality(f"metadata {name!r}", wanted)
            parts.append([({}, dict(value))])
        else:
            raise InputError(f"filter {key!r} is not supported: user_id, agent_id, run_id,"
                             " metadata (equality), or an AND or OR of them")  # fmt: skip
    return _all(parts)


def _equality(name: str, value: Any) -> None:
    """One line for a value that is one of mem0's comparisons or its wildcard: ethos's
    filters are equalities."""
    if value == "*" or (isinstance(value, Mapping) and OPERATORS & value.keys()):
        raise InputError(f"filter {name}: mem0's operators and * are not supported, only equality")


def _all(parts: list[list[Term]]) -> list[Term]:
    """The AND of ORs of terms, as one OR of terms (at most MAX_TERMS); an alternative
    no memory can hold (one owner with two values) is left out, and if none is left,
    that is the request's error."""
    terms: list[Term] = [({}, {})]
    for part in parts:
        kept: list[Term] = []
        for a, b in product(terms, part):
            try:
                kept.append(_both(a, b))
            except InputError as exc:
                conflict = exc
        if not kept:
            raise conflict
        terms = kept
        if len(terms) > MAX_TERMS:
            raise InputError(f"filters make over {MAX_TERMS} alternatives: write fewer ORs")
    return terms


def _both(a: Term, b: Term) -> Term:
    for key, value in b[0].items():
        if a[0].get(key, value) != value:
            raise InputError(f"{key} is both {a[0][key]!r} and {value!r}: a memory has one")
    for key, value in b[1].items():
        if a[1].get(key, value) != value:
            raise InputError(f"metadata {key} is both {a[1][key]!r} and {value!r}")
    return {**a[0], **b[0]}, {**a[1], **b[1]}
