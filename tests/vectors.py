"""Unit vectors for tests: random ones, ones at a chosen similarity to another, and
weighted blends; and the plan of the store's vector search."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import datetime

import asyncpg

from ethos.db.store.sessions import search_server_settings
from ethos.db.store.sql.search import SEARCH_VECTORS
from ethos.domain.inputs import vector_literal
from ethos.services.engine import Engine


def unit(seed: int, dimension: int = 384) -> list[float]:
    """A random unit vector, the same for the same seed."""
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def at_cosine(base: list[float], cosine: float, seed: int) -> list[float]:
    """A unit vector at exactly `cosine` similarity to the unit vector `base`."""
    noise = unit(seed, len(base))
    along = sum(a * b for a, b in zip(noise, base, strict=True))
    ortho = [n - along * b for n, b in zip(noise, base, strict=True)]
    norm = math.sqrt(sum(o * o for o in ortho))
    sine = math.sqrt(1 - cosine * cosine)
    return [cosine * b + sine * o / norm for b, o in zip(base, ortho, strict=True)]


def mix(*parts: tuple[float, Sequence[float]]) -> list[float]:
    """The unit vector along the weighted sum of `parts` ((weight, vector) pairs)."""
    total = [sum(w * v[i] for w, v in parts) for i in range(len(parts[0][1]))]
    norm = math.sqrt(sum(x * x for x in total))
    return [x / norm for x in total]


async def search_plan(engine: Engine, now: datetime) -> str:
    """The plan (EXPLAIN, JSON) of the store's vector search for agent-1 at `now`, on a
    connection set up as the store sets up its own."""
    search = engine.settings.search
    pooled = await asyncpg.connect(
        engine.url,
        server_settings=search_server_settings(search.candidates, search.max_scan_tuples),
    )
    try:
        await pooled.set_type_codec(
            "vector", encoder=vector_literal, decoder=str, schema="public", format="text"
        )
        values = {
            "now": now, "agent": "agent-1", "embedding": unit(40), "candidates": 40, "k": 10,
            "salience_weight": 1.0, "centering": 1.0, "matching": None,
        }  # fmt: skip
        plan: str = await pooled.fetchval(
            "EXPLAIN (FORMAT JSON) " + SEARCH_VECTORS.text, *SEARCH_VECTORS.args(values)
        )
    finally:
        await pooled.close()
    return plan
