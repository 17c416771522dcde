"""A memory is itself: merges keep what the front ends hold apart (a LangGraph item is
its key, a mem0 memory its owners), and every statement about one agent's memories
names the agent, so that an id two agents hold never reaches the other's row."""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.adapters.langgraph import AsyncEthosStore
from ethos.domain.errors import InputError
from ethos.services.daemon import Cycle, merge_duplicates
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.servers import TOKEN, serving

if TYPE_CHECKING:
    from tests.conftest import Cli

# Read by mem0 when it is imported (in the test): no telemetry, no ~/.mem0.
os.environ.setdefault("MEM0_TELEMETRY", "False")


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED)


async def daemon_merge(settings: Settings) -> None:
    """One merge as the daemon runs it each cycle."""
    async with ConfiguredEngine(settings) as engine:
        cycle = Cycle(engine=engine, store=engine.store, daemon_id="d", stop=asyncio.Event())
        await merge_duplicates(cycle)


async def test_langgraph_items_under_other_keys_are_never_merged(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """Finding: three items with one value under three keys were one memory after the
    daemon's merge; two of the keys read None. Nor is a fact added through the engine
    with an item's value found as that item's repeat."""
    days = ("monday", "tuesday", "wednesday")
    async with AsyncEthosStore(settings) as store:
        for key in days:
            await store.aput(("checkins",), key, {"answer": "yes"})
    await daemon_merge(settings)
    await daemon_merge(settings)  # a second cycle too
    async with AsyncEthosStore(settings) as store:
        for key in days:
            item = await store.aget(("checkins",), key)
            assert item is not None and item.value == {"answer": "yes"}, key
        assert sorted(i.key for i in await store.asearch(("checkins",), limit=10)) == sorted(days)
        content = await conn.fetchval(
            "SELECT content FROM semantic_facts WHERE client_key = 'monday'"
        )
        added = await store.engine.add_detailed("fact", agent_id="checkins", content=content)
    assert added.created  # a memory of its own, not the item 'monday' retrieved
    reasons = await conn.fetch("SELECT prune_reason FROM semantic_facts WHERE pruned")
    assert reasons == []


async def test_mem0_memories_of_other_owners_are_never_merged(
    database_url: str, settings: Settings, tmp_path: Path
) -> None:
    """Finding: one text added with infer=False for dana with nurse_bot and for dana with
    chef_bot was one memory after the daemon's merge: chef_bot's search and listing were
    empty. Through mem0's own client, before and after the merge."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    bots = ("nurse_bot", "chef_bot")
    async with serving("serve", database_url, "127.0.0.1", "--token-env", "MEMORY_TOKEN",
                       env={"MEMORY_TOKEN": TOKEN}) as port:  # fmt: skip
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        try:

            def held() -> dict[str, tuple[list[str], list[str]]]:
                seen = {}
                for bot in bots:
                    owners = {"user_id": "dana", "agent_id": bot}
                    listed = client.get_all(filters=owners)["results"]
                    found = client.search("peanuts allergy", filters=owners)["results"]
                    seen[bot] = ([m["memory"] for m in listed], [h["memory"] for h in found])
                return seen

            added = [
                await asyncio.to_thread(
                    client.add, "My allergy is peanuts", user_id="dana", agent_id=bot, infer=False
                )
                for bot in bots
            ]
            assert len({a["results"][0]["id"] for a in added}) == 2  # not one another's repeat
            expected = {bot: (["My allergy is peanuts"], ["My allergy is peanuts"]) for bot in bots}
            assert await asyncio.to_thread(held) == expected
            await daemon_merge(settings)
            assert await asyncio.to_thread(held) == expected
        finally:
            client.client.close()


async def shared_id(conn: asyncpg.Connection, table: str, memory_id: uuid.UUID, agent: str) -> None:
    """Another agent's memory with the same id, as plain SQL may write it (the keys lead
    with the agent)."""
    await conn.execute(
        f"INSERT INTO {table} (id, agent_id, content) VALUES ($1, $2, 'Vic keeps bees')",
        memory_id,
        agent,
    )


async def state(conn: asyncpg.Connection, memory_id: uuid.UUID, agent: str) -> asyncpg.Record:
    return await conn.fetchrow(
        "SELECT content, pruned, prune_reason, merged_into, policy, metadata FROM semantic_facts"
        " WHERE id = $1 AND agent_id = $2",
        memory_id,
        agent,
    )


async def test_a_merge_never_reaches_another_agents_memory_of_the_same_id(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Finding: merging uma's duplicates pruned vic's memory of the id of uma's second
    copy as `merged`, pointing at uma's. Every part of the merge names its agent."""
    first = await engine.add("fact", agent_id="uma", content="Uma keeps bees")
    second = uuid.uuid4()
    await conn.execute(
        "INSERT INTO semantic_facts (id, agent_id, content) VALUES ($1, 'uma', 'UMA keeps bees')",
        second,
    )
    await shared_id(conn, "semantic_facts", second, "vic")
    await shared_id(conn, "semantic_facts", first, "wes")
    report = await engine.merge(["fact"])
    assert report.counts["semantic_facts"]["merged"] == 1
    merged = await state(conn, second, "uma")
    assert (merged["prune_reason"], merged["merged_into"]) == ("merged", first)
    for owner, memory_id in (("vic", second), ("wes", first)):
        other = await state(conn, memory_id, owner)
        assert (other["pruned"], other["merged_into"]) == (False, None), owner
    assert not (await state(conn, first, "uma"))["pruned"]


