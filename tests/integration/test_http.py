"""The HTTP API (`ethos serve --http`), driven by an HTTP client against the real command
on 127.0.0.1: mem0's shapes, ethos's own endpoints, problem details, the door."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.conftest import Cli, template_copy
from tests.servers import TOKEN, serving

READER = "read-only-token-for-the-test"


@pytest.fixture(scope="module")
async def api(admin_uri: str, template_uri: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """One server for the module's tests, on a database of its own: (client, its URL)."""
    async with (
        template_copy(admin_uri, f"http_{os.getpid()}") as url,
        serving("serve", url, "127.0.0.1") as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        yield client, url


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def problem(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["type"] == "about:blank"
    detail: str = body["detail"]
    assert "\n" not in detail
    return detail


async def test_mem0_shapes_add_list_search_update_history_delete(
    api: tuple[httpx.AsyncClient, str],
) -> None:
    http, url = api
    said = [{"role": "user", "content": "Alice drinks green tea every morning"},
            {"role": "assistant", "content": "Noted: green tea"},
            {"role": "system", "content": "you are helpful"}]  # fmt: skip
    body = {"messages": said, "user_id": "alice", "metadata": {"topic": "tea"}}
    added = ok(await http.post("/memories", json=body))["results"]
    assert [(r["memory"], r["event"]) for r in added] == [
        ("Alice drinks green tea every morning", "ADD"), ("Noted: green tea", "ADD")
    ]  # fmt: skip
    again = ok(await http.post("/memories", json=body))["results"]
    assert [r["event"] for r in again] == ["NONE", "NONE"]  # facts are not stored twice
    tea, noted = added[0]["id"], added[1]["id"]

    listed = ok(await http.get("/memories", params={"user_id": "alice"}))["results"]
    assert {m["id"]: m["role"] for m in listed} == {tea: "user", noted: "assistant"}
    first = next(m for m in listed if m["id"] == tea)
    assert first["user_id"] == "alice" and first["agent_id"] is None
    assert first["metadata"] == {"topic": "tea"}
    extras = first["ethos"]
    # (messages added with infer on, mem0's default, are turns: their life from their
    # words, a new agent's six everyday words on working; decision 0023)
    assert extras["policy"] == "working" and extras["kind"] == "fact"
    assert 0 < extras["salience"] <= 1 and extras["prunes_at"] > first["created_at"]

    question = {"query": "what does Alice drink in the morning", "filters": {"user_id": "alice"}}
    hits = ok(await http.post("/search", json=question))["results"]
    assert hits[0]["id"] == tea and hits[0]["score"] > 0
    assert hits[0]["ethos"]["salience"] > 0 and hits[0]["ethos"]["text_rank"] > 0
    assert ok(await http.post("/search", json={"query": "tea", "user_id": "bob"})) == {
        "results": []
    }

    ok(await http.put(f"/memories/{tea}", json={"text": "Alice drinks jasmine tea"}))
    ok(await http.put(f"/memories/{tea}", json={"metadata": {"topic": "drinks"}}))
    got = ok(await http.get(f"/memories/{tea}"))
    assert (got["memory"], got["metadata"]) == ("Alice drinks jasmine tea", {"topic": "drinks"})
    assert got["user_id"] == "alice"  # the identifiers it was added with stay
    ok(await http.delete(f"/memories/{noted}"))
    assert (
        problem(await http.get(f"/memories/{noted}"), 404)
        == f"no memory with id {noted}: forgotten"
    )
    history = ok(await http.get(f"/memories/{noted}/history"))
    assert [h["event"] for h in history] == ["ADD", "DELETE"]
    assert history[1]["is_deleted"] and history[1]["ethos"] == {"reason": "manual"}
    changes = ok(await http.get(f"/memories/{tea}/history"))
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in changes] == [
        ("ADD", None, "Alice drinks green tea every morning"),
        ("UPDATE", "Alice drinks green tea every morning", "Alice drinks jasmine tea"),
        ("UPDATE", None, "Alice drinks jasmine tea"),  # its metadata replaced
    ]  # the text it replaced is kept (memory_revisions)
    forgotten = ok(await http.get("/memories", params={"user_id": "alice", "pruned": True}))
    assert [m["id"] for m in forgotten["results"]] == [noted]

    ok(await http.post("/memories", json={"text": "Bob cycles", "agent_id": "bob"}))
    gone = ok(await http.delete("/memories", params={"user_id": "alice"}))
    assert gone["ethos"]["forgotten"]["semantic_facts"] == {"manual": 1}
    conn = await asyncpg.connect(url)
    try:  # forgotten, not deleted: every row is still there, recoverable
        rows = await conn.fetch("SELECT agent_id, pruned, prune_reason FROM semantic_facts")
    finally:
        await conn.close()
    assert sorted(tuple(r) for r in rows) == [
        ("alice", True, "manual"), ("alice", True, "manual"), ("bob", False, None)
    ]  # fmt: skip
    recovered = ok(await http.post("/ethos/recover", json={"ids": [tea]}))
    assert recovered == {"recovered": [tea]}


async def test_ethos_endpoints_for_the_dashboard(api: tuple[httpx.AsyncClient, str]) -> None:
    http, url = api
    body = {"text": "Cy keeps bees", "user_id": "cy", "kind": "episode", "policy": "working"}
    [saved] = ok(await http.post("/memories", json=body))["results"]
    agents = {a["agent_id"]: a for a in ok(await http.get("/ethos/agents"))}
    assert agents["cy"]["live"] == 1 and agents["cy"]["tables"]["episodic_traces"]["live"] == 1
    [memory] = ok(await http.get("/ethos/memories", params={"agent": "cy"}))
    assert memory["policy"] == "working" and len(memory["forecast"]) == 24
    assert memory["forecast"][0][1] >= memory["forecast"][-1][1]
    hits = ok(await http.post("/ethos/recall", json={"agent": "cy", "query": "bees",
                                                     "record": False}))  # fmt: skip
    assert hits[0]["id"] == saved["id"] and set(hits[0]) >= {"text_rank", "salience", "score"}
    why = ok(await http.get(f"/ethos/memories/{saved['id']}/explain"))
    assert why["policy"] == "working" and why["tau_days"] > 0
    moved = ok(await http.post(f"/ethos/memories/{saved['id']}/policy",
                               json={"policy": "permanent"}))  # fmt: skip
    assert (moved["old_policy"], moved["policy"]) == ("working", "permanent")
    ok(await http.post("/ethos/feedback", json={"ids": [saved["id"]], "verdict": "useful",
                                                "agent": "cy"}))  # fmt: skip
    assert ok(await http.get(f"/ethos/memories/{saved['id']}/links")) == []
    ok(await http.post("/ethos/forget", json={"ids": [saved["id"]]}))
    async with Engine(Settings(database=DatabaseSettings(url=url))) as engine:
        await engine.sweep()
    status = ok(await http.get("/ethos/status"))
    assert status["last_sweep"]["status"] == "completed"
    assert status["recent_sweeps"][0]["duration_ms"] >= 0
    assert {"manual"} <= {p["reason"] for p in status["pruned"]}
    assert set(status["due"]) == {"memory_vectors", "episodic_traces", "semantic_facts"}
    assert "backlog" in status["ltp"]
    assert ok(await http.get("/ethos/stats", params={"agent": "cy"}))["counts"]
    assert {c["name"] for c in ok(await http.get("/ethos/curve"))} >= {"standard", "permanent"}
    assert ok(await http.get("/ethos/whoami")) == {"access": "write"}  # loopback, no token
    schema = ok(await http.get("/openapi.json"))
    assert {"/memories", "/search", "/memories/{memory_id}/history", "/ethos/recall"} <= set(
        schema["paths"]
    )
    assert "/v3/memories/add/" not in schema["paths"]  # client aliases stay out of it


async def test_errors_are_one_line_problem_details(api: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = api
    assert problem(await http.post("/search", json={"user_id": "a"}), 400) == (
        "query: Field required"
    )
    assert "give user_id, agent_id or run_id" in problem(
        await http.post("/memories", json={"text": "x"}), 400
    )
    assert problem(await http.get("/memories/nope"), 400) == "bad id 'nope': expected a UUID"
    unknown = "01000000-0000-7000-8000-000000000000"
    assert problem(await http.get(f"/memories/{unknown}"), 404) == f"no memory with id {unknown}"
    assert "filter 'app_id' is not supported" in problem(
        await http.post("/search", json={"query": "x", "filters": {"app_id": "a"}}), 400
    )
    assert "unknown policy" in problem(
        await http.post("/memories", json={"text": "x", "user_id": "a", "policy": "nope"}), 400
    )
    assert problem(await http.get("/nowhere"), 404) == "Not Found"


async def test_dates_at_the_calendars_edge_are_refused_not_a_500(
    api: tuple[httpx.AsyncClient, str],
) -> None:
    """An expiration_date ethos cannot store (before 1900, after 2199, or past what a
    date can be) is a one-line problem on add and update, never a 500."""
    http, _ = api
    body = {"text": "edge of the calendar", "user_id": "edge"}
    [memory] = ok(await http.post("/memories", json=body))["results"]
    last = ok(await http.post("/memories", json={**body, "expiration_date": "2199-12-30"}))
    assert last["results"][0]["event"] == "NONE"  # the same fact, kept till then
    for day in ("9999-12-31", "0001-01-01", "1899-12-31", "2199-12-31"):
        added = await http.post("/memories", json={**body, "expiration_date": day})
        updated = await http.put(f"/memories/{memory['id']}", json={"expiration_date": day})
        for answer in (added, updated):
            assert f"bad expiration_date {day!r}: ethos takes days from 1900-01-01" in problem(
                answer, 400
            )
    for day in ("10000-01-01", "0000-01-01", "2026-02-30"):  # no such date: the schema's, 400 too
        added = await http.post("/memories", json={**body, "expiration_date": day})
        updated = await http.put(f"/memories/{memory['id']}", json={"expiration_date": day})
        for answer in (added, updated):
            assert problem(answer, 400).startswith("expiration_date:")


async def test_a_bad_add_fails_its_own_caller_only(api: tuple[httpx.AsyncClient, str]) -> None:
    """Adds sent at once, of the same fact for the same user: one with metadata
    PostgreSQL refuses (a NUL) is a 400 of its own; the valid one is stored."""
    http, _ = api
    body = {"text": "Gil keeps bees", "user_id": "gil"}
    good, bad = await asyncio.gather(
        http.post("/memories", json={**body, "metadata": {"hive": "north"}}),
        http.post("/memories", json={**body, "metadata": {"hive": "so\u0000uth"}}),
    )
    assert "must not contain NUL" in problem(bad, 400)
    [added] = ok(good)["results"]
    assert ok(await http.get(f"/memories/{added['id']}"))["metadata"] == {"hive": "north"}


async def test_retrievals_through_http_reinforce_as_the_python_api_does(
    database_url: str, settings: Settings, conn: asyncpg.Connection
) -> None:
    async with Engine(settings) as engine:  # the same memory for two agents
        ids = {a: await engine.add("fact", agent_id=a, content="Dee plays the oboe")
               for a in ("http", "python")}  # fmt: skip
    async with (
        serving("serve", database_url, "127.0.0.1") as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        ok(await http.post("/search", json={"query": "oboe", "user_id": "http"}))
        ok(await http.get(f"/memories/{ids['http']}"))
        ok(await http.get(f"/memories/{ids['http']}", params={"record": True}))
        ok(await http.get("/memories", params={"user_id": "http"}))
    # The server has stopped: its engine applied the buffered retrievals on the way out.
    async with Engine(settings) as engine:
        await engine.recall("python", "oboe")
    rows = {r["agent_id"]: r for r in await conn.fetch(
        "SELECT agent_id, retrieval_count, surfaced_count, strength FROM semantic_facts"
    )}  # fmt: skip
    # A search surfaces and retrieves; reads by id (a GET changes nothing, whatever it
    # asks: any page can make a browser send one) and listings do nothing.
    assert (rows["http"]["retrieval_count"], rows["http"]["surfaced_count"]) == (1, 1)
    assert rows["http"]["retrieval_count"] == rows["python"]["retrieval_count"]
    assert rows["http"]["surfaced_count"] == rows["python"]["surfaced_count"]
    assert rows["http"]["strength"] == pytest.approx(rows["python"]["strength"], rel=1e-3)


async def test_the_door_tokens_read_and_write(database_url: str) -> None:
    env = {"MEMORY_TOKEN": TOKEN, "MEMORY_READ_TOKEN": READER,
           "ETHOS_SERVER__READ_TOKEN_ENV": "MEMORY_READ_TOKEN",
           "ETHOS_SERVER__ALLOWED_HOSTS": '["memory.test"]'}  # fmt: skip
    args = ("--token-env", "MEMORY_TOKEN")
    async with serving("serve", database_url, "0.0.0.0", *args, env=env) as port:
        base = f"http://127.0.0.1:{port}"
        add = {"text": "Eve sails", "user_id": "eve"}
        async with httpx.AsyncClient(base_url=base) as http:
            assert problem(await http.get("/memories"), 401) == "a valid bearer token is required"
            reader = {"Authorization": f"Bearer {READER}"}
            assert ok(await http.get("/memories", headers=reader)) == {"results": []}
            assert "read-only" in problem(await http.post("/memories", json=add, headers=reader),
                                          403)  # fmt: skip
            assert ok(await http.get("/ethos/whoami", headers=reader)) == {"access": "read"}
            mem0_style = {"Authorization": f"Token {TOKEN}"}  # what MemoryClient sends
            ok(await http.post("/memories", json=add, headers=mem0_style))
            ok(await http.get("/memories", headers={"X-API-Key": TOKEN}))
            evil = {"Host": "evil.example.com"} | mem0_style
            problem(await http.get("/memories", headers=evil), 421)
            problem(await http.get("/memories", headers={"Origin": "http://evil.example"}), 403)
            own = {"Origin": base} | mem0_style
            ok(await http.get("/memories", headers=own))
            page = await http.get("/")  # the dashboard's files hold no data: no token
            assert page.status_code == 200 and "ethos" in page.text


def test_a_non_loopback_bind_without_a_token_is_refused(cli: Cli, database_url: str) -> None:
    done = cli("serve", "--http", "0.0.0.0:1", env={"ETHOS_DATABASE__URL": database_url})
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "0.0.0.0 is reachable from other machines: set a bearer token ([server]" in line


async def test_concurrent_requests_share_one_engine(api: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = api
    texts = [f"note {i} about kites" for i in range(20)]
    results = await asyncio.gather(
        *(http.post("/memories", json={"text": t, "user_id": "kim"}) for t in texts)
    )
    assert all(r.status_code == 200 for r in results)
    listed = ok(await http.get("/memories", params={"user_id": "kim", "top_k": 100}))
    assert sorted(m["memory"] for m in listed["results"]) == sorted(texts)
