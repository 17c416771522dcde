"""What front ends list and change by id (the HTTP API, the dashboard): agents,
memories described as `explain` does, one memory, updates, a memory's history."""

from __future__ import annotations

import difflib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from ethos.db.store import Row
from ethos.domain.errors import InputError
from ethos.domain.explain import Account, explain, forecast, json_value
from ethos.domain.inputs import (
    agent_id,
    at_most,
    aware,
    content_text,
    metadata_json,
    named_agent,
    parse_id,
)
from ethos.domain.policies import Policy
from ethos.domain.tables import SOURCE_TABLES, TableSpec, table_spec
from ethos.services.engine.core import EngineCore, specs
from ethos.services.retrieval import json_object

MAX_LIST = 1000  # memories one listing returns at most
# How many agents' names a mistyped one is compared with: a bound on the read and on
# difflib's work.
KNOWN_AGENTS = 10_000


@dataclass(frozen=True)
class TableCount:
    """An agent's memories in one table."""

    live: int
    pruned: int
    pinned: int


@dataclass(frozen=True)
class AgentCounts:
    """An agent and its memories counted, per table (by name)."""

    agent_id: str
    tables: dict[str, TableCount]

    @property
    def live(self) -> int:
        return sum(count.live for count in self.tables.values())

    @property
    def pruned(self) -> int:
        return sum(count.pruned for count in self.tables.values())

    def as_dict(self) -> dict[str, Any]:
        tables = {name: asdict(count) for name, count in self.tables.items()}
        return {
            "agent_id": self.agent_id,
            "live": self.live,
            "pruned": self.pruned,
            "tables": tables,
        }


@dataclass(frozen=True)
class PrunedCount:
    """Pruned memories of one table and one reason."""

    table_name: str
    reason: str | None
    count: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MemoryView:
    """A memory as front ends show it: `explain`'s account, the salience it will have
    if never retrieved again (days from now, salience; none once pruned), its text and
    metadata."""

    account: Account
    forecast: tuple[tuple[float, float], ...]
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime | None  # None: never updated

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.account.as_dict(),
            "readable": self.account.readable(),
            "forecast": list(self.forecast),
            "content": self.content,
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
            "updated_at": json_value(self.updated_at),
        }


@dataclass(frozen=True)
class HistoryEvent:
    """One thing that happened to a memory: added (with its first text), updated (the
    text then; `old`: the text it replaced, when it changed; `old_metadata`: the
    metadata it replaced, when that changed), pruned (with the reason) or recovered
    (by the command)."""

    event: Literal["add", "update", "prune", "recover"]
    at: datetime
    content: str | None = None
    old: str | None = None
    old_metadata: dict[str, Any] | None = None
    reason: str | None = None
    command: str | None = None

    def details(self) -> dict[str, Any]:
        """What this kind of event says beyond its text: a prune's reason, a recovery's
        command, the metadata an update replaced."""
        if self.event == "prune":
            return {"reason": self.reason}
        if self.event == "recover":
            return {"command": self.command}
        return {} if self.old_metadata is None else {"old_metadata": self.old_metadata}


