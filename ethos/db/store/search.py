"""Search: vector search, text recall, locating memories, the LangGraph items, and
vectors with their index."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ethos.db.store.core import Row, StoreCore
from ethos.db.store.query import embedding_binds, terms
from ethos.db.store.sql.fragments import EMBED
from ethos.db.store.sql.items import (
    GET_ITEM,
    ITEM_NAMESPACES,
    SEARCH_ITEMS,
    build_put_items_query,
    build_refresh_item_ttls_query,
)
from ethos.db.store.sql.search import (
    BUILD_VECTOR_INDEX,
    INDEX_BUILD_MEMORY,
    LOCATE_MEMORIES,
    SEARCH_VECTORS,
    SEARCH_VECTORS_EXACT,
    build_count_missing_vectors_query,
    build_missing_vectors_query,
    build_recall_query,
)
from ethos.domain.moments import Moment
from ethos.domain.tables import TableSpec


class SearchStore(StoreCore):
    """Store's search: vectors, text recall, the LangGraph items, the vector index."""

    async def nearest(
        self,
        *,
        agent: str,
        embedding: list[float],
        k: int,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]:
        """The agent's k vectors nearest the embedding (those holding one of mem0's
        terms `matching`, when given)."""
        values = {
            "now": now,
            "agent": agent,
            "embedding": embedding,
            "candidates": max(self.settings.search.candidates, k),
            "k": k,
            "salience_weight": self.settings.search.salience_weight,
            "centering": self.settings.search.vector_centering,
            "matching": terms(matching),
        }
        async with self._transaction_of(agent) as tx:
            rows = await tx.fetch(SEARCH_VECTORS, **values)
            if len(rows) < k:  # the bounded index scan fell short: look at every vector
                rows = await tx.fetch(SEARCH_VECTORS_EXACT, **values)
        return rows

    async def recall(
        self,
        *,
        agent: str,
        query: str,
        tables: tuple[TableSpec, ...],
        k: int,
        now: datetime,
        moment: Moment | None = None,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]:
        """Live memories of the agent matching any word of `query` (and holding one of
        mem0's terms `matching`, when given), best first; those written in `moment` (the
        one the query names) weigh more."""
        for spec in tables:
            await self.check_table(spec)
        search = self.settings.search
        weighed = moment is not None and search.moment_weight > 0
        return await self._fetch_of(
            build_recall_query(tables, context=search.context_weight > 0, moment=weighed),
            agent=agent,
            text=query,
            now=now,
            k=k,
            candidates=max(search.candidates, k),
            salience_weight=search.salience_weight,
            context_weight=search.context_weight,
            moment_weight=search.moment_weight,
            moment_year=moment and moment.year,
            moment_month=moment and moment.month,
            moment_day=moment and moment.day,
            matching=terms(matching),
        )

    async def locate(self, ids: list[uuid.UUID], agent: str | None = None) -> list[Row]:
        """The table, agent and pruned state of each of these memories that exists (of
        `agent`, where one is named: in its session)."""
        return await self._fetch_of(LOCATE_MEMORIES, ids=ids, agent=agent)

    async def get_item(self, agent: str, key: str, now: datetime) -> Row | None:
        return await self._fetchrow(GET_ITEM, agent=agent, key=key, now=now)

    async def put_items(
        self,
        *,
        agents: list[str],
        keys: list[str],
        contents: list[str | None],
        values: list[str | None],
        expires_at: list[datetime | None],
        policies: list[str | None],
        embedded: list[bool],
        vectors: list[tuple[int, str, list[float]]],
        now: datetime,
    ) -> list[int]:
        """Puts and deletes of items (a value None deletes), one an item, with the
        vectors of those `embedded` ((position from 1, field, embedding) each), in one
        statement: the positions of those that made an item or deleted one."""
        given: dict[str, dict[str, str]] = {}
        for agent, key, policy in zip(agents, keys, policies, strict=True):
            if policy is not None:
                given.setdefault(agent, {})[key] = policy
        query = build_put_items_query(
            one=len(agents) == 1,
            puts=any(value is not None for value in values),
            deletes=None in values,
            embeds=any(embedded),
            # (one item's rows, the live one and its new version, make no cycle)
            locks_first=len(agents) > 1 and not await self.distributed(),
        )
        rows = await self._fetch(
            query, agents=agents, keys=keys, contents=contents, values=values,
            expires_at=expires_at, policies=policies, embedded=embedded, now=now,
            given_policies=json.dumps(given),
            vector_items=[n for n, _, _ in vectors],
            vector_fields=[field for _, field, _ in vectors],
            **embedding_binds([embedding for _, _, embedding in vectors]),
        )  # fmt: skip
        return [row["n"] for row in rows]

    async def refresh_item_ttls(self, items: list[Row], ttl_key: str, now: datetime) -> None:
        """The expiry of these items (rows with id and agent_id) moved on: in one
        statement, or on a Citus cluster one an agent (each on its shard), agents in
        order, as an LTP flush goes."""
        routed = await self.distributed()
        groups: dict[str, list[Row]] = {}
        for item in items:
            groups.setdefault(item["agent_id"] if routed else "", []).append(item)
        query = build_refresh_item_ttls_query(by_agent=routed)
        values = [
            {"agent": agent, "agents": [i["agent_id"] for i in own], "ids": [i["id"] for i in own]}
            for agent, own in sorted(groups.items())
        ]
        moment = {"ttl_key": ttl_key, "now_epoch": now.timestamp()}
        if len(values) == 1:  # one statement: no transaction to open around it
            await self._fetchval(query, **values[0], **moment)
            return
        async with self._transaction() as tx:
            for each in values:
                await tx.fetchval(query, **each, **moment)

    async def search_items(self, ranked_by: str | None, *, prefix: str, **values: Any) -> list[Row]:
        """Items under a namespace (all: ""): newest first (None), ranked by "text", or by
        a vector distance ("cosine", "inner_product", "l2")."""
        return await self._fetch(
            SEARCH_ITEMS[ranked_by, prefix == ""], prefix=prefix,
            salience_weight=self.settings.search.salience_weight, **values,
        )  # fmt: skip

    async def item_namespaces(self, now: datetime) -> list[str]:
        return [row["agent_id"] for row in await self._fetch(ITEM_NAMESPACES, now=now)]

    async def missing_vectors(
        self, spec: TableSpec, agent: str | None, after: uuid.UUID, limit: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch_of(
            build_missing_vectors_query(spec), agent=agent, after=after, limit=limit
        )

    async def count_missing_vectors(self, spec: TableSpec, agent: str | None) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval_of(build_count_missing_vectors_query(spec), agent=agent)
        return count

    async def insert_source_vectors(
        self, spec: TableSpec, memories: list[Row], embeddings: list[list[float]]
    ) -> int:
        """The embeddings of these memories (rows of missing_vectors), where none is yet:
        how many were made. One statement an agent (on a Citus cluster, on its shard)."""
        agents: dict[str, list[tuple[uuid.UUID, list[float]]]] = {}
        for memory, embedding in zip(memories, embeddings, strict=True):
            agents.setdefault(memory["agent_id"], []).append((memory["id"], embedding))
        made = 0
        async with self._transaction() as tx:
            for agent, pairs in agents.items():
                made += await tx.fetchval(
                    EMBED, table=spec.name, agent=agent,
                    ids=[memory_id for memory_id, _ in pairs], fields=["$"] * len(pairs),
                    cleared=None, **embedding_binds([embedding for _, embedding in pairs]),
                )  # fmt: skip
        return made

    async def build_vector_index(self) -> None:
        """Build the HNSW index with database.index_build_memory of maintenance_work_mem."""
        memory = self.settings.database.index_build_memory
        async with self._transaction() as tx:
            await tx.execute_literal(INDEX_BUILD_MEMORY.format(memory=memory))
            await tx.fetchval(BUILD_VECTOR_INDEX)
