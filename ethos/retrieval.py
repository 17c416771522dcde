"""Search: the nearest live vectors of an agent, ranked by similarity × salience, and
(link-aware) the memories linked to them.

Results return before any write: the hits are recorded in the LTP buffer as surfaced
(reinforced or only counted, per ltp.on_search; their links learn from being recalled
together), not awaited.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ethos import inputs
from ethos.errors import InputError
from ethos.ltp import LtpBuffer
from ethos.settings import Settings
from ethos.store import Store
from ethos.tables import VECTORS, table_spec


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    content: str
    similarity: float | None  # None for a linked neighbour
    salience: float
    score: float
    metadata: dict[str, Any]
    source_type: str | None = None
    source_id: uuid.UUID | None = None
    source_content: str | None = None
    table: str = VECTORS.name
    via: uuid.UUID | None = None  # a neighbour: the hit it is linked to
    link_weight: float | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "table": self.table,
            "content": self.content,
            "similarity": self.similarity,
            "salience": self.salience,
            "score": self.score,
            "metadata": self.metadata,
            "source": None
            if self.source_id is None
            else {
                "table": self.source_type,
                "id": str(self.source_id),
                "content": self.source_content,
            },
        }
        if self.via is not None:
            data["via"] = str(self.via)
            data["link_weight"] = self.link_weight
        return data


async def search(
    store: Store,
    ltp: LtpBuffer | None,
    settings: Settings,
    *,
    agent: str,
    embedding: Any,
    k: int,
    now: datetime,
    expand: bool = False,
) -> list[Hit]:
    """The top k hits at `now`, and with `expand` (or search.link_weight > 0) the live
    memories linked to them; all recorded in `ltp` as surfaced (None: not recorded)."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InputError(f"k must be a positive integer (got {k!r})")
    if not isinstance(agent, str) or not agent:
        raise InputError("agent is required")
    vector = inputs.embedding(embedding, settings.embedding.dimension)
    rows = await store.search(agent=agent, embedding=vector, k=k, now=now)
    hits = [
        Hit(
            id=row["id"],
            content=row["content"],
            similarity=row["similarity"],
            salience=row["salience"],
            score=row["score"],
            metadata=_json(row["metadata"]),
            source_type=row["source_type"],
            source_id=row["source_id"],
            source_content=row["source_content"],
        )
        for row in rows
    ]
    weight = settings.search.link_weight or (1.0 if expand else 0.0)
    neighbours = await _neighbours(store, hits, agent, now, weight) if weight and hits else []
    if ltp is not None and hits:
        await ltp.record(VECTORS, [hit.id for hit in hits], now, "surfaced")
        for table in {n.table for n in neighbours}:
            found = [n.id for n in neighbours if n.table == table]
            await ltp.record(table_spec(table), found, now, "surfaced")
    return sorted(hits + neighbours, key=lambda h: -h.score)


async def _neighbours(
    store: Store, hits: list[Hit], agent: str, now: datetime, weight: float
) -> list[Hit]:
    """Memories linked to the hits (not hits themselves): spreading activation, scored
    hit score × link weight × their salience × search.link_weight. A memory linked to
    several hits comes through the strongest."""
    by_id = {hit.id: hit for hit in hits}
    best: dict[tuple[str, uuid.UUID], tuple[float, uuid.UUID, float]] = {}
    for link in await store.neighbours(VECTORS, list(by_id), agent, now):
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
                    metadata=_json(row["metadata"]),
                    table=table,
                    via=via,
                    link_weight=link_weight,
                )
            )
    return found


def _json(value: Any) -> dict[str, Any]:
    """jsonb arrives as text from asyncpg."""
    return json.loads(value) if isinstance(value, str) else dict(value or {})
