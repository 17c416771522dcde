"""An embedding is not a memory (issue 65): an episode's or fact's vector is a row of
memory_embeddings, written once, with no life of its own. It is live exactly while its
source is (a search reads the source), goes with its source's hard delete, and a new
text writes a new one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain.inputs import vector_literal
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import Settings
from tests.conftest import DISTRIBUTED, ConfiguredEngine
from tests.vectors import at_cosine, search_plan, unit

if TYPE_CHECKING:
    from tests.conftest import Days

EMBEDDINGS = "SELECT count(*) FROM memory_embeddings WHERE source_id = $1"
# The write path's triggers on each memory table (their hints' own are not counted).
TRIGGERS = """
SELECT c.relname, count(t.oid) FROM pg_class AS c
LEFT JOIN pg_trigger AS t ON t.tgrelid = c.oid AND NOT t.tgisinternal
WHERE c.relname IN ('memory_vectors', 'episodic_traces', 'semantic_facts', 'memory_embeddings')
GROUP BY c.relname
"""


async def found(engine: Engine, vector: list[float], days: Days, day: int) -> list[object]:
    hits = await engine.nearest("a", vector, k=1, now=days(day), record=False)
    return [(hit.table, hit.id) for hit in hits]


async def test_a_facts_vector_is_an_embedding_and_its_hit_is_the_fact(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="the sky is green",
                            embedding=unit(1), created_at=days(0))  # fmt: skip
    assert await conn.fetchval(EMBEDDINGS, fact) == 1
    assert await conn.fetchval("SELECT count(*) FROM memory_vectors") == 0
    [hit] = await engine.nearest("a", unit(1), k=1, now=days(1), record=False)
    assert (hit.table, hit.id, hit.content) == ("semantic_facts", fact, "the sky is green")
    assert "source" not in hit.as_dict()


async def test_a_used_episode_keeps_its_embedding_searchable(engine: Engine, days: Days) -> None:
    # On its own curve (standard, ~21 days) the episode would be gone long before day
    # 60; it is used and lives on, and its embedding is searched with its salience.
    episode = await engine.add("episode", agent_id="a", content="we met in Lisbon",
                               embedding=unit(1), created_at=days(0),
                               policy="standard")  # fmt: skip
    for day in range(4, 60, 4):
        await engine.record_retrieval("episode", [episode], now=days(day))
    await engine.ltp.drain(5)
    report = await engine.sweep(now=days(60))
    assert report.totals()[2] == 0  # nothing pruned
    [hit] = await engine.nearest("a", unit(1), k=1, now=days(60), record=False)
    assert hit.id == episode and hit.table == "episodic_traces"
    [explained] = await engine.recall("a", "Lisbon", k=1, now=days(60), record=False)
    assert hit.salience == explained.salience


async def test_a_vector_hit_reinforces_its_source(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="owls hunt at night",
                            embedding=unit(2), created_at=days(0))  # fmt: skip
    await engine.nearest("a", unit(2), k=1, now=days(1))
    await engine.ltp.drain(5)
    count = "SELECT retrieval_count FROM semantic_facts WHERE id = $1"
    assert await conn.fetchval(count, fact) == 1


async def test_pruning_recovering_and_purging_the_source_kill_revive_and_delete_it(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    fact = await engine.add("fact", agent_id="a", content="the sky is green",
                            embedding=unit(2), created_at=days(0),
                            policy="standard")  # fmt: skip
    here = [("semantic_facts", fact)]
    # below its threshold, not swept yet: its embedding is not found either
    assert await found(engine, unit(2), days, 40) == []
    await engine.sweep(now=days(40))
    assert await conn.fetchval(EMBEDDINGS, fact) == 1  # dead with it, still there
    await engine.recover("fact", Selector(ids=(fact,)), now=days(41))
    assert await found(engine, unit(2), days, 41) == here  # live again, nothing copied
    await engine.forget("fact", [fact], now=days(42))
    assert await found(engine, unit(2), days, 42) == []
    await engine.purge(days(43), now=days(44))
    assert await conn.fetchval(EMBEDDINGS, fact) == 0
    centre = "SELECT vectors FROM agent_vector_stats WHERE agent_id = 'a'"
    assert await conn.fetchval(centre) is None  # no longer counted in the agent's centre


async def test_erasing_the_agent_deletes_its_embeddings(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    episode = await engine.add("episode", agent_id="a", content="e", embedding=unit(4))
    await engine.add("episode", agent_id="b", content="e", embedding=unit(4))
    await engine.erase("a", dry_run=False)
    assert await conn.fetchval(EMBEDDINGS, episode) == 0
    assert await conn.fetchval("SELECT count(*) FROM memory_embeddings") == 1  # b's


async def test_a_new_text_writes_a_new_embedding(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    vectors = {"the cat sleeps": unit(5), "the cat hunts": unit(6)}

    async def embedder(texts: Sequence[str], role: str) -> list[list[float]]:
        return [vectors[text] for text in texts]

    async with ConfiguredEngine(settings, embedder=embedder) as engine:
        fact = await engine.add("fact", agent_id="a", content="the cat sleeps")
        row = """SELECT embedding <=> $2::vector AS distance, ctid::text
                 FROM memory_embeddings WHERE source_id = $1"""
        new = vector_literal(unit(6))
        before = await conn.fetchrow(row, fact, new)
        await engine.update("fact", fact, content="the cat hunts")
        after = await conn.fetchrow(row, fact, new)
        assert await conn.fetchval(EMBEDDINGS, fact) == 1
        assert after["ctid"] != before["ctid"]  # a new row, the old one deleted
        assert after["distance"] < 1e-6 < before["distance"]
        [hit] = await engine.nearest("a", unit(6), k=1, record=False)
        assert hit.id == fact


async def test_an_embedding_of_a_pruned_fact_shows_no_pruning_of_its_own(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    """Issue 66: a vector pruned with its source said prune_reason decay and, on the
    dashboard, 'never' pruned. An embedding has no such state to show: the fact's
    explain, the listing and the vectors' counts say nothing of it."""
    fact = await engine.add("fact", agent_id="a", content="the sky is green",
                            embedding=unit(3), created_at=days(0),
                            policy="standard")  # fmt: skip
    await engine.sweep(now=days(40))
    explained = await engine.explain("fact", fact, now=days(40))
    assert explained.pruned and explained.prune_reason == "decay"
    assert await conn.fetchval("SELECT count(*) FROM memory_vectors") == 0
    assert await conn.fetchval("SELECT count(*) FROM ethos_memories WHERE agent_id = 'a'") == 1
    columns = await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory_embeddings'"
    )
    names = {c["column_name"] for c in columns}
    assert not names & {"pruned", "pruned_at", "prune_reason", "policy", "salience", "due_at"}


