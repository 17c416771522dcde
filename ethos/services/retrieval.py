"""What search and recall compute between the store's candidates and the engine's
answer (the engine runs them: ethos.services.engine.retrieval). Search: the nearest live
vectors of an agent, ranked by similarity × the salience prior, and (link-aware) the
memories linked to them. Recall: the same by text (BM25 over
PostgreSQL's own lexemes, no model needed), or hybrid when an embedding provider is
configured: text and vector scores, each normalised over its candidates, fused, then ×
the salience prior. Relevance leads: the prior 1 + w × salience moves a score by a
factor of at most 1 + w (runbooks/recall.md).

Memories below their prune threshold at the query moment are never returned (a sweep
would prune them; until it runs they count as pruned).

Results return before any write: the hits are recorded in the LTP buffer as surfaced
(reinforced or only counted, per ltp.on_search; their links learn from being recalled
together), not awaited. A hit that its own words (or vector) do not match, found only
through others (the turns beside it, a link), is `unmatched`: recorded as surfaced
but never reinforced, and it learns no link (decision record 0021).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from ethos.db.store import Row, Store
from ethos.domain import inputs
from ethos.domain.errors import InputError
from ethos.domain.tables import VECTORS, TableSpec, table_spec
from ethos.services.ltp import LtpBuffer
from ethos.settings import Settings

A = TypeVar("A")
B = TypeVar("B")


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    content: str
    similarity: float | None  # None for a linked neighbour
    salience: float
    score: float
    metadata: dict[str, Any]
    table: str = VECTORS.name
    via: uuid.UUID | None = None  # a neighbour: the hit it is linked to
    link_weight: float | None = None
    text_rank: float | None = None  # recall: BM25 of the words
    relevance: float | None = None  # what the prior multiplies (None: a linked neighbour)
    created_at: datetime | None = None
    updated_at: datetime | None = None  # None: never updated
    matched: bool = True  # False: found only through others (its neighbours, a link)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "table": self.table,
            "content": self.content,
            "similarity": self.similarity,
            "relevance": self.relevance,
            "salience": self.salience,
            "score": self.score,
            "metadata": self.metadata,
        }
        if self.via is not None:
            data["via"] = str(self.via)
            data["link_weight"] = self.link_weight
        if self.text_rank is not None:
            data["text_rank"] = self.text_rank
        if not self.matched:
            data["matched"] = False
        return data


async def neighbours(
    store: Store, hits: list[Hit], agent: str, now: datetime, weight: float
) -> list[Hit]:
    """Memories linked to the hits (not hits themselves): spreading activation, scored
    hit score × link weight × their salience × search.link_weight. A memory linked to
    several hits comes through the strongest."""
    by_id = {hit.id: hit for hit in hits}
    best: dict[tuple[str, uuid.UUID], tuple[float, uuid.UUID, float]] = {}
    for (table, _), ids in _by_table(hits).items():
        for link in await store.neighbours(table_spec(table), ids, agent, now):
            key = (link["table_name"], link["id"])
            if link["id"] in by_id:
                continue
            through = by_id[link["via"]].score * link["weight"]
            if key not in best or through > best[key][0]:
                best[key] = (through, link["via"], link["weight"])
    found: list[Hit] = []
    for table in {t for t, _ in best}:
        ids = [i for t, i in best if t == table]
        for row in await store.neighbour_rows(table_spec(table), ids, agent, now):
            through, via, link_weight = best[(table, row["id"])]
            found.append(
                Hit(
                    id=row["id"],
                    content=row["content"],
                    similarity=None,
                    salience=row["salience"],
                    score=through * row["salience"] * weight,
                    metadata=json_object(row["metadata"]),
                    table=table,
                    via=via,
                    link_weight=link_weight,
                    created_at=row["created_at"],
                    updated_at=row["updated_at"],
                    matched=False,
                )
            )
    return found


async def surface(ltp: LtpBuffer, hits: Sequence[Hit], now: datetime, agent: str | None) -> None:
    """Record hits (of `agent`, where one is named) at `now`: those their own words or
    vector matched as surfaced, those of one table together (they learn their links);
    the others as unmatched (only counted)."""
    for (table, matched), ids in _by_table(hits).items():
        await ltp.record(table_spec(table), ids, now, "surfaced" if matched else "unmatched",
                         agent)  # fmt: skip


def _by_table(hits: Sequence[Hit]) -> dict[tuple[str, bool], list[uuid.UUID]]:
    """The hits' ids by table and whether they matched, in the hits' order."""
    groups: dict[tuple[str, bool], list[uuid.UUID]] = {}
    for hit in hits:
        groups.setdefault((hit.table, hit.matched), []).append(hit.id)
    return groups


def rank(hit: Hit) -> tuple[float, float, float, str]:
    """Best first: score, then the more salient, then the newer, then by id."""
    newer = -hit.created_at.timestamp() if hit.created_at else 0.0
    return (-hit.score, -hit.salience, newer, str(hit.id))


def _normalised(scores: dict[tuple[str, uuid.UUID], float]) -> dict[tuple[str, uuid.UUID], float]:
    """Scores mapped onto [0, 1] by the span of the candidates' (min-max): one scale
    for BM25 (unbounded) and cosine similarity (a narrow band near its top for most
    models), so that neither swamps the other."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {key: (value - low) / span if span > 0 else 1.0 for key, value in scores.items()}


