"""A model of isolation over several agents: random operations of the Python door, each
naming one agent (add, recall, update, feedback, forget, recover, an item put, that
agent's merge and sweep, and the same calls naming one agent with another's memory),
each followed by the LTP flush of what it recorded, with the daemon's merges and sweeps
of every agent interleaved. Nothing one agent's operation does changes another agent's
rows: every row of the others, in every table keyed by agent, is the same before and
after the step."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import asyncpg
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, rule, run_state_machine_as_test

from ethos.domain.errors import EthosError
from ethos.services.engine import Engine, ItemPut
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.machines import TIMEOUT, Counts, Loop, budget

T = TypeVar("T")
BUDGET = budget(examples=10, steps=30)

AGENTS = st.sampled_from(["a", "b", "c"])
KINDS = st.sampled_from(["episode", "fact"])
TEXTS = st.sampled_from(
    ["Ada drinks green tea", "ada drinks green tea", "Bob rides a bicycle", "ok thanks"]
)
# Every table whose rows belong to one agent.
TABLES = [
    "episodic_traces", "semantic_facts", "memory_vectors", "memory_links", "memory_revisions",
    "agent_policies", "agent_text_stats", "lexeme_stats", "agent_vector_stats",
    "episodic_traces_due", "semantic_facts_due", "memory_vectors_due",
]  # fmt: skip
SNAPSHOT = " UNION ALL ".join(
    f"SELECT '{t}' AS t, to_jsonb(r)::text AS row FROM {t} AS r"
    " WHERE r.agent_id <> $1 AND r.agent_id = ANY($2::text[])"
    for t in TABLES
)


class AgentsDoor(RuleBasedStateMachine):
    engine: Engine
    conn: asyncpg.Connection
    loop: Loop
    counts: Counts
    examples: Iterator[int]
    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        self.tag = f"e{next(self.examples)}"
        self.counts.examples += 1

    def _agent(self, name: str) -> str:
        return f"{name}_{self.tag}"

    async def _snapshot(self, agent: str) -> list[tuple[str, str]]:
        others = [self._agent(name) for name in "abc"]
        rows = await self.conn.fetch(SNAPSHOT + " ORDER BY 1, 2", agent, others)
        return [(r["t"], r["row"]) for r in rows]

    def _as(self, agent: str, work: Awaitable[T], *, refused: bool = False) -> T | None:
        """`work`, an operation of `agent`, and the flush of the retrievals it recorded:
        the other agents' rows unchanged. refused: it names another's memory, so an
        error (or nothing done) is the right answer."""
        self.counts.steps += 1

        async def step() -> T | None:
            before = await self._snapshot(agent)
            try:
                done = await work
            except EthosError:
                if not refused:
                    raise
                done = None
            await self.engine.ltp.drain(10)
            assert await self._snapshot(agent) == before
            return done

        return self.loop.run(step())

    @rule(target=memories, name=AGENTS, kind=KINDS, text=TEXTS)
    def add(self, name: str, kind: str, text: str) -> tuple[str, str, uuid.UUID]:
        agent = self._agent(name)
        added = self._as(agent, self.engine.add(kind, agent_id=agent, content=text))
        assert added is not None
        return agent, kind, added

    @rule(name=AGENTS, key=st.sampled_from(["monday", "tuesday"]), text=TEXTS)
    def put_item(self, name: str, key: str, text: str) -> None:
        agent = self._agent(name)
        put = ItemPut(agent, key, {"text": text}, content=text, policy="permanent")
        self._as(agent, self.engine.put_items([put]))

    @rule(name=AGENTS, query=TEXTS)
    def recall(self, name: str, query: str) -> None:
        agent = self._agent(name)
        self._as(agent, self.engine.recall(agent, query, k=5))

    @rule(memory=memories, text=TEXTS)
    def update(self, memory: tuple[str, str, uuid.UUID], text: str) -> None:
        agent, kind, memory_id = memory
        self._as(agent, self.engine.update(kind, memory_id, content=text), refused=True)

    @rule(memory=memories, verdict=st.sampled_from(["useful", "wrong"]), name=AGENTS)
    def feedback(self, memory: tuple[str, str, uuid.UUID], verdict: str, name: str) -> None:
        """Feedback naming an agent: its own memory's, or another's (refused)."""
        owner, kind, memory_id = memory
        agent = self._agent(name)
        work = self.engine.feedback(kind, [memory_id], verdict, agent=agent)
        self._as(agent, work, refused=agent != owner)

    @rule(memory=memories, name=AGENTS)
    def forget(self, memory: tuple[str, str, uuid.UUID], name: str) -> None:
        _, kind, memory_id = memory
        agent = self._agent(name)
        self._as(agent, self.engine.forget(kind, [memory_id], agent=agent), refused=True)

    @rule(memory=memories, name=AGENTS)
    def recover(self, memory: tuple[str, str, uuid.UUID], name: str) -> None:
        _, kind, memory_id = memory
        agent = self._agent(name)
        work = self.engine.recover(kind, Selector(ids=(memory_id,), agent=agent))
        self._as(agent, work, refused=True)

    @rule(name=AGENTS)
    def merge_one(self, name: str) -> None:
        agent = self._agent(name)
        self._as(agent, self.engine.merge(agent=agent, trigger="daemon"))

    @rule(name=AGENTS, later=st.sampled_from([0, 30]))
    def sweep_one(self, name: str, later: int) -> None:
        agent = self._agent(name)
        moment = datetime.now(UTC) + timedelta(days=later) if later else None
        self._as(agent, self.engine.sweep(agent=agent, now=moment, trigger="daemon"))

    @rule()
    def merge(self) -> None:
        """The daemon's merge of every agent (changes any agent's: not compared)."""
        self.counts.steps += 1
        self.loop.run(self.engine.merge(near=self.engine.settings.dedup.near, trigger="daemon"))

    @rule()
    def sweep(self) -> None:
        self.counts.steps += 1
        self.loop.run(self.engine.sweep(trigger="daemon"))


@pytest.mark.timeout(TIMEOUT)
def test_no_agents_operation_changes_another_agents_memories(
    database_url: str, record_property: Callable[[str, object], None]
) -> None:
    counts = Counts("Several agents (Engine: one agent's step, the others' rows)")
    settings = Settings(database=DatabaseSettings(url=database_url))
    loop = Loop()
    engine = Engine(settings)
    loop.run(engine.__aenter__())
    conn: Any = loop.run(asyncpg.connect(database_url))
    started = time.monotonic()
    try:
        machine = type(
            "AgentsMachine",
            (AgentsDoor,),
            {"engine": engine, "conn": conn, "loop": loop, "counts": counts,
             "examples": itertools.count()},
        )  # fmt: skip
        run_state_machine_as_test(machine, settings=BUDGET)
    finally:
        loop.run(conn.close())
        loop.run(engine.close())
        loop.close()
    counts.report(time.monotonic() - started, record_property)
    assert counts.steps >= BUDGET.max_examples * 5  # the machine ran, not just started
