"""Search: the nearest live vectors of an agent, ranked by similarity × salience.

Results return before any write: the LTP of the hits is buffered, not awaited.
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
from ethos.tables import VECTORS


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    content: str
    similarity: float
    salience: float
    score: float
    metadata: dict[str, Any]
    source_type: str | None
    source_id: uuid.UUID | None
    source_content: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
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


async def search(
    store: Store,
    ltp: LtpBuffer | None,
    settings: Settings,
    *,
    agent: str,
    embedding: Any,
    k: int,
    now: datetime,
) -> list[Hit]:
    """The top k hits at `now`; their retrieval is recorded in `ltp` (None: not recorded)."""
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
    if ltp is not None and hits:
        await ltp.record(VECTORS, [hit.id for hit in hits], now)
    return hits


def _json(value: Any) -> dict[str, Any]:
    """jsonb arrives as text from asyncpg."""
    return json.loads(value) if isinstance(value, str) else dict(value or {})
