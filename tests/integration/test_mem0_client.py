"""mem0's own clients, the mem0ai package's MemoryClient and AsyncMemoryClient, pointed
at `ethos serve` on 127.0.0.1 with `host=`: each pings, adds, lists, searches, reads,
updates, gets history and deletes through ethos, unchanged (its API key is ethos's
token)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.servers import TOKEN, serving

# Read by mem0 when it is imported (in the test): no telemetry, no ~/.mem0.
os.environ.setdefault("MEM0_TELEMETRY", "False")

ENV = {"MEMORY_TOKEN": TOKEN}
ARGS = ("--token-env", "MEMORY_TOKEN")


async def test_mem0_memory_client_through_ethos(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    async with serving("serve", database_url, "127.0.0.1", *ARGS, env=ENV) as port:
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")  # pings
        try:
            through(client)
        finally:
            client.client.close()  # the client leaves its connections open
    await forgotten_not_gone(conn)


async def test_mem0_async_memory_client_through_ethos(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    """The same calls through mem0's AsyncMemoryClient, each awaited on this loop."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import AsyncMemoryClient

    async with serving("serve", database_url, "127.0.0.1", *ARGS, env=ENV) as port:
        client = AsyncMemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")  # pings
        try:
            await asyncio.to_thread(through, Awaited(client, asyncio.get_running_loop()))
        finally:
            await client.async_client.aclose()
    await forgotten_not_gone(conn)


