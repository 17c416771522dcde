"""What a hostile tenant of the HTTP API cannot do: reach memories outside the owners it
names, leave half an add behind, multiply its metadata, rewrite owners, write through a
read-only door or a GET, or have the dashboard framed. The app runs in this process
(ASGI) behind its gate, on a real database."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from ethos.adapters.door import guarded
from ethos.adapters.http import build_app
from ethos.adapters.http.access import framed, server_door
from ethos.domain.errors import NotFoundError
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import Settings
from tests.integration.test_http import ok, problem

BASE = "http://127.0.0.1:8750"


@contextlib.asynccontextmanager
async def served(settings: Settings, **server: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app (with these [server] settings) behind its gate, bound to 127.0.0.1; its
    engine is closed, and its buffered retrievals applied, on the way out."""
    settings = settings.model_copy(update={"server": settings.server.model_copy(update=server)})
    app = build_app(settings)
    async with Engine(settings) as engine:
        app.state.engine = engine
        transport = httpx.ASGITransport(
            app=framed(guarded(app, server_door(settings, "127.0.0.1", None)))
        )
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            yield http


async def add(http: httpx.AsyncClient, text: str, **owners: str) -> str:
    [added] = ok(await http.post("/memories", json={"text": text, **owners}))["results"]
    memory_id: str = added["id"]
    return memory_id


async def found(http: httpx.AsyncClient, query: str, **body: Any) -> set[str]:
    hits = ok(await http.post("/search", json={"query": query, **body}))["results"]
    return {hit["id"] for hit in hits}


async def listed(http: httpx.AsyncClient, **params: Any) -> set[str]:
    return {m["id"] for m in ok(await http.get("/memories", params=params))["results"]}


async def test_owners_combine_as_an_and_everywhere(settings: Settings) -> None:
    """Finding: with user_id given, run_id and agent_id were ignored (deleting one run
    forgot every memory of the user; filters naming an agent returned other agents')."""
    async with served(settings) as http:
        run1 = await add(http, "Uma drinks tea in run one", user_id="uma", run_id="r1")
        run2 = await add(http, "Uma drinks tea in run two", user_id="uma", run_id="r2")
        with_a = await add(http, "Uma drinks tea with agent a", user_id="uma", agent_id="a")
        with_b = await add(http, "Uma drinks tea with agent b", user_id="uma", agent_id="b")
        agent_a = await add(http, "Agent a drinks tea alone", agent_id="uma")

        assert await listed(http, user_id="uma") == {run1, run2, with_a, with_b}
        assert await listed(http, user_id="uma", run_id="r1") == {run1}
        assert await found(http, "tea", user_id="uma", filters={"agent_id": "a"}) == {with_a}
        both = {"AND": [{"user_id": "uma"}, {"agent_id": "a"}]}
        assert await found(http, "tea", filters=both) == {with_a}
        assert await found(http, "tea", filters={"user_id": "uma", "agent_id": "b"}) == {with_b}
        run2_of_uma = {"filters": {"run_id": "r2", "user_id": "uma"}}
        page = ok(await http.post("/v3/memories/", json=run2_of_uma))
        assert [m["id"] for m in page["results"]] == [run2]
        # An agent named like a user is not that user: neither sees the other's memories.
        assert await listed(http, agent_id="uma") == {agent_a}
        assert await found(http, "tea", agent_id="uma") == {agent_a}

        conflict = {"query": "tea", "user_id": "uma", "filters": {"user_id": "ivy"}}
        assert problem(await http.post("/search", json=conflict), 400) == (
            "user_id is both 'uma' and 'ivy': a memory has one"
        )
        gone = ok(await http.delete("/memories", params={"user_id": "uma", "run_id": "r1"}))
        assert gone["ethos"]["forgotten"] == {"semantic_facts": {"manual": 1}}
        assert await listed(http, user_id="uma") == {run2, with_a, with_b}
        assert await listed(http, user_id="uma", pruned=True) == {run1}
        ok(await http.delete("/memories", params={"user_id": "uma", "agent_id": "a"}))
        assert await listed(http, user_id="uma") == {run2, with_b}
        assert await listed(http, agent_id="uma") == {agent_a}


