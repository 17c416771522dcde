"""Memories: insert (with deduplication), fetch, repeats, listing, updates,
revisions, and the counts the API and the dashboard show."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from ethos.db.store.core import Row, StoreCore, Transaction, shared_id
from ethos.db.store.query import embedding_binds, terms
from ethos.db.store.sql.fragments import EMBED
from ethos.db.store.sql.memories import (
    AGENT_COUNTS,
    AGENT_HOLDS_MEMORIES,
    AUTO_HALF,
    IMPORTANCE_TIER,
    KNOWN_AGENTS,
    LOCK_CONTENT,
    PRUNED_BY_REASON,
    RARE_WORDS,
    REVISIONS_OF,
    STATS,
    WORDS_OF,
    build_count_live_query,
    build_count_memories_query,
    build_fetch_memory_query,
    build_find_duplicate_query,
    build_insert_query,
    build_insert_set_query,
    build_list_memories_query,
    build_raise_repeat_query,
    build_update_memory_query,
)
from ethos.domain.errors import NotFoundError, unknown_ids
from ethos.domain.inputs import MemoryInput
from ethos.domain.tables import TableSpec


class MemoryStore(StoreCore):
    """Store's memories: insert, fetch, repeats, listing, updates, revisions."""

    async def insert_many(
        self,
        memories: Sequence[MemoryInput],
        *,
        dedup_near: float | None = None,
        embedded: Sequence[list[float] | None] | None = None,
    ) -> list[tuple[uuid.UUID, Row | None]]:
        """Insert memories (`embedded`: the vector that embeds each, or None, written
        with it), in one transaction: all of them or, on an error, none; each as (its
        id, its row as written: explain.lifetime_columns). With `dedup_near`, a live
        memory of the agent with the same normalised content (a vector: and an
        embedding at least `dedup_near` cosine-similar) is found instead: (its id,
        None); adds of one content are then taken one at a time, so concurrent ones make
        one row. A duplicate is of the memory's own identity (its mem0 owners:
        fragments.identity)."""
        vectors = embedded or [None] * len(memories)
        for spec in {memory.table for memory in memories}:
            await self.check_table(spec)
        # Read before the transaction: the clock may take a pooled connection of its own.
        dedup = dedup_near is not None
        now = await self.now() if dedup else None
        found = []
        async with self._transaction() as tx:
            # Each content's lock, in one order whatever the batch's: batches sharing
            # contents take them one after the other instead of each waiting on the other.
            keys = {(m.table.name, m.agent_id, m.content) for m in memories} if dedup else ()
            for table, agent, content in sorted(keys):
                await tx.fetchval(LOCK_CONTENT, table=table, agent=agent, content=content)
            for memory, vector in zip(memories, vectors, strict=True):
                at = memory.created_at or now
                found.append(await self._insert(tx, memory, dedup_near, at, vector))
        return found

    @staticmethod
    async def _insert(
        tx: Transaction,
        memory: MemoryInput,
        dedup_near: float | None,
        at: datetime | None,
        embedded: list[float] | None,
    ) -> tuple[uuid.UUID, Row | None]:
        spec = memory.table
        columns = memory.columns()
        if dedup_near is not None:
            existing = await tx.fetchval(
                build_find_duplicate_query(spec),
                agent=memory.agent_id,
                content=memory.content,
                embedding=memory.embedding,
                near=dedup_near,
                now=at,
                metadata=columns["metadata"],
            )
            if existing is not None:
                return existing, None
        query = build_insert_query(spec, tuple(columns))
        row = await tx.fetchrow(query, **columns)
        assert row is not None  # an INSERT … VALUES returns its row
        new_id: uuid.UUID = row["id"]
        if embedded is not None:
            await tx.fetchval(
                EMBED, table=spec.name, agent=memory.agent_id, ids=[new_id], fields=["$"],
                cleared=None, **embedding_binds([embedded]),
            )  # fmt: skip
        return new_id, row

    async def insert_set(self, memories: Sequence[MemoryInput]) -> None:
        """Memories written as a set, in one transaction: one statement per table and
        set of columns given, through the write path as any insert. No duplicate is
        looked for."""
        groups: dict[tuple[TableSpec, tuple[str, ...]], list[dict[str, Any]]] = {}
        for memory in memories:
            columns = memory.columns()
            groups.setdefault((memory.table, tuple(columns)), []).append(columns)
        for spec, _ in groups:
            await self.check_table(spec)
        async with self._transaction() as tx:
            for (spec, names), rows in groups.items():
                binds = {name: [row[name] for row in rows] for name in names}
                if "embedding" in binds:
                    binds.update(embedding_binds(binds.pop("embedding")))
                await tx.fetch(build_insert_set_query(spec, names), **binds)

    async def raise_repeat(self, memory: MemoryInput, memory_id: uuid.UUID) -> Row:
        """Give the memory what its repeat asks for beyond it (pin, metadata keys,
        importance): its policy, and which of those changed."""
        row = await self._fetchrow(
            build_raise_repeat_query(memory.table),
            agent=memory.agent_id,
            id=memory_id,
            pinned=memory.pinned,
            metadata=json.dumps(memory.metadata),
            importance=memory.importance,
        )
        assert row is not None
        return row

    async def fetch(
        self, spec: TableSpec, memory_id: uuid.UUID, *, agent: str | None = None
    ) -> Row:
        """A memory by id (of `agent`, where the caller knows it: read in the agent's
        session; where it does not, an id of several agents' memories is refused)."""
        await self.check_table(spec)
        rows = await self._fetch_of(build_fetch_memory_query(spec), id=memory_id, agent=agent)
        if not rows:
            raise NotFoundError(unknown_ids(f"{spec.name} row", str(memory_id), agent))
        if len(rows) > 1:
            raise shared_id(spec, memory_id, [row["agent_id"] for row in rows])
        return rows[0]

    async def count_live(self, spec: TableSpec, agent: str | None) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval_of(build_count_live_query(spec), agent=agent)
        return count

    async def list_memories(
        self,
        spec: TableSpec,
        agent: str | None,
        *,
        pruned: bool,
        limit: int,
        offset: int,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch_of(
            build_list_memories_query(spec, pruned=pruned), agent=agent, limit=limit,
            offset=offset, now=now, matching=terms(matching),
        )  # fmt: skip

    async def count_memories(
        self,
        spec: TableSpec,
        agent: str | None,
        *,
        pruned: bool,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None,
    ) -> int:
        """How many memories list_memories holds in all, over its pages."""
        await self.check_table(spec)
        count: int = await self._fetchval_of(
            build_count_memories_query(spec, pruned=pruned), agent=agent, now=now,
            matching=terms(matching),
        )  # fmt: skip
        return count

    async def agent_counts(self) -> list[Row]:
        return await self._fetch(AGENT_COUNTS)

    async def agent_holds_memories(self, agent: str) -> bool:
        held: bool = await self._fetchval_of(AGENT_HOLDS_MEMORIES, agent=agent)
        return held

    async def known_agents(self, most: int) -> list[str]:
        return [row["agent_id"] for row in await self._fetch(KNOWN_AGENTS, most=most)]

    async def pruned_by_reason(self, agent: str | None, since: datetime | None) -> list[Row]:
        return await self._fetch(PRUNED_BY_REASON, agent=agent, since=since)

    async def rare_words(self, agent: str, tsv: str, content: str, n: int = 5) -> list[str]:
        """The lexemes of `tsv` that count most in its automatic importance, now, each as
        `content` writes it."""
        rows = await self._fetch(RARE_WORDS, agent=agent, tsv=tsv, n=n)
        lexemes = [row["lexeme"] for row in rows]
        return [
            row["word"] for row in await self._fetch(WORDS_OF, lexemes=lexemes, content=content)
        ]

    async def importance_tier(self, importance: float) -> str:
        """The policy `importance` picks, as the write path picks a new memory's."""
        policy: str = await self._fetchval(IMPORTANCE_TIER, importance=importance)
        return policy

    async def auto_half(self, agent: str) -> Row:
        """The words that make an automatic importance of 0.5 for `agent` now (`half`),
        and the words its memories hold on average (`average`, None before any)."""
        row = await self._fetchrow(AUTO_HALF, agent=agent)
        assert row is not None  # the settings' row: written when the engine opened
        return row

    async def revisions_of(self, spec: TableSpec, memory_id: uuid.UUID, agent: str) -> list[Row]:
        return await self._fetch_of(REVISIONS_OF, table=spec.name, id=memory_id, agent=agent)

    async def update_memory(
        self,
        spec: TableSpec,
        memory_id: uuid.UUID,
        *,
        content: str | None,
        metadata: str | None,
        embedding: list[float] | None,
        now: datetime,
        expires_at: datetime | Literal["keep"] | None = "keep",
        agent: str | None = None,
    ) -> None:
        """A live memory's (of `agent`; where none is named, of the one agent that holds
        the id) text and metadata replaced (None: kept), and its expiry (None: none); one
        line if it is pruned or unknown. `embedding`: the new text's (an episode's or
        fact's takes the place of its embeddings)."""
        await self.check_table(spec)
        owner = await self.live_owner(spec, memory_id, agent)
        async with self._transaction() as tx:
            found = owner is not None and await tx.fetchval(
                build_update_memory_query(spec), id=memory_id, agent=owner, content=content,
                metadata=metadata, embedding=embedding if spec.has_embedding else None, now=now,
                expire=expires_at != "keep",
                expires_at=None if expires_at == "keep" else expires_at,
            )  # fmt: skip
            if found and embedding is not None and not spec.has_embedding:
                await tx.fetchval(
                    EMBED, table=spec.name, agent=owner, ids=[memory_id], fields=["$"],
                    cleared=[memory_id], **embedding_binds([embedding]),
                )  # fmt: skip
        if not found:
            raise await self.missing(spec, memory_id, agent)

    async def stats(self, agent: str | None) -> dict[str, list[dict[str, Any]]]:
        async with self._transaction() as tx:
            return {
                name: [dict(row) for row in await tx.fetch(query, agent=agent)]
                for name, query in STATS.items()
            }