class Awaited:
    """An AsyncMemoryClient called as a MemoryClient is, from another thread: each call
    awaited on the loop the client belongs to, so one scenario checks both clients."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.client, self.loop = client, loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(method(*args, **kwargs), self.loop).result()

        return call


async def forgotten_not_gone(conn: asyncpg.Connection) -> None:
    """Deleted through mem0's client, forgotten in ethos: every row still there,
    recoverable."""
    rows = await conn.fetch("SELECT pruned, prune_reason FROM semantic_facts")
    assert [tuple(r) for r in rows] == [(True, "manual")] * 6


def through(client: Any) -> None:
    """Every call a mem0 user makes, through ethos."""
    from mem0.exceptions import MemoryError as Mem0Error
    from mem0.exceptions import MemoryNotFoundError

    said = [{"role": "user", "content": "I am vegetarian and allergic to nuts"}]
    added: dict[str, Any] = client.add(
        said, user_id="frank", metadata={"diet": "vegetarian", "source": "chat"}
    )
    [memory] = added["results"]
    assert memory["event"] == "ADD"
    client.add("Frank's sister lives in Lyon", user_id="frank")

    found = client.search("is he vegetarian", filters={"user_id": "frank"})
    assert found["results"][0]["id"] == memory["id"]
    assert found["results"][0]["metadata"] == {"diet": "vegetarian", "source": "chat"}
    hit = found["results"][0]  # as mem0 gives a hit: its times, its message's role
    assert hit["role"] == "user" and hit["updated_at"] == hit["created_at"] is not None
    paged = client.get_all(filters={"user_id": "frank"}, page=1, page_size=1)
    assert (len(paged["results"]), paged["count"]) == (1, 2)  # count: the listing's, all pages
    chat = {"AND": [{"user_id": "frank"}, {"metadata": {"source": "chat"}}]}  # in SQL: @>
    said_in_chat = client.get_all(filters=chat)
    assert ([m["id"] for m in said_in_chat["results"]], said_in_chat["count"]) == (
        [memory["id"]],
        1,
    )
    assert [h["id"] for h in client.search("vegetarian", filters=chat)["results"]] == [memory["id"]]
    listed = client.get_all(filters={"user_id": "frank"})
    assert {m["memory"] for m in listed["results"]} == {
        "I am vegetarian and allergic to nuts", "Frank's sister lives in Lyon"
    }  # fmt: skip
    one = client.get(memory["id"])
    assert one["user_id"] == "frank" and one["ethos"]["prunes_at"] is not None
    assert one["updated_at"] == one["created_at"] and one["role"] == "user"  # as mem0 sets them

    client.update(memory["id"], text="I am vegan and allergic to nuts", metadata={"diet": "vegan"})
    changed = client.get(memory["id"])
    assert changed["memory"] == "I am vegan and allergic to nuts"
    assert changed["metadata"] == {"diet": "vegan", "source": "chat"}  # merged, as mem0 does
    assert changed["updated_at"] > changed["created_at"]
    assert [(h["event"], h["role"]) for h in client.history(memory["id"])] == [
        ("ADD", "user"), ("UPDATE", "user")
    ]  # fmt: skip

    client.delete(memory["id"])
    with pytest.raises(MemoryNotFoundError, match="forgotten"):  # a 404, as mem0 answers
        client.get(memory["id"])
    assert [h["event"] for h in client.history(memory["id"])][-1] == "DELETE"
    owners_combine(client)
    expiration(client)
    client.delete_all(user_id="frank")
    assert client.get_all(filters={"user_id": "frank"})["results"] == []
    with pytest.raises(Mem0Error, match="bad id 'nope': expected a UUID"):
        client.get("nope")


def owners_combine(client: Any) -> None:
    """user_id, agent_id and run_id as mem0's clients send them: an AND, in search,
    get_all and delete_all; search's filters with metadata and OR, as get_all's."""
    from mem0.exceptions import MemoryError as Mem0Error

    [cook] = client.add("Frank cooks risotto on Fridays", user_id="frank", agent_id="cook")[
        "results"
    ]
    [coach] = client.add("Frank runs on Fridays", user_id="frank", agent_id="coach")["results"]
    both = {"AND": [{"user_id": "frank"}, {"agent_id": "cook"}]}
    assert [h["id"] for h in client.search("Fridays", filters=both)["results"]] == [cook["id"]]
    either = {"AND": [{"user_id": "frank"}, {"OR": [{"agent_id": "cook"}, {"agent_id": "coach"}]}]}
    assert {m["id"] for m in client.get_all(filters=either)["results"]} == {cook["id"], coach["id"]}
    # search filters as get_all does, in SQL: metadata equalities, AND and OR
    client.add("Frank swims on Fridays", user_id="frank", metadata={"sport": "swim"})
    swims = {"AND": [{"user_id": "frank"}, {"metadata": {"sport": "swim"}}]}
    [swim] = client.search("Fridays", filters=swims)["results"]
    assert swim["memory"] == "Frank swims on Fridays"
    cook_or_swim = {
        "user_id": "frank",
        "OR": [{"agent_id": "cook"}, {"metadata": {"sport": "swim"}}],
    }
    found = client.search("Fridays", filters=cook_or_swim)["results"]
    assert {h["id"] for h in found} == {cook["id"], swim["id"]}
    assert {h["id"] for h in client.search("Fridays", filters=either)["results"]} == {
        cook["id"], coach["id"]
    }  # fmt: skip
    assert (
        client.search("Fridays", filters={"user_id": "frank", "metadata": {"sport": "golf"}})[
            "results"
        ]
        == []
    )
    with pytest.raises(Mem0Error, match="every alternative of an OR names the same first owner"):
        client.search("Fridays", filters={"OR": [{"user_id": "frank"}, {"user_id": "ann"}]})
    pair = {"user_id": "frank", "agent_id": "coach"}
    assert [m["id"] for m in client.get_all(filters=pair)["results"]] == [coach["id"]]
    client.delete_all(user_id="frank", agent_id="cook")  # mem0: only those of both
    left = {m["id"] for m in client.get_all(filters={"user_id": "frank"})["results"]}
    assert coach["id"] in left and cook["id"] not in left


def expiration(client: Any) -> None:
    """expiration_date, on add and update: kept all through that day (UTC), as mem0
    counts it; null clears it; an episode has no expiry (it fades)."""
    from mem0.exceptions import MemoryError as Mem0Error

    added = client.add("Frank's trial ends soon", user_id="frank", expiration_date="2030-01-31")
    [trial] = added["results"]
    assert client.get(trial["id"])["ethos"]["expires_at"] == "2030-02-01T00:00:00+00:00"
    client.update(trial["id"], expiration_date="2030-03-31")
    assert client.get(trial["id"])["ethos"]["expires_at"] == "2030-04-01T00:00:00+00:00"
    client.update(trial["id"], expiration_date=None)
    assert client.get(trial["id"])["ethos"]["expires_at"] is None
    with pytest.raises(Mem0Error, match="episodes do not expire, they fade"):
        client.add("Frank jogs", user_id="frank", kind="episode", expiration_date="2030-01-31")
    with pytest.raises(Mem0Error, match="bad expiration_date '9999-12-31'"):
        client.add("Frank's trial never ends", user_id="frank", expiration_date="9999-12-31")
    with pytest.raises(Mem0Error, match="bad expiration_date '9999-12-31'"):
        client.update(trial["id"], expiration_date="9999-12-31")
    # past its expiry, before any sweep: left out of search, the listing and get alike
    client.update(trial["id"], expiration_date=(date.today() - timedelta(days=2)).isoformat())
    frank = {"user_id": "frank"}
    assert trial["id"] not in [h["id"] for h in client.search("trial", filters=frank)["results"]]
    listed = client.get_all(filters=frank)
    assert trial["id"] not in [m["id"] for m in listed["results"]]
    assert listed["count"] == len(listed["results"])
    with pytest.raises(Mem0Error, match="expired"):
        client.get(trial["id"])
    client.delete(trial["id"])  # forgotten now, as the sweep would (reason manual)


async def test_mem0_client_recalls_by_meaning_with_the_local_provider(
    database_url: str, tmp_path: Path
) -> None:
    """[embedding] provider = "local": no server, no key, and mem0's client finds a
    memory that shares no word with the question."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    local = {**ENV, "ETHOS_EMBEDDING__PROVIDER": "local"}
    async with serving("serve", database_url, "127.0.0.1", *ARGS, env=local) as port:
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        try:
            said = [{"role": "user", "content": "I am vegetarian and allergic to peanuts"}]
            [memory] = (await asyncio.to_thread(client.add, said, user_id="ann"))["results"]
            for other in ("Ann's sister lives in Lyon", "Ann missed the train on Monday"):
                await asyncio.to_thread(client.add, other, user_id="ann")
            found = await asyncio.to_thread(
                client.search, "which foods must she avoid eating?", filters={"user_id": "ann"}
            )
        finally:
            client.client.close()
    assert found["results"][0]["id"] == memory["id"]


