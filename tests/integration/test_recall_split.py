"""Recall's MaxScore split (rows with only common lexemes scored only when they could be
among a table's candidates) returns exactly what scoring every matching row returns:
the same ids, order and scores, ties and the prune threshold included, on many random
small corpora."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from ethos.engine import Engine
from ethos.store.sql.search import build_recall_query
from ethos.tables import MEMORY_TABLES

# A few words everywhere, many rarely: the split sees common and rare lexemes.
VOCABULARY = [f"w{i}x" for i in range(14)]
WEIGHTS = [1 / (i + 1) ** 1.3 for i in range(len(VOCABULARY))]
POLICIES = ("working", "standard", "long_term", "permanent")


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(1, 6)))


async def _corpus(conn: asyncpg.Connection, rng: random.Random, t0: datetime) -> None:
    await conn.execute("TRUNCATE episodic_traces, semantic_facts, memory_vectors CASCADE")
    texts = [_text(rng) for _ in range(12)]  # repeated texts: equal BM25
    stamps = [t0 + timedelta(days=d) for d in (0, 0, 3, 10, 40, 40)]  # equal ages too
    for agent in ("a", "b"):
        for table in ("episodic_traces", "semantic_facts", "memory_vectors"):
            n = rng.randint(0, 70)
            rows = [
                (
                    agent,
                    rng.choice(texts) if rng.random() < 0.4 else _text(rng),
                    rng.choice(stamps),
                    rng.choice(POLICIES),
                    rng.choice((0.2, 0.5, 0.9)),
                )
                for _ in range(n)
            ]
            vector = ", array_fill(0.1::real, ARRAY[384])::vector" if "vectors" in table else ""
            column = ", embedding" if vector else ""
            await conn.executemany(
                f"""INSERT INTO {table} (agent_id, content, created_at, policy, strength{column})
                    SELECT $1, $2, $3, $4, $5{vector}""",
                rows,
            )


async def _recall(conn: asyncpg.Connection, *, split: bool, **values: Any) -> list[tuple[Any, ...]]:
    query = build_recall_query(MEMORY_TABLES, split=split)
    rows = await conn.fetch(query.text, *query.args(values))
    return [(r["table_name"], r["id"], r["text_rank"], r["salience"], r["score"]) for r in rows]


async def test_the_split_recalls_exactly_what_scoring_every_match_does(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    assert engine.store  # the engine has written the shipped policies
    compared = found = 0
    for seed in range(25):
        rng = random.Random(seed)
        await _corpus(conn, rng, t0)
        for _ in range(12):
            words = rng.sample([*VOCABULARY, "nowhere"], rng.randint(1, 4))
            values = {
                "agent": rng.choice(("a", "b")),
                "text": " ".join(words),
                "now": t0 + timedelta(days=rng.choice((1, 30, 90, 400))),
                "candidates": rng.choice((1, 2, 3, 5, 10)),
                "k": 40,  # every table's candidates: the per-table lists are compared
                "salience_weight": rng.choice((0.0, 0.2, 1.0)),
            }
            expected = await _recall(conn, split=False, **values)
            assert await _recall(conn, split=True, **values) == expected, (seed, values)
            compared += 1
            found += len(expected)
    assert compared == 300 and found > 1000
