"""Every request within bounds, whatever a tenant sends: caps on query words, k, offset,
ids, body and metadata (small ones configured here), each a one-line 4xx naming its
setting; input PostgreSQL would refuse is a 4xx before it gets there; a request over its
deadline, or whose client hangs up, has its statement cancelled. Against the real
server (`ethos serve --http` on 127.0.0.1), and the engine where the caps live."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from ethos.db.store.sessions import node_url
from ethos.domain.errors import InputError
from ethos.services.engine import Engine, ItemPut
from tests.conftest import DISTRIBUTED
from tests.integration.test_http import ok, problem
from tests.servers import serving

LIMITS = {
    "ETHOS_LIMITS__QUERY_WORDS": "5",
    "ETHOS_LIMITS__K": "20",
    "ETHOS_LIMITS__OFFSET": "30",
    "ETHOS_LIMITS__IDS": "8",
    "ETHOS_LIMITS__METADATA_BYTES": "200",
    "ETHOS_SERVER__MAX_BODY_BYTES": "2048",
}
HUGE = 2**70  # beyond int64


@contextlib.asynccontextmanager
async def api(database_url: str, **env: str) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving("serve", database_url, "127.0.0.1", env={**LIMITS, **env}) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        yield client


@pytest.fixture
async def http(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with api(database_url) as client:
        yield client


def refused(response: httpx.Response, setting: str, status: int = 400) -> str:
    detail = problem(response, status)
    assert setting in detail, detail
    return detail


async def test_a_query_over_its_words_is_refused_in_every_search(
    http: httpx.AsyncClient,
) -> None:
    """Finding 1: a query of 20,000 words held a connection for minutes."""
    ok(await http.post("/memories", json={"text": "ada likes tea", "user_id": "ada"}))
    five, six = "tea " * 5, "tea and more green tea leaves"
    assert ok(await http.post("/ethos/recall", json={"agent": "ada", "query": five}))
    refused(await http.post("/ethos/recall", json={"agent": "ada", "query": six}),
            "limits.query_words")  # fmt: skip
    refused(await http.post("/search", json={"query": six, "user_id": "ada"}),
            "limits.query_words")  # fmt: skip
    refused(await http.post("/ethos/recall", json={"agent": "ada", "query": "tea", "k": 21}),
            "limits.k")  # fmt: skip


async def test_a_query_postgresql_cannot_index_is_refused(engine: Engine) -> None:
    """Finding 4: distinct words beyond the tsvector's 1 MiB were the driver's 500."""
    words = " ".join(f"w{i}" for i in range(200_000))  # 1.3 MB, its lexemes over 1 MiB
    with pytest.raises(InputError, match="as no content is"):
        await engine.recall("ada", words)
    with pytest.raises(InputError, match=r"limits\.query_words"):
        await engine.recall("ada", words[:100_000])
    said = await engine.add_detailed("episode", agent_id="ada", content=words[:10_000], recall=3)
    assert said.created  # its recall asked by the text's first limits.query_words words


async def test_the_item_store_shares_the_limits(engine: Engine) -> None:
    """The LangGraph store's calls: the same caps, the same refusals."""
    with pytest.raises(InputError, match=r"limits\.k"):
        await engine.search_items("ada", limit=1001)
    with pytest.raises(InputError, match=r"limits\.offset"):
        await engine.search_items("ada", text="tea", offset=HUGE)
    with pytest.raises(InputError, match=r"limits\.query_words"):
        await engine.search_items("ada", text="tea " * 300)
    with pytest.raises(InputError, match="an item's value holds NaN"):
        await engine.put_items([ItemPut("ada", "k", {"x": float("nan")}, content="tea")])


async def test_offset_is_capped_and_never_reaches_the_database_as_an_overflow(
    http: httpx.AsyncClient,
) -> None:
    """Finding 2: offset was unbounded, and beyond int64 a 500 with the driver's text."""
    assert ok(await http.get("/ethos/memories", params={"offset": 30})) == []
    for offset in (31, HUGE):
        refused(await http.get("/ethos/memories", params={"offset": offset}), "limits.offset")
        refused(await http.get("/memories", params={"offset": offset, "user_id": "ada"}),
                "limits.offset")  # fmt: skip
    refused(await http.post("/v3/memories/", params={"page": HUGE},
                            json={"filters": {"user_id": "ada"}}), "limits.offset")  # fmt: skip
    for k in (21, HUGE):
        refused(await http.post("/search", json={"query": "tea", "user_id": "ada", "top_k": k}),
                "limits.k")  # fmt: skip