def fuse(
    settings: Settings, text_hits: list[Hit], rows: list[Row], tables: tuple[TableSpec, ...]
) -> list[Hit]:
    """Text and vector candidates, each score normalised over its candidates, fused as
    (1 − v) × text + v × vector (v: search.vector_weight; a candidate of one side only
    has 0 on the other), × the salience prior. An episode or fact is a vector candidate
    by its embeddings. `rows`: the vector candidates (store.search). A hit its own vector
    matched (one of them) is matched, whatever its words."""
    names = {spec.name for spec in tables}
    text = _normalised({(hit.table, hit.id): hit.relevance or 0.0 for hit in text_hits})
    found = {(hit.table, hit.id): hit for hit in text_hits}
    similar: dict[tuple[str, uuid.UUID], float] = {}  # relevance: cosine to the centred query
    cosine: dict[tuple[str, uuid.UUID], float] = {}  # to the query itself, shown
    for row in rows:
        key = (row["table_name"], row["id"])
        if key[0] not in names or key in similar:
            continue
        similar[key], cosine[key] = row["relevance"], row["similarity"]
        if key not in found:
            found[key] = Hit(id=row["id"], content=row["content"], similarity=None,
                             salience=row["salience"], score=0.0,
                             metadata=json_object(row["metadata"]), table=key[0],
                             created_at=row["created_at"],
                             updated_at=row["updated_at"])  # fmt: skip
    vectors = _normalised(similar)
    v, w = settings.search.vector_weight, settings.search.salience_weight
    fused = []
    for key, hit in found.items():
        relevance = (1 - v) * text.get(key, 0.0) + v * vectors.get(key, 0.0)
        fused.append(
            replace(hit, similarity=cosine.get(key), relevance=relevance,
                    score=relevance * (1 + w * hit.salience),
                    matched=hit.matched or key in similar)
        )  # fmt: skip
    return fused


async def both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, awaited at once; when one fails the other is cancelled (and
    awaited) before the error goes on, so no query is left running unowned."""
    one, two = asyncio.ensure_future(first), asyncio.ensure_future(second)
    try:
        return await one, await two
    except BaseException:
        for task in (one, two):
            task.cancel()
        await asyncio.gather(one, two, return_exceptions=True)
        raise


def check_k(k: object, settings: Settings) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InputError(f"k must be a positive integer (got {inputs.shown(k)})")
    inputs.at_most("k", k, settings.limits.k, "limits.k")


def json_object(value: Any) -> dict[str, Any]:
    """A jsonb object as asyncpg hands it over (text), decoded."""
    return json.loads(value) if isinstance(value, str) else dict(value or {})
