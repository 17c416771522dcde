"""What an agent reads: its nearest vectors and text recall, retrievals recorded by other
means, feedback on what was used or wrong, and a memory's links."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

import structlog

from ethos.db.store import Row
from ethos.domain import inputs
from ethos.domain.errors import InputError
from ethos.domain.inputs import named_agent, parse_id
from ethos.domain.moments import named_moment
from ethos.domain.tables import TableSpec, table_spec
from ethos.services.embedding import ProviderUnavailable, embed
from ethos.services.engine.core import EngineCore, specs
from ethos.services.retrieval import (
    Hit,
    both,
    check_k,
    fuse,
    json_object,
    neighbours,
    rank,
    surface,
)

log = structlog.get_logger("ethos.services.engine")


@dataclass(frozen=True)
class Link:
    """An association of a memory with another (`table`, `id`), at some moment."""

    table: str
    id: uuid.UUID
    weight: float  # at that moment: it fades as e^(−t/τ) since weighted_at
    weighted_at: datetime
    co_retrievals: int  # recalled together
    useful: int  # given useful feedback together
    wrong: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"id": str(self.id), "weighted_at": self.weighted_at.isoformat()}


class RetrievalEngine(EngineCore):
    """Search (nearest vectors, recall by words), LTP from outside, feedback, links."""

    async def nearest(
        self,
        agent_id: str,
        embedding: Sequence[float],
        k: int = 10,
        *,
        now: datetime | None = None,
        record: bool = True,
        expand: bool = False,
    ) -> list[Hit]:
        """Nearest live vectors of agent_id, ranked by similarity × the salience prior; with
        `expand` (or search.link_weight > 0) their linked memories join the results.

        Returns at once; the hits are recorded as surfaced (record=False: not at all).
        """
        at = await self._moment(now)
        check_k(k, self.settings)
        inputs.agent_id(agent_id, "agent")
        vector = inputs.embedding(embedding, self.settings.embedding.dimension)
        rows = await self.store.nearest(agent=agent_id, embedding=vector, k=k, now=at)
        hits = [
            Hit(
                id=row["id"],
                content=row["content"],
                similarity=row["similarity"],
                salience=row["salience"],
                score=row["score"],
                metadata=json_object(row["metadata"]),
                table=row["table_name"],
                relevance=row["relevance"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
            for row in rows
        ]
        weight = self.settings.search.link_weight or (1.0 if expand else 0.0)
        linked = await neighbours(self.store, hits, agent_id, at, weight) if weight and hits else []
        if record and hits:
            await surface(self.ltp, hits + linked, at, agent_id)
        return sorted(hits + linked, key=rank)

    async def recall(
        self,
        agent_id: str,
        query: str,
        k: int = 10,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        now: datetime | None = None,
        record: bool = True,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Hit]:
        """The agent's live memories (in every table, or those named) that best answer
        `query`: by BM25 × the salience prior, or, with an embedding provider, text and
        vector scores normalised and fused, × the prior; with `matching` (mem0's
        filters: an OR of terms, each the owners and metadata a memory holds), only
        those holding one of them, in SQL. Returns at once; the hits are recorded as
        surfaced, as nearest does (record=False: not at all). A provider that is down
        leaves the text ranking (logged)."""
        chosen, at, settings = specs(tables), await self._moment(now), self.settings
        check_k(k, settings)
        inputs.agent_id(agent_id, "agent")
        inputs.query_text(query, settings.limits.query_words)
        if not chosen:
            raise InputError("tables is empty: name at least one, or none for every table")
        vector = None
        if self.embedder is not None:
            try:
                [vector] = await embed(self.embedder, [query], settings.embedding, role="query")
            except ProviderUnavailable as exc:
                log.warning("recall_text_only", reason=str(exc))
        depth = max(settings.search.candidates, k)
        text = self.store.recall(
            agent=agent_id, query=query, tables=chosen, k=k if vector is None else depth,
            now=at, moment=named_moment(query), matching=matching,
        )  # fmt: skip
        similar: list[Row] = []
        if vector is None:
            rows = await text
        else:  # the two halves at once, each on its own connection
            rows, similar = await both(text, self.store.nearest(
                agent=agent_id, embedding=vector, k=depth, now=at, matching=matching
            ))  # fmt: skip
        hits = [
            Hit(id=row["id"], content=row["content"], similarity=None, salience=row["salience"],
                score=row["score"], metadata=json_object(row["metadata"]),
                table=row["table_name"], text_rank=row["text_rank"], relevance=row["relevance"],
                created_at=row["created_at"], updated_at=row["updated_at"],
                matched=row["matched"])
            for row in rows
        ]  # fmt: skip
        if vector is not None:
            hits = fuse(settings, hits, similar, chosen)
        hits = sorted(hits, key=rank)[:k]
        if record:
            await surface(self.ltp, hits, at, agent_id)
        return hits

    async def surfaced(
        self, hits: Sequence[Hit], *, agent: str | None = None, now: datetime | None = None
    ) -> None:
        """Record hits (of `agent`, the one recall was for) as recall records its own
        (surfaced): for a caller that recalled with record=False and keeps only some."""
        await surface(self.ltp, hits, await self._moment(now), named_agent(agent))

    async def record_retrieval(
        self,
        table: str | TableSpec,
        ids: Iterable[str | uuid.UUID],
        *,
        agent: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """Schedule LTP for memories an agent read by other means (`agent`'s memories of
        these ids, or every agent's where none is named); a repeated id counts as
        repeated retrievals. Applied in the background, and at the latest on close."""
        spec = table_spec(table)
        parsed = [parse_id(i) for i in ids]
        await self.ltp.record(spec, parsed, await self._moment(now), agent=named_agent(agent))

    async def feedback(
        self,
        table: str | TableSpec | None,
        ids: Iterable[str | uuid.UUID],
        kind: str,
        *,
        agent: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """The agent used these memories ("useful": a retrieval, counted as useful) or
        they were wrong ("wrong": strength, and a fact's confidence, times
        feedback.wrong_factor; pruned with reason feedback below the threshold), of
        `agent` where one is named. Several ids in one call: their links learn too.
        Applied like LTP, exactly once. With no `table` the ids are found first, and
        each must be a memory (of `agent`), else nothing is recorded; with one, an
        unknown id is skipped when applied (no database is needed to record it)."""
        if kind not in ("useful", "wrong"):
            raise InputError(f"feedback is 'useful' or 'wrong' (got {kind!r})")
        mark: Literal["useful", "wrong"] = "useful" if kind == "useful" else "wrong"
        if table is not None:
            parsed = self._ids(ids)
            await self.ltp.record(
                table_spec(table), parsed, await self._moment(now), mark, named_agent(agent)
            )
            return
        found = await self.locate(ids, agent=named_agent(agent))
        moment = await self._moment(now)
        for (spec, owner), own in found.items():
            await self.ltp.record(spec, own, moment, mark, owner)

    async def links(
        self,
        table: str | TableSpec | None,
        memory_id: str | uuid.UUID,
        *,
        now: datetime | None = None,
        agent: str | None = None,
    ) -> list[Link]:
        """A memory's associations (of `agent`, where the caller knows it; of `table`,
        else found), strongest first: the other memory's table and id, and the link's
        weight at `now`."""
        (spec, agent), memory = await self.whose(memory_id, agent=agent, table=table)
        at = await self._moment(now)
        return [
            Link(
                table=row["table_name"],
                id=row["id"],
                weight=row["weight"],
                weighted_at=row["weighted_at"],
                co_retrievals=row["co_retrievals"],
                useful=row["useful_count"],
                wrong=row["wrong_count"],
            )
            for row in await self.store.links(spec, memory, agent, at)
        ]