async def test_a_body_over_its_limit_is_refused_unread(http: httpx.AsyncClient) -> None:
    """Finding 3: an 80 MB body was parsed (387 MB) before its 400."""
    big = {"text": "x" * 3000, "user_id": "ada"}
    refused(await http.post("/memories", json=big), "[server] max_body_bytes", 413)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(10):
            yield b" " * 500

    refused(await http.post("/memories", content=chunks(),
                            headers={"content-type": "application/json"}),
            "[server] max_body_bytes", 413)  # fmt: skip


async def test_metadata_over_its_limit_is_refused(http: httpx.AsyncClient) -> None:
    """Finding 3: 20 MB of metadata was stored."""
    metadata = {"note": "x" * 200}
    refused(await http.post("/memories", json={"text": "tea", "user_id": "ada",
                                               "metadata": metadata}),
            "limits.metadata_bytes")  # fmt: skip
    [added] = ok(await http.post("/memories", json={"text": "tea", "user_id": "ada"}))["results"]
    refused(await http.put(f"/memories/{added['id']}", json={"metadata": metadata}),
            "limits.metadata_bytes")  # fmt: skip


# What PostgreSQL would refuse, sent to the endpoints that take it: (path, body, said).
REFUSED = [
    ("/memories", '{"text": "t", "user_id": "ada", "metadata": {"a": "x\\u0000y"}}', "NUL"),
    ("/memories", '{"text": "t", "user_id": "ada", "metadata": {"a\\u0000": 1}}', "NUL"),
    ("/memories", '{"text": "t", "user_id": "ada", "metadata": {"a": "\\ud800"}}', "UTF-8"),
    ("/memories", '{"text": "t", "user_id": "ada", "metadata": {"a": NaN}}', "NaN"),
    ("/memories", '{"text": "t", "user_id": "ada", "metadata": {"a": -Infinity}}', "NaN"),
    ("/memories", '{"text": "t", "user_id": "a\\u0000"}', "NUL"),
    ("/memories", '{"text": "t", "user_id": "\\udfff"}', "UTF-8"),
    ("/memories", json.dumps({"text": "t", "user_id": "u" * 1000}), "bytes"),
    ("/search", '{"query": "tea", "user_id": "a\\u0000"}', "NUL"),
    ("/search", '{"query": "te\\u0000a", "user_id": "ada"}', "NUL"),
    ("/search", '{"query": "tea \\ud800", "user_id": "ada"}', "UTF-8"),
    ("/ethos/recall", json.dumps({"agent": "u" * 1000, "query": "tea"}), "bytes"),
    ("/ethos/recall", json.dumps({"agent": "ada", "query": "tea", "k": HUGE}), "limits.k"),
    ("/ethos/recall", '{"agent": "ada", "query": "tea", "kinds": []}', "tables is empty"),
    ("/search", '{"query": "tea", "user_id": "ada", "kinds": []}', "tables is empty"),
]


async def test_input_postgresql_would_refuse_is_a_4xx(http: httpx.AsyncClient) -> None:
    """Finding 4: each of these was a 500 with the driver's text (an empty kinds, a
    syntax error: found by test_http_fuzz)."""
    for path, body, says in REFUSED:
        sent = await http.post(path, content=body, headers={"content-type": "application/json"})
        assert says in problem(sent, 400), body


async def test_an_agent_postgresql_would_refuse_is_a_4xx_in_a_query_string(
    http: httpx.AsyncClient,
) -> None:
    for agent in ("a\x00b", "u" * 1000):
        problem(await http.get("/ethos/stats", params={"agent": agent}), 400)
        problem(await http.get("/ethos/memories", params={"agent": agent}), 400)
        problem(await http.get("/memories", params={"user_id": agent}), 400)


