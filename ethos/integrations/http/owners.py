"""mem0's owners as ethos keeps them, and which memories a request may reach.

A memory added through mem0's shape keeps the owners it was added with (user_id,
agent_id, run_id) in its metadata under "mem0", fixed at add; the first of them is its
ethos agent. A memory added otherwise is its agent's: owner user_id. A request's owners,
top-level and in `filters`, combine as an AND: it reaches the memories of the ethos
agent its first owner names that hold every owner it names, and no other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ethos.errors import InputError
from ethos.inputs import agent_id
from ethos.integrations.http.shapes import IDS, OWNERS


@dataclass(frozen=True)
class Named:
    """The owners a request names (at least one); `agent` is the ethos agent whose
    memories it looks at."""

    ids: Mapping[str, str]

    @property
    def agent(self) -> str:
        return next(self.ids[key] for key in IDS if key in self.ids)

    def hold(self, metadata: Mapping[str, Any] | None, agent: str) -> bool:
        """Whether a memory of `agent` with this metadata holds every owner named."""
        held = owners_of(metadata, agent)
        return agent == self.agent and all(held.get(k) == v for k, v in self.ids.items())


def owners_of(metadata: Mapping[str, Any] | None, agent: str) -> Mapping[str, Any]:
    """The mem0 owners of a memory of `agent` with this metadata (as the store's
    listing and dedup read them: ethos.store.sql.memories.mem0_owners)."""
    kept = (metadata or {}).get(OWNERS)
    return kept if isinstance(kept, Mapping) else {"user_id": agent}


def named(given: Mapping[str, Any], filters: Mapping[str, Any] | None = None) -> Named:
    """The owners of the top-level ids in `given` and of `filters` (an equality on
    user_id, agent_id or run_id, or an AND of them), all of them; one value per owner."""
    found: dict[str, str] = {}
    for key, value in [*((k, given.get(k)) for k in IDS), *_filter_ids(filters or {})]:
        if value is None or value == "":
            continue
        agent_id(value, key)  # a text PostgreSQL can hold: each is matched in jsonb
        if found.setdefault(key, value) != value:
            raise InputError(f"{key} is both {found[key]!r} and {value!r}: a memory has one")
    if not found:
        raise InputError("give user_id, agent_id or run_id (or filters): whose memories")
    return Named(found)


def _filter_ids(filters: Mapping[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for key, value in filters.items():
        if key == "AND" and isinstance(value, list):
            for part in value:
                found += _filter_ids(part if isinstance(part, Mapping) else {"?": part})
        elif key in IDS and isinstance(value, str) and value:
            found.append((key, value))
        else:
            raise InputError(
                f"filter {key!r} is not supported: user_id, agent_id, run_id or an AND of them"
            )
    return found
