"""ethos on a database distributed by agent (issue 40): two agents whose memories sit at
the same physical places in different shards; recall, vector search and the per-agent
reads return only the agent's own rows, and each of their statements is routed to one
shard; text recall and vector search run on the agent's node, against its shard group. Text
recall joined rows back by place alone and returned the other agent's rows; vector
search ran its candidates on every shard (a source's agent was the vector's column, not
the value)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from ethos.db.store.core import SHARD_GROUPS, shard_names
from ethos.db.store.sessions import init_connection
from ethos.db.store.sql.ltp import build_agents_query, build_enqueue_query
from ethos.domain.tables import table_spec
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import MIGRATED, TABLES, Copy, Template, distribute

AGENTS = ("alice", "bob")
DIMENSION = 384


def direction(i: int) -> list[float]:
    return [1.0 + i] + [0.5] * (DIMENSION - 1)


async def written(url: str) -> None:
    """Three episodes and three vectors an agent."""
    settings = Settings(database=DatabaseSettings(url=url))
    async with Engine(settings, url=url, check_settings=False) as engine:
        for agent in AGENTS:
            for i in range(3):
                await engine.add(
                    "episodic_traces", agent_id=agent, content=f"{agent} sailed the lake, day {i}"
                )
                await engine.add(
                    "memory_vectors", agent_id=agent, content=f"{agent} note {i}",
                    embedding=direction(i),
                )  # fmt: skip


WRITTEN = Template("written", MIGRATED, written)
# the memories written before the tables were distributed
WRITTEN_DISTRIBUTED = Template("written_distributed", WRITTEN, distribute)


@pytest.fixture
async def distributed(cluster_copy: Copy) -> AsyncIterator[Engine]:
    """An engine on a copy of WRITTEN_DISTRIBUTED."""
    url = await cluster_copy(WRITTEN_DISTRIBUTED)
    settings = Settings(database=DatabaseSettings(url=url))
    async with Engine(settings, url=url, check_settings=False) as engine:
        yield engine


async def places(url: str, table: str) -> dict[str, set[str]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(f"SELECT agent_id, ctid::text AS place FROM {table}")
    finally:
        await conn.close()
    by_agent: dict[str, set[str]] = {}
    for row in rows:
        by_agent.setdefault(row["agent_id"], set()).add(row["place"])
    return by_agent


async def test_recall_and_search_return_only_the_agents_own(distributed: Engine) -> None:
    url = distributed.settings.database.url
    assert url is not None
    for table in ("episodic_traces", "memory_vectors"):  # what makes a leak possible
        shared = await places(url, table)
        assert shared["alice"] == shared["bob"] and len(shared["alice"]) == 3
    for agent in AGENTS:
        hits = await distributed.recall(agent, "sailed lake", record=False)
        assert sorted(h.content for h in hits) == [
            f"{agent} sailed the lake, day {i}" for i in range(3)
        ]
        nearest = await distributed.nearest(agent, direction(0), record=False)
        assert sorted(h.content for h in nearest) == [f"{agent} note {i}" for i in range(3)]


def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """Every statement ethos sends from here on, with its values."""
    sent: list[tuple[str, tuple[Any, ...]]] = []
    for name in ("fetch", "fetchrow", "fetchval", "execute"):
        original: Callable[..., Any] = getattr(asyncpg.Connection, name)

        async def record(self: Any, query: str, *args: Any, _o: Any = original, **kw: Any) -> Any:
            sent.append((query, args))
            return await _o(self, query, *args, **kw)

        monkeypatch.setattr(asyncpg.Connection, name, record)
    return sent


async def test_an_agents_reads_and_forget_run_on_one_shard(
    distributed: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = distributed.settings.database.url
    assert url is not None
    memory = (await distributed.memories("alice"))[0].account
    sent = recorded(monkeypatch)
    await distributed.recall("alice", "sailed lake", record=False)
    await distributed.nearest("alice", direction(1), record=False)
    await distributed.explain(memory.table, memory.id, agent="alice")
    await distributed.history(memory.table, memory.id, agent="alice")
    await distributed.links(memory.table, memory.id)
    await distributed.memory(memory.id, agent="alice")
    await distributed.memories("alice")
    await distributed.stats("alice")
    # by id alone, as mem0's DELETE: found on every shard, then forgotten on alice's
    await distributed.forget(None, [str(memory.id)])
    monkeypatch.undo()
    plans, on_shards = await citus_plans(url, sent, "alice")
    for query, plan in plans:
        assert one_router_task(plan), f"{query}\n{plan}"
    assert len(plans) >= 3 and on_shards >= 2
    forgets = [q for q, _ in sent if q.lstrip().startswith("UPDATE") and MEMORIES.search(q)]
    assert len(forgets) == 1 and on_node(forgets[0]), forgets  # in alice's session


# A statement about memories: naming a memory table, or its shard on a node.
MEMORIES = re.compile(r"\b(?:episodic_traces|semantic_facts|memory_vectors)(?:_\d{6,})?\b")


def on_node(query: str) -> bool:
    """Whether a statement was sent to a node against a shard group's tables."""
    return bool(re.search(r"\b[a-z_]+_\d{6,}\b", query))