async def test_a_repeat_is_a_duplicate_only_of_the_same_owners(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """A fact repeated in another run is that run's memory: the add does not answer
    with (and reinforce) the memory of a run it does not name."""
    async with served(settings) as http:

        async def added(run: str) -> dict[str, Any]:
            body = {"text": "Vic takes the 8:10 train", "user_id": "vic", "run_id": run}
            [result] = ok(await http.post("/memories", json=body))["results"]
            return result

        first, other, again = [await added(run) for run in ("r1", "r2", "r2")]
    assert (first["event"], other["event"], again["event"]) == ("ADD", "ADD", "NONE")
    assert other["id"] != first["id"] and again["id"] == other["id"]
    counts = await conn.fetch("SELECT id::text, retrieval_count FROM semantic_facts")
    assert {r["id"]: r["retrieval_count"] for r in counts} == {first["id"]: 0, other["id"]: 1}


async def test_a_multi_message_add_is_all_or_nothing(settings: Settings) -> None:
    """Finding: a 400 for the second message left the first stored; a retry stored it
    again."""
    said = [{"role": "user", "content": "Otto collects stamps"},
            {"role": "assistant", "content": "   "}]  # fmt: skip
    async with served(settings) as http:
        body = {"messages": said, "user_id": "otto"}
        assert problem(await http.post("/memories", json=body), 400) == (
            "content must not be empty"
        )
        assert await listed(http, user_id="otto") == set()
        said[1]["content"] = "Noted: stamps"
        added = ok(await http.post("/memories", json=body))["results"]
        assert [a["event"] for a in added] == ["ADD", "ADD"]
        assert await listed(http, user_id="otto") == {a["id"] for a in added}


async def test_an_adds_metadata_is_not_multiplied(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """Finding: the metadata is copied into each message's row (1 MB request, 21 MB of
    rows): what one add writes of it, across its messages, is bounded."""
    metadata = {"blob": "x" * 60_000}  # under the cap of one memory's metadata
    said = [{"role": "user", "content": f"message {i}"} for i in range(20)]
    async with served(settings) as http:
        body = {"messages": said, "user_id": "meta", "metadata": metadata}
        assert "is stored with each of 20 messages" in problem(
            await http.post("/memories", json=body), 400
        )
        ok(await http.post("/memories", json={**body, "messages": said[:2]}))
    assert await conn.fetchval("SELECT count(*) FROM semantic_facts") == 2


async def test_owners_are_fixed_at_add(settings: Settings, engine: Engine) -> None:
    """Finding: PUT set mem0 owners (metadata.mem0.user_id) on a memory added outside
    the mem0 API, handing it to another user."""
    memory_id = str(await engine.add("fact", agent_id="pia", content="Pia sings"))
    async with served(settings) as http:
        stolen = {"metadata": {"mem0": {"user_id": "pia", "run_id": "r9"}}}
        assert problem(await http.put(f"/memories/{memory_id}", json=stolen), 400) == (
            "metadata.mem0 holds a memory's owners: fixed at add"
        )
        ok(await http.put(f"/memories/{memory_id}", json={"metadata": {"mood": "happy"}}))
        got = ok(await http.get(f"/memories/{memory_id}"))
        assert (got["user_id"], got["run_id"], got["metadata"]) == ("pia", None, {"mood": "happy"})


@pytest.mark.parametrize("door", ["read_only", "read_token"])
async def test_a_read_writes_nothing(
    settings: Settings, conn: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch, door: str
) -> None:
    """Finding: with read_only = true, or the read token, searches and reads by id
    reinforced a memory (1 to 11 retrievals, promoted working → standard). A GET writes
    nothing either, whatever it asks (any site can make a browser send one)."""
    async with served(settings) as http:
        memory_id = await add(http, "Quin rides a red bicycle", user_id="quin")
    monkeypatch.setenv("T_READ", "reader-token-for-the-test")
    server = {"read_only": True} if door == "read_only" else {"read_token_env": "T_READ"}
    async with served(settings, **server) as http:
        if door == "read_token":
            http.headers["authorization"] = "Bearer reader-token-for-the-test"
        for _ in range(5):
            assert await found(http, "bicycle", user_id="quin") == {memory_id}
            ok(await http.get(f"/memories/{memory_id}", params={"record": True}))
            ok(await http.post("/ethos/recall", json={"agent": "quin", "query": "bicycle"}))
        assert problem(await http.post("/memories", json={"text": "x", "user_id": "q"}), 403)
    async with served(settings) as http:  # a writer's GET: no retrieval either
        ok(await http.get(f"/memories/{memory_id}", params={"record": True}))
    row = await conn.fetchrow("SELECT retrieval_count, surfaced_count FROM semantic_facts")
    assert tuple(row) == (0, 0)


async def test_the_dashboard_cannot_be_framed(settings: Settings) -> None:
    """Finding: any site could frame the dashboard (no CSP frame-ancestors, no
    X-Frame-Options) and clickjack its buttons in the no-token loopback mode."""
    async with served(settings) as http:
        for path in ("/", "/static/app.js", "/ethos/agents", "/nowhere"):
            response = await http.get(path)
            assert response.headers["x-frame-options"] == "DENY", path
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        refused = await http.get("/", headers={"host": "localhost:evil.com"})
        assert refused.status_code == 421 and refused.headers["x-frame-options"] == "DENY"


async def test_history_keeps_every_delete_and_only_real_recoveries(
    settings: Settings, engine: Engine
) -> None:
    """Finding: after a DELETE and a recover, the DELETE disappeared from the history,
    and a recovery that brought nothing back showed as a RECOVER."""
    async with served(settings) as http:
        memory_id = await add(http, "Rex walks at dawn", user_id="rex")
        ok(await http.delete(f"/memories/{memory_id}"))
        nothing = Selector(ids=(uuid.UUID(memory_id),), reason="decay")  # it was manual
        assert (await engine.recover("fact", nothing)).rows == []
        for _ in range(2):
            ok(await http.post("/ethos/recover", json={"ids": [memory_id]}))
            ok(await http.delete(f"/memories/{memory_id}"))
        history = ok(await http.get(f"/memories/{memory_id}/history"))
    events = ["ADD", "DELETE", "RECOVER", "DELETE", "RECOVER", "DELETE"]
    assert [h["event"] for h in history] == events
    assert [h["ethos"].get("reason") for h in history if h["event"] == "DELETE"] == ["manual"] * 3
    moments = [h["created_at"] for h in history]
    assert moments == sorted(moments)


async def test_history_keeps_replaced_metadata(settings: Settings) -> None:
    """Finding: metadata replaced by PUT is not kept in the history."""
    async with served(settings) as http:
        memory_id = await add(http, "Sol paints", user_id="sol")
        ok(await http.put(f"/memories/{memory_id}", json={"metadata": {"style": "oil"}}))
        ok(await http.put(f"/memories/{memory_id}", json={"metadata": {"style": "ink"}}))
        history = ok(await http.get(f"/memories/{memory_id}/history"))
    assert [h["ethos"].get("old_metadata") for h in history[1:]] == [None, {"style": "oil"}]


async def test_an_id_of_several_memories_is_refused_unless_the_agent_is_named(
    settings: Settings, conn: asyncpg.Connection, engine: Engine
) -> None:
    """Finding: mem0's DELETE names an id alone, and forgot every memory of the id:
    another agent's too, where plain SQL gave one the same id (a key leads with its
    agent). Now such an id is refused unless the agent is named, and what a by-id call
    does next names the agent it found."""
    async with served(settings) as http:
        memory_id = await add(http, "Uma keeps bees", user_id="uma")
        await conn.execute(
            """INSERT INTO semantic_facts (id, agent_id, content)
               SELECT id, 'vic', 'Vic keeps bees' FROM semantic_facts WHERE id = $1""",
            uuid.UUID(memory_id),
        )
        for refused in (await http.delete(f"/memories/{memory_id}"),
                        await http.post("/ethos/forget", json={"ids": [memory_id]})):  # fmt: skip
            assert "is a memory of 2 agents (uma, vic)" in problem(refused, 400)
        assert "is a memory of 2 agents (uma, vic)" in problem(
            await http.get(f"/ethos/memories/{memory_id}/explain"), 400
        )
        ok(await http.post("/ethos/forget", json={"ids": [memory_id], "agent": "vic"}))
        rows = await conn.fetch("SELECT content, pruned FROM semantic_facts ORDER BY content")
        assert [tuple(r) for r in rows] == [("Uma keeps bees", False), ("Vic keeps bees", True)]
        assert (await engine.explain("fact", memory_id, agent="vic")).pruned
        vics = await engine.history("fact", memory_id, agent="vic")
        assert [(e.event, e.content) for e in vics] == [("add", "Vic keeps bees"), ("prune", None)]
        with pytest.raises(NotFoundError, match="no semantic_facts row of agent eve with id"):
            await engine.explain("fact", memory_id, agent="eve")
        await conn.execute("DELETE FROM semantic_facts WHERE agent_id = 'vic'")
        ok(await http.delete(f"/memories/{memory_id}"))
    assert await conn.fetchval(
        "SELECT pruned FROM semantic_facts WHERE id = $1", uuid.UUID(memory_id)
    )
