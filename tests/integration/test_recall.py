"""Recall by text with no model, embedding providers (a local server speaking the OpenAI
embeddings API), hybrid ranking, and what happens when the provider misbehaves."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain.errors import InputError
from ethos.services.embedding import EmbeddingError, ProviderUnavailable
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, EmbeddingSettings, SearchSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.embedding_server import Behaviour, embedding_server

if TYPE_CHECKING:
    from tests.conftest import Cli, Days


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Plain memories on the standard curve: their words do not tier them; ranked by
    their own words (recall in context is test_recall_context's)."""
    return Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(context_weight=0),
    )


def with_provider(database_url: str, url: str, **embedding: object) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url),
        embedding=EmbeddingSettings(provider="openai", url=url, model="test", **embedding),
    )


async def count(conn: asyncpg.Connection, table: str) -> int:
    value: int = await conn.fetchval(f"SELECT count(*) FROM {table}")
    return value


def test_a_question_finds_a_fact_by_its_words_on_a_fresh_install(
    database_url: str, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    added = cli("add", "fact", "--agent", "a", "--content", "Ada prefers green tea", env=env)
    assert added.returncode == 0, added.stderr
    cli("add", "fact", "--agent", "a", "--content", "the door code is 4711", env=env)
    cli("add", "fact", "--agent", "b", "--content", "Ada likes tea a lot", env=env)
    found = cli("search", "--agent", "a", "--query", "what tea does Ada like", "--json", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert [h["content"] for h in hits] == ["Ada prefers green tea"]
    assert hits[0]["table"] == "semantic_facts" and hits[0]["text_rank"] > 0
    nothing = cli("search", "--agent", "a", "--query", "the of and", "--json", env=env)
    assert json.loads(nothing.stdout)["hits"] == []


async def test_recall_ranks_by_words_and_salience_across_tables(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    faded = await engine.add("episode", agent_id="a", content="walked the dog in the rain",
                             salience=0.2, created_at=days(0))  # fmt: skip
    fresh = await engine.add("fact", agent_id="a", content="the dog is called Rex",
                             created_at=days(0))  # fmt: skip
    await engine.add("episode", agent_id="a", content="bought bread", created_at=days(0))
    hits = await engine.recall("a", "dog", now=days(1))
    assert [h.id for h in hits] == [fresh, faded]
    assert {h.table for h in hits} == {"semantic_facts", "episodic_traces"}
    only = await engine.recall("a", "dog", tables=["episode"], now=days(1), record=False)
    assert [h.id for h in only] == [faded]
    await engine.ltp.drain(5)
    surfaced = await conn.fetchval("SELECT retrieval_count FROM semantic_facts WHERE id = $1",
                                   fresh)  # fmt: skip
    assert surfaced == 1  # recall is a search: its hits are reinforced
    await engine.forget("fact", [fresh], now=days(1))
    assert [h.id for h in await engine.recall("a", "dog", now=days(1))] == [faded]
    with pytest.raises(InputError, match="query is required"):
        await engine.recall("a", "  ")


async def test_a_provider_writes_vectors_and_makes_recall_hybrid(
    database_url: str, conn: asyncpg.Connection, cli: Cli
) -> None:
    with embedding_server() as (url, server):
        async with ConfiguredEngine(with_provider(database_url, url)) as engine:
            car = await engine.add("fact", agent_id="a", content="Bob drives an automobile")
            await engine.add("fact", agent_id="a", content="Bob likes jazz")
            vector = await engine.add("vector", agent_id="a", content="a hound barked")
            hits = await engine.recall("a", "which car", k=2)
            assert hits[0].id == car  # no word in common: the vectors are close
            assert [h.similarity is not None and h.similarity > 0.25 for h in hits] == [True, False]
            dogs = await engine.recall("a", "puppy", k=1)
            assert [h.id for h in dogs] == [vector]
        embedded = await conn.fetchrow(
            "SELECT agent_id, field, source_table FROM memory_embeddings WHERE source_id = $1", car
        )
        assert tuple(embedded) == ("a", "$", "semantic_facts")
        env = {"ETHOS_DATABASE__URL": database_url, "ETHOS_EMBEDDING__PROVIDER": "openai",
               "ETHOS_EMBEDDING__URL": url, "ETHOS_EMBEDDING__MODEL": "test"}  # fmt: skip
        added = cli("add", "episode", "--agent", "a", "--content", "saw matcha", "--json", env=env)
        assert added.returncode == 0, added.stderr
        found = cli("search", "--agent", "a", "--query", "tea", "--json", env=env)
        assert json.loads(found.stdout)["hits"][0]["id"] == json.loads(added.stdout)["id"]
        assert len(server.requests) >= 6


async def test_hybrid_recall_keeps_to_mem0_filters_in_both_halves(database_url: str) -> None:
    """mem0's filter terms (owners and metadata) hold in the text half and the vector
    half, in SQL: a memory near the query by its vector but outside the terms is not
    found, neither through the vector of a fact nor as a vector of its own."""
    with embedding_server() as (url, _):
        async with ConfiguredEngine(with_provider(database_url, url)) as engine:
            car = await engine.add("fact", agent_id="a", content="Bob drives an automobile",
                                   metadata={"topic": "travel"})  # fmt: skip
            jazz = await engine.add("fact", agent_id="a", content="Bob likes jazz",
                                    metadata={"topic": "music"})  # fmt: skip
            await engine.add("vector", agent_id="a", content="a hound barked",
                             metadata={"topic": "pets"})  # fmt: skip
            music = [{"owners": {}, "metadata": {"topic": "music"}}]
            hits = await engine.recall("a", "which car puppy jazz", k=3, matching=music)
            assert [h.id for h in hits] == [jazz]
            travel = [{"owners": {"user_id": "a"}, "metadata": {"topic": "travel"}}]
            assert [h.id for h in await engine.recall("a", "which car", k=3, matching=travel)] == [
                car
            ]
            nobody = [{"owners": {"user_id": "b"}, "metadata": {}}]  # another user's terms
            assert await engine.recall("a", "which car", k=3, matching=nobody) == []


async def test_provider_failures_are_one_line_and_write_nothing_half(
    database_url: str, conn: asyncpg.Connection, cli: Cli
) -> None:
    with embedding_server(Behaviour(dimension=8)) as (url, server):
        async with ConfiguredEngine(with_provider(database_url, url)) as engine:
            with pytest.raises(EmbeddingError, match="answered 8 numbers per vector; the sch"):
                await engine.add("fact", agent_id="a", content="x")
            server.dimension, server.key = 384, "sk-right"
            with pytest.raises(EmbeddingError, match=r"refused the key \(HTTP 401\)"):
                await engine.add("fact", agent_id="a", content="x")
        assert await count(conn, "semantic_facts") == 0
        assert await count(conn, "memory_vectors") == 0
        env = {"ETHOS_DATABASE__URL": database_url, "ETHOS_EMBEDDING__PROVIDER": "openai",
               "ETHOS_EMBEDDING__URL": url, "ETHOS_EMBEDDING__MODEL": "test",
               "ETHOS_EMBEDDING__API_KEY_ENV": "TEST_KEY",
               "TEST_KEY": "sk-wrong-secret"}  # fmt: skip
        refused = cli("add", "fact", "--agent", "a", "--content", "x", env=env)
        assert refused.returncode == 1
        assert refused.stderr.count("\n") == 1 and "HTTP 401" in refused.stderr
        assert "sk-wrong-secret" not in refused.stderr + refused.stdout
        accepted = cli(
            "add", "fact", "--agent", "a", "--content", "x", env={**env, "TEST_KEY": "sk-right"}
        )
        assert accepted.returncode == 0, accepted.stderr

        server.key, server.stall_seconds = None, 2.0
        async with ConfiguredEngine(
            with_provider(database_url, url, timeout_seconds=0.3)
        ) as engine:
            # Down or too slow: the fact is stored without its vector...
            stored = await engine.add("fact", agent_id="a", content="kept without a vector")
            # ...a vector cannot be stored without one...
            with pytest.raises(ProviderUnavailable, match=r"did not answer within 0\.3 s"):
                await engine.add("vector", agent_id="a", content="y")
            # ...and recall falls back to text.
            assert [h.id for h in await engine.recall("a", "kept")] == [stored]
            server.stall_seconds, server.status = 0.0, 500
            with pytest.raises(ProviderUnavailable, match="unavailable \\(HTTP 500\\)"):
                await engine.embed_missing()
            server.status = 200
            made = await engine.embed_missing()
            assert made.by_table == {"episodic_traces": 0, "semantic_facts": 1}
            made = await engine.embed_missing()
            assert made.by_table == {"episodic_traces": 0, "semantic_facts": 0}
        assert await count(conn, "memory_embeddings") == 2  # the CLI's fact, and this one


async def test_a_text_config_the_database_lacks_names_the_key(database_url: str) -> None:
    settings = Settings(
        database=DatabaseSettings(url=database_url), search=SearchSettings(text_config="klingon")
    )
    with pytest.raises(InputError, match=r"search\.text_config: .* 'klingon'"):
        async with ConfiguredEngine(settings):
            pass


async def test_changing_the_text_config_reindexes_the_words(database_url: str) -> None:
    async with ConfiguredEngine(Settings(database=DatabaseSettings(url=database_url))) as engine:
        await engine.add("fact", agent_id="a", content="running shoes")
        assert len(await engine.recall("a", "run", record=False)) == 1  # english stems
    simple = Settings(
        database=DatabaseSettings(url=database_url), search=SearchSettings(text_config="simple")
    )
    async with ConfiguredEngine(simple) as engine:
        assert await engine.recall("a", "run", record=False) == []
        assert len(await engine.recall("a", "running", record=False)) == 1


async def test_no_secret_reaches_any_output(database_url: str, cli: Cli) -> None:
    """A provider that echoes the request's headers in its error, and a key in the URL's
    userinfo: neither the key nor the password is printed or logged."""
    with embedding_server(Behaviour(echo_headers=True)) as (url, _):
        with_userinfo = url.replace("http://", "http://svc:pw-hunter2@")
        env = {"ETHOS_DATABASE__URL": database_url, "ETHOS_EMBEDDING__PROVIDER": "openai",
               "ETHOS_EMBEDDING__URL": with_userinfo, "ETHOS_EMBEDDING__MODEL": "test",
               "ETHOS_EMBEDDING__API_KEY_ENV": "TEST_KEY", "ETHOS_LOGGING__LEVEL": "debug",
               "TEST_KEY": "sk-live-0123456789"}  # fmt: skip
        refused = cli("add", "fact", "--agent", "a", "--content", "x", env=env)
    assert refused.returncode == 1 and "HTTP 400" in refused.stderr
    assert "User-Agent" in refused.stderr  # the echoed body, summarised
    output = refused.stdout + refused.stderr
    assert "sk-live-0123456789" not in output and "pw-hunter2" not in output
