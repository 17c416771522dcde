"""A memory's vector tiers it too (migration 0032): words count more in a memory whose
vector lies far from what the agent's memories share, less in one close to it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg

from ethos.services.engine import Engine
from ethos.settings import ImportanceSettings, Settings
from tests.conftest import ConfiguredEngine
from tests.vectors import at_cosine, unit

COMMON = unit(7)  # what the agent's chatter shares
TEXTS = {"chatter": "alpha bravo charlie", "typical": "delta echo foxtrot",
         "particular": "golf hotel india"}  # fmt: skip
VECTORS = {"chatter": COMMON, "typical": at_cosine(COMMON, 0.9, 40),
           "particular": at_cosine(COMMON, 0.4, 41)}  # fmt: skip


def with_particularity(settings: Settings, k: float) -> Settings:
    importance = ImportanceSettings(auto_particularity=k)
    return settings.model_copy(update={"importance": importance})


# Twelve memories of an agent, their vectors each at 0.9 to the common part.
HISTORY = {f"hello there number {i}": at_cosine(COMMON, 0.9, i) for i in range(12)}


# An embedding of an existing episode, in plain SQL (`ethos embed --missing` days on).
EMBED = """SELECT ethos_embed('episodic_traces', ARRAY[$1], ARRAY[$2::uuid], ARRAY[$3],
                             ARRAY[$4::text::vector], NULL, NULL)"""


async def embed(conn: asyncpg.Connection, agent: str, memory: uuid.UUID, vector: list[float],
                field: str = "$") -> None:  # fmt: skip
    await conn.fetchval(EMBED, agent, memory, field, str(vector))


async def history(engine: Engine, agent: str, t0: datetime) -> None:
    for text, vector in HISTORY.items():
        given = {} if engine.embedder is not None else {"embedding": vector}
        await engine.add("episode", agent_id=agent, content=text, created_at=t0, **given)


async def importance(conn: asyncpg.Connection, memory: uuid.UUID) -> tuple[float, str]:
    row = await conn.fetchrow(
        "SELECT auto_importance, policy FROM episodic_traces WHERE id = $1", memory
    )
    return row["auto_importance"], row["policy"]


async def test_a_particular_vector_raises_the_importance_and_chatter_lowers_it(
    settings: Settings, conn: asyncpg.Connection, t0: datetime
) -> None:
    vectors = HISTORY | {TEXTS[name]: vector for name, vector in VECTORS.items()}

    async def embedder(texts: Sequence[str], role: str) -> list[list[float]]:
        return [vectors[text] for text in texts]

    found: dict[float, dict[str, tuple[float, str]]] = {}
    for k in (2.0, 0.0):
        agent = f"ada-{k}"
        async with ConfiguredEngine(with_particularity(settings, k), embedder=embedder) as engine:
            await history(engine, agent, t0)
            ids = {name: await engine.add("episode", agent_id=agent, content=text,
                                          created_at=t0)
                   for name, text in TEXTS.items()}  # fmt: skip
            found[k] = {name: await importance(conn, memory) for name, memory in ids.items()}
            told = (await engine.explain("episode", ids["particular"])).importance_from
            assert ("as particular as the agent's average" in told) == (k > 0), told
    # auto_particularity 0: words alone, whatever the vector: three words new to a young
    # agent (36 words: the language's prior weighs more than half, decision 0023)
    words_only = {name: value for name, (value, _) in found[0.0].items()}
    assert all(0.4 < value < 0.55 for value in words_only.values()), words_only
    chatter, typical, particular = (found[2.0][name] for name in TEXTS)
    assert chatter[0] < 0.1 and chatter[1] == "working"
    assert words_only["typical"] < typical[0] < particular[0]  # a little more than words alone
    assert particular[0] > 0.95 and particular[1] == "long_term"


async def test_plain_sql_gets_the_same_importance_as_the_api(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    for agent in ("api", "sql"):
        await history(engine, agent, t0)
    through_api = await engine.add("episode", agent_id="api", content=TEXTS["particular"],
                                   embedding=VECTORS["particular"])  # fmt: skip
    async with conn.transaction():
        in_sql = await conn.fetchval(
            "INSERT INTO episodic_traces (agent_id, content) VALUES ('sql', $1) RETURNING id",
            TEXTS["particular"],
        )
        await embed(conn, "sql", in_sql, VECTORS["particular"])
    assert await importance(conn, in_sql) == await importance(conn, through_api)
    assert (await importance(conn, in_sql))[0] > 0.8


async def test_only_a_memory_as_its_insert_left_it_is_tiered_again(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    """Once swept or retrieved, given its importance or policy, or tiered by a vector
    already, a memory keeps its tier when a vector comes (`ethos embed --missing` days
    on, a second vector)."""
    await history(engine, "ada", t0)
    swept = await engine.add("episode", agent_id="ada", content="golf hotel india", created_at=t0)
    await engine.sweep(now=t0 + timedelta(hours=1))
    used = await engine.add("episode", agent_id="ada", content="juliet kilo lima", created_at=t0)
    await engine.record_retrieval("episode", [used], now=t0 + timedelta(hours=1))
    await engine.ltp.drain(5)
    given = await engine.add("episode", agent_id="ada", content="mike november oscar",
                             created_at=t0, importance=0.3)  # fmt: skip
    named = await engine.add("episode", agent_id="ada", content="papa quebec romeo",
                             created_at=t0, policy="standard")  # fmt: skip
    twice = await engine.add("episode", agent_id="ada", content="sierra tango uniform",
                             created_at=t0)  # fmt: skip
    await embed(conn, "ada", twice, VECTORS["typical"])
    memories = (swept, used, given, named, twice)
    before = {m: await importance(conn, m) for m in memories}
    for i, memory in enumerate(memories):
        await embed(conn, "ada", memory, at_cosine(COMMON, 0.4, 50 + i), field="again")
    assert {m: await importance(conn, m) for m in memories} == before


async def test_a_vector_unlike_everything_before_it_tiers_without_overflow(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    """Ten times the same vector: the agent's mean has length 1 (within float4), and
    the next, different vector is as particular as can be."""
    for i in range(10):
        await engine.add("episode", agent_id="ada", content=f"ok {i}", created_at=t0,
                         embedding=COMMON)  # fmt: skip
    long = " ".join(f"word{i}x" for i in range(200))
    memory = await engine.add("episode", agent_id="ada", content=long, created_at=t0,
                              embedding=unit(99))  # fmt: skip
    assert await importance(conn, memory) == (1.0, "long_term")