async def test_an_agents_lifecycle_runs_in_its_session(
    distributed: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One agent's listing, counts, merge, forgetting, recovery and purge's count run in
    the agent's session: each statement about its memories is sent to the node that
    holds its shard group, against its shards, as one server's statement (planned once a
    session there). Before, each went through the coordinator, which planned it at every
    call (and again on the node), and a recovery naming no agent was split by agent
    above the store."""
    sent = recorded(monkeypatch)
    await distributed.memories("alice")
    await distributed.count_memories("alice")
    await distributed.count_live("episodic_traces", "alice")
    await distributed.merge(agent="alice")
    await distributed.forget_agent("alice")
    named = await distributed.recover("episodic_traces", Selector(agent="alice"))
    await distributed.purge(await distributed.now(), agent="alice", dry_run=True)
    purged = await distributed.purge(
        await distributed.now(), agent="alice", tables=["memory_vectors"]
    )
    await distributed.forget_agent("alice")
    unnamed = await distributed.recover("episodic_traces", Selector(reason="manual"))
    monkeypatch.undo()
    episodes = [f"alice sailed the lake, day {i}" for i in range(3)]
    assert sorted(row["content"] for row in named.rows) == episodes
    assert purged.counts == {"memory_vectors": {"manual": 3}}
    assert sorted(row["content"] for row in unnamed.rows) == episodes
    about = [
        query for query, args in sent
        if "alice" in args and MEMORIES.search(query) and query != SHARD_GROUPS.text
    ]  # fmt: skip
    # but a hard delete, which the coordinator routes (on a node its trigger would reach
    # the other nodes as the definer role, which may not log in)
    deletes = [query for query in about if "DELETE FROM" in query]
    assert len(about) > 10 and len(deletes) == 1 and not on_node(deletes[0])
    assert [query for query in about if not on_node(query) and query not in deletes] == []
    # a recovery naming no agent: its batch written in the session of the agents it holds
    written = [query for query, args in sent if ["alice"] in args and "recovered AS" in query]
    assert len(written) == 2 and all(map(on_node, written)), written


async def test_an_agents_queued_events_are_applied_on_its_node(
    distributed: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued events are kept and applied on the agent's node: the queue is distributed
    by agent beside the memories (migration 0057), its events written there by one
    routed statement (not copied through the coordinator, which row security refuses)
    and popped there. Before, the queue stayed on the coordinator; before that, an event
    named an id alone."""
    url = distributed.settings.database.url
    assert url is not None
    conn = await asyncpg.connect(url)
    try:
        episodes = await conn.fetch("SELECT id FROM episodic_traces WHERE agent_id = 'alice'")
        ids = [row["id"] for row in episodes]
        record = "SELECT ethos_record_retrieval('episode', $1, now(), 'alice')"
        await conn.execute(record, ids + ids[:1])
        assert await conn.fetchval("SELECT count(*) FROM retrieval_queue") == 4
        shard_node = (
            "SELECT nodeport FROM citus_shards WHERE table_name = $1::regclass"
            " AND shardid = get_shard_id_for_distribution_column($1, 'alice')"
        )
        queue_node = await conn.fetchval(shard_node, "retrieval_queue")
        enqueue = build_enqueue_query(table_spec("episodic_traces"), receipt=False)
        values = {"agent": "alice", "ids": ids, "at": datetime.now(UTC), "kind": "retrieval",
                  "grp": None, "call": uuid.uuid4()}  # fmt: skip
        enqueued = "\n".join(
            r[0] for r in await conn.fetch(f"EXPLAIN {enqueue.text}", *enqueue.args(values))
        )
        sent = recorded(monkeypatch)
        assert await distributed.ltp.drain_queue()
        monkeypatch.undo()
        counts = "SELECT array_agg(retrieval_count ORDER BY retrieval_count) FROM episodic_traces"
        assert await conn.fetchval(counts + " WHERE agent_id = 'alice'") == [1, 1, 2]
        assert await conn.fetchval(counts + " WHERE agent_id = 'bob'") == [0, 0, 0]
        node = await conn.fetchval(shard_node, "episodic_traces")
    finally:
        await conn.close()
    assert queue_node == node
    assert one_router_task(enqueued) and "pull to coordinator" not in enqueued, enqueued
    # no lookup of the ids' agents (the lock of the rows before they are written reads
    # the agent's rows too, named by agent: one of the routed plans below)
    spec = table_spec("episodic_traces")
    assert not any(query == build_agents_query(spec).text for query, _ in sent)
    plans, _ = await citus_plans(url, sent, "alice")
    coordinator = urlsplit(url).port
    assert any("DELETE FROM retrieval_queue" in query for query, _ in plans)  # the pop
    assert any("FOR NO KEY UPDATE SKIP LOCKED" in query for query, _ in plans)  # the lock
    # the strengthening: its hints are written by a second step, on the same node
    assert any("UPDATE episodic_traces" in query for query, _ in plans)
    for query, plan in plans:
        workers = set(re.findall(r"Node: host=\S+ port=(\d+)", plan)) - {str(coordinator)}
        assert workers == {str(node)}, f"{query}\n{plan}"
        assert set(re.findall(r"Task Count: (\d+)", plan)) == {"1"}, f"{query}\n{plan}"


