"""Only a match is reinforced: a hit that its own words (or vector) do not match, found
only through others (the turns beside it in context, a link), is recorded as
`unmatched`: its surfaced_count grows, nothing of its curve does, it learns no link
(decision record 0021). Through the engine, its durable queue, and mem0's own client."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, LtpSettings, SearchSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.integration.test_recall_context import conversation
from tests.servers import TOKEN, serving
from tests.vectors import unit

if TYPE_CHECKING:
    import uuid

    from tests.conftest import Days

# Read by mem0 when it is imported (in the test): no telemetry, no ~/.mem0.
os.environ.setdefault("MEM0_TELEMETRY", "False")

STATE = """SELECT retrieval_count, surfaced_count, reinforcement, strength, anchor_at,
                  last_retrieved_at
           FROM {table} WHERE id = $1"""


async def state(conn: asyncpg.Connection, memory: uuid.UUID, table: str) -> dict[str, Any]:
    return dict(await conn.fetchrow(STATE.format(table=table), memory))


async def linked(conn: asyncpg.Connection, memory: uuid.UUID) -> int:
    count: int = await conn.fetchval(
        "SELECT count(*) FROM memory_links WHERE $1 IN (a_id, b_id)", memory
    )
    return count


@pytest.mark.parametrize("durable", [False, True], ids=["buffered", "durable"])
async def test_a_turn_found_only_beside_a_match_is_counted_not_reinforced(
    database_url: str, conn: asyncpg.Connection, days: Days, durable: bool
) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(context_weight=1.0, moment_weight=0),
        ltp=LtpSettings(durable=durable),
    )
    async with ConfiguredEngine(settings) as engine:
        ids = await conversation(engine, days)
        before = await state(conn, ids[1], "episodic_traces")
        hits = await engine.recall("a", "summer holiday", k=3, now=days(1))
        stats = engine.ltp.stats
    # The answer (turn 1) holds none of the question's words: found beside turn 0.
    assert ids[1] in [hit.id for hit in hits]
    answer = await state(conn, ids[1], "episodic_traces")
    assert answer == before | {"surfaced_count": 1}  # counted; its curve untouched
    question = await state(conn, ids[0], "episodic_traces")
    assert (question["retrieval_count"], question["surfaced_count"]) == (1, 1)
    assert question["last_retrieved_at"] == days(1)
    assert await linked(conn, ids[1]) == 0  # not recalled with the matches
    by_id = {hit.id: hit for hit in hits}
    assert by_id[ids[1]].matched is False and by_id[ids[1]].as_dict()["matched"] is False
    assert by_id[ids[0]].matched and "matched" not in by_id[ids[0]].as_dict()
    unmatched = [hit.id for hit in hits if not hit.matched]
    assert stats.unmatched == len(unmatched) >= 1


async def test_a_linked_neighbour_is_counted_not_reinforced(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    near = await engine.add("vector", agent_id="a", content="near", embedding=unit(1))
    far = await engine.add("vector", agent_id="a", content="far", embedding=unit(2))
    await engine.feedback("vector", [near, far], "useful", now=days(1))
    await engine.ltp.drain(5)
    before = await state(conn, far, "memory_vectors")
    expanded = await engine.nearest("a", unit(1), k=1, now=days(2), expand=True)
    await engine.ltp.drain(5)
    assert [h.id for h in expanded] == [near, far]
    assert await state(conn, far, "memory_vectors") == before | {"surfaced_count": 1}
    assert (await state(conn, near, "memory_vectors"))["retrieval_count"] == 2
    assert [h.matched for h in expanded] == [True, False]


async def test_mem0_search_reinforces_only_what_its_words_match(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    """mem0's own client: episodes added one after another, a search whose words are
    in the question only; the answer beside it comes back, counted and not reinforced."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    env = {"MEMORY_TOKEN": TOKEN}
    async with serving("serve", database_url, "127.0.0.1", "--token-env", "MEMORY_TOKEN",
                       env=env) as port:  # fmt: skip
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        try:
            for said in ("where did you go for the summer holiday?",
                         "we drove to Lisbon and stayed by the sea",
                         "nice, I cooked pasta yesterday"):  # fmt: skip
                client.add(said, user_id="ada", kind="episode", infer=False)
            found = client.search(
                "summer holiday", filters={"user_id": "ada"}, kinds=["episode"], top_k=3
            )["results"]
        finally:
            client.client.close()
    # the server stopped: what it recorded is applied
    rows = await conn.fetch("SELECT content, retrieval_count, surfaced_count FROM episodic_traces")
    counts = {row["content"]: (row["retrieval_count"], row["surfaced_count"]) for row in rows}
    assert counts["where did you go for the summer holiday?"] == (1, 1)
    assert counts["we drove to Lisbon and stayed by the sea"] == (0, 1)
    matched = {hit["memory"]: hit["ethos"]["matched"] for hit in found}
    assert matched["where did you go for the summer holiday?"] is True
    assert matched["we drove to Lisbon and stayed by the sea"] is False