async def test_an_update_names_the_agent_and_never_reaches_another_agents_row(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Finding: Engine.update wrote by id alone: every memory of the id changed."""
    memory_id = await engine.add("fact", agent_id="uma", content="Uma keeps bees")
    await shared_id(conn, "semantic_facts", memory_id, "vic")
    with pytest.raises(InputError, match=r"of 2 agents \(uma, vic\): name the agent"):
        await engine.update("fact", memory_id, content="Uma keeps wasps")
    assert (await state(conn, memory_id, "uma"))["content"] == "Uma keeps bees"
    await engine.update("fact", memory_id, content="Uma keeps wasps", agent="uma")
    assert (await state(conn, memory_id, "uma"))["content"] == "Uma keeps wasps"
    assert (await state(conn, memory_id, "vic"))["content"] == "Vic keeps bees"
    with pytest.raises(InputError, match=f"no semantic_facts row of agent wes with id {memory_id}"):
        await engine.update("fact", memory_id, content="x", agent="wes")


async def test_move_names_the_agent_and_asks_for_it_when_an_id_is_shared(
    database_url: str, engine: Engine, conn: asyncpg.Connection, cli: Cli
) -> None:
    """Finding: `ethos move` of an id two agents hold moved one agent's row, silently,
    and could not name the agent. Now it says whose row it moved, refuses an id of
    several agents in one line asking for --agent, and moves the named agent's alone."""
    env = {"ETHOS_DATABASE__URL": database_url, "ETHOS_IMPORTANCE__AUTO": "false"}  # as applied
    memory_id = await engine.add("fact", agent_id="uma", content="Uma keeps bees")
    alone = cli("move", "fact", str(memory_id), "--policy", "long_term", env=env)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.startswith(f"moved uma's {memory_id} from standard to long_term")
    await shared_id(conn, "semantic_facts", memory_id, "vic")
    refused = cli("move", "fact", str(memory_id), "--policy", "permanent", env=env)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    [line] = lines
    assert line.endswith(f"semantic_facts {memory_id} is a memory of 2 agents (uma, vic):"
                         " name the agent (--agent)")  # fmt: skip
    moved = cli("move", "fact", str(memory_id), "--policy", "permanent", "--agent", "vic",
                "--json", env=env)  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    assert '"agent": "vic"' in moved.stdout
    policies = {a: (await state(conn, memory_id, a))["policy"] for a in ("uma", "vic")}
    assert policies == {"uma": "long_term", "vic": "permanent"}
    with pytest.raises(InputError, match=f"no semantic_facts row of agent wes with id {memory_id}"):
        await engine.move("fact", memory_id, "working", agent="wes")


async def test_forget_purge_and_recovery_never_reach_another_agents_memory_of_the_id(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Findings of the check over the statements (test_statements): a purge of every
    agent deleted another agent's live memory of a purged id, a recovery rewrote its
    curve, and a forget that names no agent forgot both."""
    memory_id = await engine.add("fact", agent_id="uma", content="Uma keeps bees")
    await shared_id(conn, "semantic_facts", memory_id, "vic")
    with pytest.raises(InputError, match=r"of 2 agents \(uma, vic\): name the agent"):
        await engine.forget("fact", [memory_id])
    assert await conn.fetchval("SELECT count(*) FROM lifecycle_runs") == 0  # nothing done
    await engine.forget("fact", [memory_id], agent="uma")
    vic = await conn.fetchrow(
        "SELECT * FROM semantic_facts WHERE agent_id = 'vic' AND id = $1", memory_id
    )
    assert not vic["pruned"]
    recovered = await engine.recover("fact", Selector(ids=(memory_id,)))
    assert len(recovered.rows) == 1
    again = await conn.fetchrow(
        "SELECT * FROM semantic_facts WHERE agent_id = 'vic' AND id = $1", memory_id
    )
    assert (again["strength"], again["anchor_at"]) == (vic["strength"], vic["anchor_at"])
    at = await engine.now()
    await engine.forget("fact", [memory_id], agent="uma", now=at)
    purged = await engine.purge(
        at + timedelta(seconds=1), tables=["fact"], now=at + timedelta(seconds=2)
    )
    assert purged.counts["semantic_facts"] == {"manual": 1}
    left = await conn.fetch("SELECT agent_id, pruned FROM semantic_facts WHERE id = $1", memory_id)
    assert [tuple(r) for r in left] == [("vic", False)]
