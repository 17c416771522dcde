"""What recall returns and in which order: relevance leads (BM25 over the agent's own
term statistics), salience is a bounded prior and breaks ties, nothing below its prune
threshold comes back, and the provider is told a question from a memory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest
from mcp import Client

from ethos.adapters.langgraph import AsyncEthosStore
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, EmbeddingSettings, SearchSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.embedding_server import embed_text, embedding_server
from tests.integration.test_mcp import result, stdio
from tests.vectors import unit


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Plain memories on the standard curve: their words do not tier them."""
    return Settings(database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED)


if TYPE_CHECKING:
    from tests.conftest import Cli, Days


async def test_a_rare_word_beats_a_frequent_one(engine: Engine, days: Days) -> None:
    for i in range(30):
        await engine.add("episode", agent_id="a", content=f"Caroline said hello {i}",
                         created_at=days(0))  # fmt: skip
    rare = await engine.add("episode", agent_id="a", content="we talked about the marriage",
                            created_at=days(0))  # fmt: skip
    # The frequent word is repeated and fresher; the rare one still leads.
    frequent = await engine.add("episode", agent_id="a", content="Caroline, Caroline!",
                                created_at=days(5))  # fmt: skip
    hits = await engine.recall("a", "Caroline marriage", k=3, now=days(5.1), record=False)
    assert hits[0].id == rare
    assert hits[1].id == frequent
    assert hits[0].text_rank is not None and hits[1].text_rank is not None
    assert hits[0].text_rank > 2 * hits[1].text_rank


async def test_a_clearly_more_relevant_memory_is_not_pushed_out_by_a_fresher_one(
    engine: Engine, days: Days
) -> None:
    old = await engine.add("episode", agent_id="a", content="Melanie adopted a puppy named Oscar",
                           created_at=days(0))  # fmt: skip
    for i in range(12):
        await engine.add("episode", agent_id="a", content=f"Melanie went running {i}",
                         created_at=days(14))  # fmt: skip
    hits = await engine.recall("a", "Melanie puppy Oscar", k=10, now=days(14), record=False)
    assert hits[0].id == old and hits[0].salience < 0.2  # faded, still first


async def test_ties_go_to_the_more_salient_then_the_more_reinforced(
    database_url: str, days: Days
) -> None:
    for weight in (0.0, 0.2):
        settings = Settings(
            database=DatabaseSettings(url=database_url),
            importance=WORDS_IGNORED,
            search=SearchSettings(salience_weight=weight),
        )
        async with ConfiguredEngine(settings) as engine:
            agent = f"a{weight}"
            older = await engine.add("episode", agent_id=agent, content="the blue kite",
                                     created_at=days(0))  # fmt: skip
            newer = await engine.add("episode", agent_id=agent, content="the blue kite",
                                     created_at=days(1))  # fmt: skip
            hits = await engine.recall(agent, "kite", k=2, now=days(2), record=False)
            assert [h.id for h in hits] == [newer, older]  # more salient: the newer
            # The older one, reinforced twice, is now the more salient of the two.
            await engine.record_retrieval("episode", [str(older)], now=days(1.5))
            await engine.record_retrieval("episode", [str(older)], now=days(1.9))
            await engine.ltp.flush()
            hits = await engine.recall(agent, "kite", k=2, now=days(2), record=False)
            assert [h.id for h in hits] == [older, newer]
            assert hits[0].relevance == hits[1].relevance
            assert hits[0].salience > hits[1].salience