async def test_each_memory_table_has_at_most_three_triggers(conn: asyncpg.Connection) -> None:
    counts = dict(await conn.fetch(TRIGGERS))
    # (the embeddings': what a row written or deleted derives, on its shard on Citus)
    assert counts == {"memory_vectors": 3, "episodic_traces": 3, "semantic_facts": 3,
                      "memory_embeddings": 2}  # fmt: skip


async def test_a_vector_of_its_own_still_decays(engine: Engine, days: Days) -> None:
    await engine.add("vector", agent_id="a", content="mine", embedding=unit(3),
                     created_at=days(0), policy="standard")  # fmt: skip
    assert await engine.nearest("a", unit(3), k=1, now=days(40), record=False) == []


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_embeddings_are_found_in_half_precision_and_ranked_in_full(
    engine: Engine, days: Days
) -> None:
    # Two facts 1e-4 apart in cosine to the query: half precision (10-bit mantissas)
    # cannot tell them apart, the full vectors rank them and give the relevance.
    query = unit(1)
    near, nearer = at_cosine(query, 0.9, seed=2), at_cosine(query, 0.9001, seed=3)
    for content, vector in (("near", near), ("nearer", nearer)):
        await engine.add("fact", agent_id="a", content=content, embedding=vector,
                         created_at=days(0))  # fmt: skip
    hits = await engine.nearest("a", query, k=2, now=days(1), record=False)
    assert [hit.content for hit in hits] == ["nearer", "near"]
    # relevance: the cosine to the query centred on the agent's mean direction
    # (centering 1: the query's unit vector less the mean of the facts' unit vectors)
    centred = [q - (a + b) / 2 for q, a, b in zip(query, near, nearer, strict=True)]
    for hit, vector in zip(hits, (nearer, near), strict=True):
        assert hit.relevance == pytest.approx(cosine(vector, centred), abs=1e-6)


@pytest.mark.skipif(
    DISTRIBUTED,
    reason="on a Citus cluster one agent's search runs on its node (the coordinator's"
    " EXPLAIN is Citus's)",
)
async def test_the_embeddings_index_is_half_precision_and_search_scans_it(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    definition = await conn.fetchval(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embeddings_embedding_hnsw'"
    )
    assert "halfvec(384)) halfvec_cosine_ops" in definition
    await conn.execute(
        """INSERT INTO memory_embeddings (agent_id, source_id, source_table, embedding)
           SELECT 'agent-' || (g % 4), gen_random_uuid(), 'semantic_facts',
                  (SELECT array_agg(random() - 0.5)::vector
                   FROM generate_series(1, 384) WHERE g > 0)
           FROM generate_series(1, 3000) g"""
    )
    await conn.execute("ANALYZE memory_embeddings")
    plan = await search_plan(engine, days(1))
    assert '"Index Name": "memory_embeddings_embedding_hnsw"' in plan