async def test_infer_false_states_a_fact_and_infer_on_adds_a_turn(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    """mem0's infer (on by default) would have a model extract facts from the messages;
    ethos extracts none, so they are turns: their life from their words, chatter on
    working. infer=False states them: a new user's first fact lives at least as long as
    standard (decision 0023)."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    async with serving("serve", database_url, "127.0.0.1", *ARGS, env=ENV) as port:
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        try:
            added = {
                (user, infer): client.add("I am vegetarian", user_id=user, infer=infer)
                for user, infer in (("sam", False), ("dana", None), ("eve", True))
            }
            [chatter] = client.add("lol", user_id="sam")["results"]
            policy = {
                key: client.get(a["results"][0]["id"])["ethos"]["policy"]
                for key, a in added.items()
            }
            chatter_policy = client.get(chatter["id"])["ethos"]["policy"]
        finally:
            client.client.close()
    assert policy == {("sam", False): "standard", ("dana", None): "working",
                      ("eve", True): "working"}  # fmt: skip
    assert chatter_policy == "working"
    stated = await conn.fetch("SELECT agent_id, stated FROM semantic_facts ORDER BY agent_id")
    assert [tuple(r) for r in stated] == [("dana", False), ("eve", False), ("sam", True),
                                          ("sam", False)]  # fmt: skip