async def test_a_memory_below_its_threshold_is_never_returned(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    # Not yet swept: stored salience 1, but at day 30 a 7-day memory is at e^(-30/7) ≈ 0.014,
    # below the 0.05 threshold; a fact is forgotten on its confidence.
    stale = await engine.add("episode", agent_id="a", content="the old garden party",
                             created_at=days(0))  # fmt: skip
    await engine.add("fact", agent_id="a", content="the garden party is on Sunday",
                     confidence=0.06, created_at=days(25))  # fmt: skip
    kept = await engine.add("episode", agent_id="a", content="the new garden party",
                            created_at=days(29))  # fmt: skip
    pinned = await engine.add("episode", agent_id="a", content="the pinned garden party",
                              created_at=days(0), pinned=True)  # fmt: skip
    vector = await engine.add("vector", agent_id="a", content="garden", embedding=unit(1),
                              created_at=days(0))  # fmt: skip
    live = await engine.add("vector", agent_id="a", content="garden too", embedding=unit(2),
                            created_at=days(29))  # fmt: skip
    hits = await engine.recall("a", "garden party", k=10, now=days(30), record=False)
    assert {h.id for h in hits} == {kept, pinned, live}
    found = await engine.nearest("a", unit(1), k=10, now=days(30), record=False)
    assert [h.id for h in found] == [live]
    assert (
        await conn.fetchval(
            "SELECT count(*) FROM episodic_traces WHERE id = $1 AND NOT pruned", stale
        )
        == 1
        and vector
    )  # never swept: still stored live, only hidden from readers


async def test_langgraph_search_hides_what_is_below_its_threshold(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    async with AsyncEthosStore(settings, policy=None) as store:  # items that decay
        await store.aput(("u",), "old", {"text": "the garden party"})
        await store.aput(("u",), "new", {"text": "the garden party again"})
        # (the moment from here: Citus refuses `created_at - interval` in an UPDATE)
        await conn.execute(
            "UPDATE semantic_facts SET created_at = $1, anchor_at = $1 WHERE client_key = 'old'",
            datetime.now(UTC) - timedelta(days=90),
        )
        hits = await store.asearch(("u",), query="garden party")
        assert [h.key for h in hits] == ["new"]
        assert [h.key for h in await store.asearch(("u",))] == ["new"]


async def test_mcp_recall_hides_the_forgotten_and_can_look_without_recording(
    database_url: str, conn: asyncpg.Connection
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content, created_at) VALUES"
        " ('ada', 'the garden party', now() - interval '60 days'),"
        " ('ada', 'the garden party again', now())"
    )
    async with Client(stdio(database_url, "--agent", "ada"), read_timeout_seconds=60) as client:
        hits = result(await client.call_tool("recall", {"query": "garden", "record": False}))
        assert [h["content"] for h in hits] == ["the garden party again"]
        assert hits[0]["reinforced"] is False and hits[0]["relevance"] > 0
        hits = result(await client.call_tool("recall", {"query": "garden"}))
        assert hits[0]["reinforced"] is True
    counts = await conn.fetch("SELECT retrieval_count FROM episodic_traces ORDER BY created_at")
    assert [row["retrieval_count"] for row in counts] == [0, 1]


def test_search_no_record_says_so_and_reinforces_nothing(
    database_url: str, cli: Cli, psql: object
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    cli("add", "episode", "--agent", "a", "--content", "the blue kite", env=env)
    looked = cli("search", "--agent", "a", "--query", "kite", "--no-record", "--json", env=env)
    assert looked.returncode == 0, looked.stderr
    data = json.loads(looked.stdout)
    assert (data["recorded"], data["reinforced"]) == ("none", [])
    hit = data["hits"][0]
    assert hit["relevance"] == hit["text_rank"] > 0 and hit["score"] >= hit["relevance"]
    found = cli("search", "--agent", "a", "--query", "kite", "--json", env=env)
    data = json.loads(found.stdout)
    assert (data["recorded"], data["reinforced"]) == ("reinforce", [data["hits"][0]["id"]])
    explained = cli("explain", "episode", data["hits"][0]["id"], "--json", env=env)
    assert json.loads(explained.stdout)["retrieval_count"] == 1  # the second search only


async def test_prefixes_and_input_types_reach_the_provider(
    database_url: str, days: Days, cli: Cli
) -> None:
    with embedding_server() as (url, behaviour):
        embedding = EmbeddingSettings(
            provider="openai", url=url, model="test", query_prefix="query: ",
            document_prefix="passage: ", query_input_type="query",
            document_input_type="passage",
        )  # fmt: skip
        settings = Settings(database=DatabaseSettings(url=database_url), embedding=embedding)
        async with ConfiguredEngine(settings) as engine:
            await engine.add("episode", agent_id="a", content="Bob drives a car",
                             created_at=days(0))  # fmt: skip
            await engine.recall("a", "which vehicle", now=days(1), record=False)
        env = {
            "ETHOS_DATABASE__URL": database_url, "ETHOS_EMBEDDING__PROVIDER": "openai",
            "ETHOS_EMBEDDING__URL": url, "ETHOS_EMBEDDING__MODEL": "test",
            "ETHOS_EMBEDDING__QUERY_PREFIX": "query: ",
            "ETHOS_EMBEDDING__DOCUMENT_PREFIX": "passage: ",
        }  # fmt: skip
        with_sql = cli("add", "fact", "--agent", "a", "--content", "x", env=env)
        assert with_sql.returncode == 0, with_sql.stderr
        async with ConfiguredEngine(
            Settings(database=DatabaseSettings(url=database_url))
        ) as engine:
            await engine.add("fact", agent_id="a", content="Bob walks", created_at=days(0))
        assert cli("embed", "--missing", env=env).returncode == 0
        assert cli("search", "--agent", "a", "--query", "walks", "--no-record", env=env
                   ).returncode == 0  # fmt: skip
    assert behaviour.requests == [
        ["passage: Bob drives a car"], ["query: which vehicle"], ["passage: x"],
        ["passage: Bob walks"], ["query: walks"],
    ]  # fmt: skip
    assert behaviour.input_types == ["passage", "query", None, None, None]


async def test_langgraph_store_embeds_with_the_roles_prefixes(database_url: str) -> None:
    seen: list[str] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        seen.extend(texts)
        return [embed_text(text, 384) for text in texts]

    settings = Settings(
        database=DatabaseSettings(url=database_url),
        embedding=EmbeddingSettings(query_prefix="q: ", document_prefix="d: "),
    )
    index = {"dims": 384, "embed": embed, "fields": ["text"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("u",), "car", {"text": "Bob drives a car"})
        await store.asearch(("u",), query="which car")
    assert seen == ["d: Bob drives a car", "q: which car"]