async def test_ids_are_capped_and_unknown_ones_named_a_few(http: httpx.AsyncClient) -> None:
    """Finding 6: 200,000 unknown ids gave a 7.6 MB one-line error."""
    ids = [str(uuid.uuid4()) for _ in range(9)]
    refused(await http.post("/ethos/feedback", json={"ids": ids, "verdict": "useful"}),
            "limits.ids")  # fmt: skip
    refused(await http.post("/ethos/forget", json={"ids": ids}), "limits.ids")
    unknown = {"ids": ids[:8], "verdict": "wrong"}
    detail = problem(await http.post("/ethos/feedback", json=unknown), 404)
    assert detail.endswith("and 3 more") and sum(i in detail for i in ids) == 5
    said = [{"role": "user", "content": f"message {i}"} for i in range(9)]
    refused(await http.post("/memories", json={"messages": said, "user_id": "ada"}),
            "limits.ids")  # fmt: skip
    echoed = problem(await http.post("/memories", json={"text": "t", "user_id": "ada",
                                                        "policy": "p" * 1500}), 400)  # fmt: skip
    assert echoed.startswith("unknown policy 'pppp") and len(echoed) < 200


BLOCKED = """SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'ethos %'
               AND state = 'active' AND wait_event_type = 'Lock'"""


# On a Citus cluster: the node holding an agent's shards, and their names.
AGENT_SHARDS = """SELECT s.nodename AS host, s.nodeport AS port, array_agg(s.shard_name) AS names
                  FROM unnest(ARRAY['episodic_traces', 'semantic_facts', 'memory_vectors'])
                       AS t (name)
                  JOIN citus_shards AS s ON s.shardid = get_shard_id_for_distribution_column(
                      t.name::regclass, $1::text)
                  GROUP BY 1, 2"""


@contextlib.asynccontextmanager
async def tables_locked(
    database_url: str, agent: str = "ada", *, distributed: bool = DISTRIBUTED
) -> AsyncIterator[asyncpg.Connection]:
    """Every memory table locked by another session: a recall waits until it ends (a
    statement as slow as the test wants). On a Citus cluster `agent`'s shards, on the
    node where its recall runs (the coordinator's tables do not hold it there)."""
    url, tables = database_url, "episodic_traces, semantic_facts, memory_vectors"
    if distributed:
        coordinator = await asyncpg.connect(database_url)
        try:
            node = await coordinator.fetchrow(AGENT_SHARDS, agent)
        finally:
            await coordinator.close()
        url, tables = node_url(database_url, node["host"], node["port"]), ", ".join(node["names"])
    holder, watcher = await asyncpg.connect(url), await asyncpg.connect(url)
    try:
        async with holder.transaction():
            if distributed:  # (Citus guards its shards against changes by hand)
                await holder.execute("SET LOCAL citus.enable_manual_changes_to_shards = on")
            await holder.execute(f"LOCK {tables} IN ACCESS EXCLUSIVE MODE")
            yield watcher
    finally:
        await holder.close()
        await watcher.close()


async def blocked(watcher: asyncpg.Connection, count: int) -> bool:
    """Whether, within a few seconds, `count` of the server's statements wait on the lock."""
    for _ in range(100):
        if await watcher.fetchval(BLOCKED) == count:
            return True
        await asyncio.sleep(0.05)
    return False


RECALL: dict[str, Any] = {"agent": "ada", "query": "tea", "record": False}


async def test_a_request_over_its_deadline_is_stopped_with_its_statement(
    database_url: str,
) -> None:
    """Finding 1: a statement ran on for minutes; now the request's deadline ends it."""
    async with api(database_url, ETHOS_SERVER__REQUEST_TIMEOUT_SECONDS="1") as http:
        async with tables_locked(database_url) as watcher:
            response = await http.post("/ethos/recall", json=RECALL)
            refused(response, "[server] request_timeout_seconds", 503)
            assert await blocked(watcher, 0)  # cancelled, not left waiting
        assert ok(await http.post("/ethos/recall", json=RECALL)) == []  # the pool serves on


async def test_a_client_that_hangs_up_has_its_statement_cancelled(database_url: str) -> None:
    """Finding 1: a statement kept running after its client disconnected."""
    async with api(database_url) as http:  # its deadline: 30 s
        async with tables_locked(database_url) as watcher:
            asking = asyncio.ensure_future(http.post("/ethos/recall", json=RECALL))
            assert await blocked(watcher, 1)
            asking.cancel()  # the client hangs up
            with contextlib.suppress(asyncio.CancelledError):
                await asking
            assert await blocked(watcher, 0)
        assert ok(await http.post("/ethos/recall", json=RECALL)) == []  # the pool serves on