# Citus reports each command it sends to a shard, on a worker or run locally, naming
# the shard's table: session settings of the connection a statement runs on.
CITUS_COMMAND_LOG = (
    "SET citus.log_remote_commands = on; SET citus.log_local_commands = on;"
    " SET client_min_messages = log"
)


def shard_commands(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """From here on, each statement ethos sends through the coordinator and each command
    Citus sends to a shard for it: (statement, command)."""
    log: list[tuple[str, str]] = []
    execute = asyncpg.Connection.execute
    for name in ("fetch", "fetchrow", "fetchval", "execute"):
        original: Callable[..., Any] = getattr(asyncpg.Connection, name)

        async def logged(self: Any, query: str, *args: Any, _o: Any = original, **kw: Any) -> Any:
            def heard(_: Any, message: Any, statement: str = query) -> None:
                log.append((statement, message.message))

            self.add_log_listener(heard)
            try:
                await execute(self, CITUS_COMMAND_LOG)
                return await _o(self, query, *args, **kw)
            finally:
                self.remove_log_listener(heard)

        monkeypatch.setattr(asyncpg.Connection, name, logged)
    return log


async def test_an_agents_writes_touch_its_shard_group_alone(
    distributed: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command Citus sends to a shard while one agent's memories are added,
    retrieved with LTP, given feedback, merged, swept, forgotten, recovered, purged and
    erased is a command on that agent's shard group: no statement of them reaches
    another shard (by Citus's own log of what it sends). A recovery, a purge, an erase, a
    merge and the links an LTP flush learns each read or wrote every shard (their ids
    named no agent), and so did the hints an erase gives again."""
    url = distributed.settings.database.url
    assert url is not None
    conn = await asyncpg.connect(url)
    try:
        group = shard_names(await conn.fetchrow(SHARD_GROUPS.text, "alice"))
        shards = "SELECT shard_name(logicalrelid, shardid) FROM pg_dist_shard"
        every_shard = {row[0] for row in await conn.fetch(shards)}
    finally:
        await conn.close()
    episode = next(
        m.account for m in await distributed.memories("alice")
        if m.account.table == "episodic_traces"
    )  # fmt: skip
    log = shard_commands(monkeypatch)
    await distributed.add("episodic_traces", agent_id="alice", content="alice swam far")
    await distributed.add(
        "memory_vectors", agent_id="alice", content="alice's note", embedding=direction(5)
    )
    await distributed.add_many(
        "semantic_facts", agent_id="alice", contents=["alice likes tea"] * 2 + ["alice rows"]
    )
    await distributed.recall("alice", "sailed lake", record=True)
    await distributed.nearest("alice", direction(1), record=True)
    await distributed.feedback(episode.table, [episode.id], "useful", agent="alice")
    await distributed.ltp.drain(5)
    await distributed.merge(agent="alice", near=True)
    await distributed.sweep(agent="alice")
    await distributed.sweep(agent="alice", mode="full")
    await distributed.forget(episode.table, [episode.id], agent="alice")
    await distributed.recover(episode.table, Selector(ids=(episode.id,), agent="alice"))
    await distributed.forget_agent("alice")
    await distributed.recover("semantic_facts", Selector(agent="alice"))
    await distributed.purge(await distributed.now(), agent="alice", dry_run=True)
    await distributed.purge(await distributed.now(), agent="alice", tables=["episodic_traces"])
    await distributed.erase("alice", dry_run=False)
    monkeypatch.undo()
    touched: dict[str, set[str]] = {}
    for statement, command in log:
        for shard in set(re.findall(r"\b[a-z_]+_\d{6,}\b", command)) & every_shard:
            touched.setdefault(shard, set()).add(statement)
    elsewhere = {s for shard, sent in touched.items() if shard not in group.values() for s in sent}
    assert not elsewhere, "\n\n".join(sorted(elsewhere))
    assert {group[table] for table in TABLES} <= set(touched)  # the log was heard


def one_router_task(plan: str) -> bool:
    """A plan Citus runs as one task on one shard, with no subplan run first."""
    counts = re.findall(r"Task Count: (\d+)", plan)
    return bool(counts) and set(counts) == {"1"} and "Subplan" not in plan


async def citus_plans(
    url: str, sent: list[tuple[str, tuple[Any, ...]]], agent: str
) -> tuple[list[tuple[str, str]], int]:
    """Of the statements sent with `agent` among their values (alone, or as a group of
    one: `agent_id = ANY (%(agents)s)`): the plans of those Citus plans (reads and
    writes of distributed tables), and how many were sent to a node (search), which
    must name only the agent's shard group there."""
    conn = await asyncpg.connect(url)
    try:
        await init_connection(conn)  # the vector codec ethos's connections have
        group = await conn.fetchrow(SHARD_GROUPS.text, agent)
        plans, on_shards = [], 0
        for query, args in sent:
            verb = query.lstrip().split(None, 1)[0].upper()
            named = any(value in (agent, [agent]) for value in args)  # alone, or as a group
            if not named or verb not in ("SELECT", "WITH", "UPDATE"):
                continue
            shards = set(re.findall(r"\b[a-z_]+_\d{6,}\b", query))
            if shards:  # sent to a node, against the agent's shard group there
                assert shards <= set(group["names"]), query
                on_shards += 1
                continue
            plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {query}", *args))
            if "Citus" in plan:  # not the coordinator's own tables, the catalogue
                plans.append((query, plan))
        return plans, on_shards
    finally:
        await conn.close()