class ListingEngine(EngineCore):
    """Agents, listings, one memory, updates, history, pruned counts."""

    async def agents(self) -> list[AgentCounts]:
        """Every agent with its memories counted: live, pruned and pinned, per table."""
        tables: dict[str, dict[str, TableCount]] = {}
        for row in await self.store.agent_counts():
            count = TableCount(row["live"], row["pruned"], row["pinned"])
            tables.setdefault(row["agent_id"], {})[row["table_name"]] = count
        return [AgentCounts(agent, counts) for agent, counts in tables.items()]

    async def absent_agent(self, agent: str) -> list[str] | None:
        """None where `agent` holds a memory (live or pruned); else the known agents'
        names closest to it (a typo's likely meaning), at most three, compared among
        the first `KNOWN_AGENTS` of them."""
        if await self.store.agent_holds_memories(agent_id(agent, "agent")):
            return None
        known = await self.store.known_agents(KNOWN_AGENTS)
        return difflib.get_close_matches(agent, known, n=3, cutoff=0.6)

    async def memories(
        self,
        agent: str | None = None,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        pruned: bool = False,
        limit: int = 50,
        offset: int = 0,
        now: datetime | None = None,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[MemoryView]:
        """Memories of one agent (or all), each described as `explain` does, with its
        content and metadata: live ones newest first, or (pruned) the most recently
        pruned first. With `matching` (mem0's filters), only those holding the mem0
        owners and the metadata of one of them ({"owners": {...}, "metadata": {...}}).
        Listing retrieves nothing."""
        if not 1 <= limit <= MAX_LIST or offset < 0:
            raise InputError(f"limit is 1..{MAX_LIST} and offset at least 0")
        at_most("offset", offset, self.settings.limits.offset, "limits.offset")
        named_agent(agent)
        at = await self._moment(now)
        found: list[tuple[TableSpec, Row]] = []
        for spec in specs(tables):
            rows = await self.store.list_memories(
                spec, agent, pruned=pruned, limit=limit + offset, offset=0, now=at,
                matching=matching,
            )  # fmt: skip
            found += [(spec, row) for row in rows]
        order = "pruned_at" if pruned else "created_at"
        found.sort(key=lambda pair: (pair[1][order], pair[1]["id"]), reverse=True)
        policies = {p.name: p for p in await self.store.policies()}
        return [
            describe(spec, row, at, policies[row["policy"]])
            for spec, row in found[offset : offset + limit]
        ]

    async def count_memories(
        self,
        agent: str | None = None,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        pruned: bool = False,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """How many memories `memories` lists with these arguments, over all its pages."""
        named_agent(agent)
        at = await self._moment(None)
        counts = [
            await self.store.count_memories(spec, agent, pruned=pruned, now=at, matching=matching)
            for spec in specs(tables)
        ]
        return sum(counts)

    async def memory(
        self,
        memory_id: str | uuid.UUID,
        *,
        agent: str | None = None,
        record: bool = False,
        now: datetime | None = None,
    ) -> MemoryView:
        """One memory by id (of `agent`, when given), described as `memories` does; with
        `record`, a live one is retrieved (LTP), as an agent reading it."""
        [((spec, owner), [found])] = (await self.locate([memory_id], agent=agent)).items()
        row = await self.store.fetch(spec, found, agent=owner)
        at = await self._moment(now)
        if record and not row["pruned"]:
            await self.ltp.record(spec, [found], at, agent=row["agent_id"])
        return describe(spec, row, at, await self.store.policy(row["policy"]))

    async def update(
        self,
        table: str | TableSpec,
        memory_id: str | uuid.UUID,
        *,
        content: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expires_at: datetime | Literal["keep"] | None = "keep",
        agent: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """Replace a live memory's (of `agent`: needed where several agents hold the id)
        text, metadata and/or expiry (None: it never expires; a table with expires_at
        only); its curve, retrievals and links stay. A new text is embedded again where
        the memory has a vector (a provider)."""
        spec = table_spec(table)
        if content is None and metadata is None and expires_at == "keep":
            raise InputError("give the new text, metadata or expiry")
        if isinstance(expires_at, datetime):
            if not spec.has_expiry:
                raise InputError(f"{spec.name} has no expiry: its memories fade, not expire")
            aware(expires_at, "expires_at")
        if content is not None:
            content = content_text(content)
        most = self.settings.limits.metadata_bytes
        stored = None if metadata is None else metadata_json(metadata, most)
        embedding = None
        if content is not None and (spec.has_embedding or spec in SOURCE_TABLES):
            if self.embedder is not None:
                embedding = await self._embed(content, spec, required=spec.has_embedding)
            elif spec.has_embedding:
                raise InputError("a vector's text changes with its embedding: set a provider")
        await self.store.update_memory(
            spec, parse_id(memory_id), content=content,
            metadata=stored,
            embedding=embedding, now=await self._moment(now), expires_at=expires_at,
            agent=agent,
        )  # fmt: skip

    async def history(
        self,
        table: str | TableSpec | None,
        memory_id: str | uuid.UUID,
        *,
        agent: str | None = None,
    ) -> list[HistoryEvent]:
        """What happened to a memory (of `agent`, where the caller knows it; of `table`,
        else found), oldest first: added, updated (each replaced text and metadata
        beside the new), pruned and recovered, each time."""
        (spec, owner), found = await self.whose(memory_id, agent=agent, table=table)
        row = await self.store.fetch(spec, found, agent=owner)
        revisions = await self.store.revisions_of(spec, row["id"], row["agent_id"])
        texts = [r["content"] for r in revisions] + [row["content"]]
        metadata = [
            None if r["metadata"] is None else json_object(r["metadata"])  # before 0038: none
            for r in revisions
        ] + [json_object(row["metadata"])]
        events = [HistoryEvent("add", row["created_at"], content=texts[0])]
        for i, revision in enumerate(revisions):
            events.append(
                HistoryEvent(
                    "update",
                    revision["revised_at"],
                    content=texts[i + 1],
                    old=texts[i] if texts[i] != texts[i + 1] else None,
                    old_metadata=metadata[i] if metadata[i] != metadata[i + 1] else None,
                )
            )
        if not revisions and row["updated_at"] is not None:
            events.append(HistoryEvent("update", row["updated_at"], content=texts[0]))
        for recovery in await self.store.recoveries_of(spec, row["id"]):
            if recovery["pruned"] is not None:  # the prune this recovery undid
                pruned = json.loads(recovery["pruned"])
                at = datetime.fromisoformat(pruned["pruned_at"])
                events.append(HistoryEvent("prune", at, reason=pruned["prune_reason"]))
            events.append(
                HistoryEvent("recover", recovery["recovered_as_of"], command=recovery["command"])
            )
        if row["pruned"]:
            events.append(HistoryEvent("prune", row["pruned_at"], reason=row["prune_reason"]))
        return sorted(events, key=lambda event: event.at)

    async def pruned_by_reason(
        self, agent: str | None = None, *, since: datetime | None = None
    ) -> list[PrunedCount]:
        """Pruned memories counted by table and reason (since a moment, or ever)."""
        at = aware(since, "since") if since else None
        named_agent(agent)
        return [PrunedCount(**row) for row in await self.store.pruned_by_reason(agent, at)]


def describe(spec: TableSpec, row: Row, at: datetime, policy: Policy) -> MemoryView:
    """A memory as front ends show it: `explain`'s account, its text and metadata."""
    account = explain(spec, row, at, policy)
    return MemoryView(
        account=account,
        forecast=() if row["pruned"] else tuple(forecast(spec, row, at, policy, account.prunes_at)),
        content=row["content"],
        metadata=json_object(row["metadata"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
