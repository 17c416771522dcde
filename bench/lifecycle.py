"""Does ethos forget the right things? LoCoMo's conversations replayed as an agent uses
ethos, then its questions asked of what is left.

    python bench/lifecycle.py [--data ../shared/data/locomo]
    python bench/lifecycle.py --cost-rows 1000000   # what automatic importance costs

Each conversation is one agent (bench/locomo.py reads them). At the start of each
session, at its time, a sweep; each turn, at its time, is added as an episode with
add-with-recall: the turn's text first recalls the agent's 5 best memories, which are
reinforced (what the conversation returns to lives longer), then it is stored. After the
last session, a sweep one hour later, and the questions (categories 1-4) asked then by
text recall, k = 10, recording nothing.

Reported per conversation and overall: turns pruned, evidence turns (those a question
asks about) kept, selectivity (the kept share of evidence ÷ the kept share of turns;
1.0 is blind), evidence r@10 after forgetting, and its ratio to r@10 with nothing
forgotten (policy `permanent`, no sweeps: recall ranks every turn). For automatic
importance on (the shipped defaults), automatic importance off, every agent on
`long_term`, and nothing forgotten, each on a database of its own. Text recall only: no
embedding model is needed. `--cost-rows N` measures what automatic importance costs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import asyncpg
from locomo import Conversation, load

from bench import WORDS_SQL, fresh_database, percentile
from ethos import db, logs
from ethos.engine import Engine
from ethos.settings import DatabaseSettings, ImportanceSettings, LoggingSettings, Settings

K = 10
RECALLED = 5  # what each turn recalls and reinforces
LIVE = "SELECT id FROM episodic_traces WHERE agent_id = $1 AND NOT pruned"


@dataclass
class Outcome:
    """One conversation under one configuration."""

    turns: int
    pruned: int
    evidence: int
    evidence_kept: int
    recall10: list[float] = field(default_factory=list)

    @property
    def selectivity(self) -> float:
        kept = (self.turns - self.pruned) / self.turns
        return (self.evidence_kept / self.evidence) / kept if kept else float("nan")


@dataclass(frozen=True)
class Config:
    name: str
    auto: bool = True
    policy: str | None = None  # every agent's
    sweeps: bool = True


CONFIGS = (
    Config("automatic importance"),
    Config("automatic importance off", auto=False),
    Config("long_term", policy="long_term"),
    Config("nothing forgotten", policy="permanent", sweeps=False),
)


async def replay(url: str, config: Config, conversation: Conversation) -> Outcome:
    settings = Settings(
        database=DatabaseSettings(url=url), importance=ImportanceSettings(auto=config.auto)
    )
    ids: dict[str, str] = {}
    agent = conversation.name
    async with Engine(settings) as engine:
        if config.policy:
            await engine.assign_policy(agent, config.policy)
        for start, dia_ids in conversation.sessions:
            if config.sweeps:
                await engine.ltp.drain(30)
                await engine.sweep(now=start, agent=agent)
            for dia_id in dia_ids:
                text, at = conversation.turns[dia_id]
                memory = await engine.add(
                    "episode", agent_id=agent, content=text, created_at=at, recall=RECALLED
                )
                ids[str(memory)] = dia_id
        asked_at = conversation.sessions[-1][0] + timedelta(days=1)
        await engine.ltp.drain(30)
        if config.sweeps:
            await engine.sweep(now=asked_at, agent=agent)
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(LIVE, agent)
        finally:
            await conn.close()
        live = {ids[str(r["id"])] for r in rows}
        evidence = conversation.evidence
        outcome = Outcome(
            len(conversation.turns), len(conversation.turns) - len(live), len(evidence),
            len(evidence & live),
        )  # fmt: skip
        for question, _, wanted in conversation.questions:
            hits = await engine.recall(
                agent, question, k=K, tables=["episode"], now=asked_at, record=False
            )
            found = {ids.get(str(h.id)) for h in hits}
            outcome.recall10.append(len(wanted & found) / len(wanted))
    return outcome


def row(name: str, outcomes: list[Outcome], unpruned: list[Outcome] | None) -> str:
    turns = sum(o.turns for o in outcomes)
    pruned = sum(o.pruned for o in outcomes)
    evidence = sum(o.evidence for o in outcomes)
    kept = sum(o.evidence_kept for o in outcomes)
    total = Outcome(turns, pruned, evidence, kept)
    r10 = statistics.fmean(r for o in outcomes for r in o.recall10)
    cells = [
        f"{pruned:,} of {turns:,} ({pruned / turns:.0%})",
        f"{kept:,} of {evidence:,} ({kept / evidence:.0%})",
        f"{total.selectivity:.2f}",
        f"{r10:.3f}",
    ]
    if unpruned is not None:
        base = statistics.fmean(r for o in unpruned for r in o.recall10)
        cells.append(f"{r10 / base:.2f}x")
    else:
        cells.append("")
    return f"| {name} | " + " | ".join(cells) + " |"


HEADER = (
    "| | turns pruned | evidence turns kept | selectivity | r@10 after forgetting"
    " | vs nothing pruned |\n| --- | --- | --- | --- | --- | --- |"
)


BULK = f"""
INSERT INTO episodic_traces (agent_id, content, created_at)
SELECT 'agent-' || g % 10, 'memory ' || g || ' ' || {WORDS_SQL},
       now() - interval '10 days' + g * interval '1 second'
FROM generate_series(1, $1) AS g
"""


async def cost(urls: dict[bool, str], rows: int, adds: int, rounds: int = 2) -> None:
    """What automatic importance costs, off against on in one run, each on a database of
    its own: a bulk SQL insert of `rows` memories that name no policy into empty tables
    (a first load: every word new to its agent) and another on top of it (every word
    looked up), best of `rounds` alternating; then single adds to an agent of `rows` / 10
    memories, alternating between the two databases, and their p50."""
    timings: dict[tuple[bool, str], list[float]] = {}
    for auto in (False, True) * rounds:
        settings = Settings(
            database=DatabaseSettings(url=urls[auto]), importance=ImportanceSettings(auto=auto)
        )
        async with Engine(settings):  # writes its settings into the database
            pass
        conn = await asyncpg.connect(urls[auto])
        try:
            await conn.execute("TRUNCATE episodic_traces, memory_vectors, semantic_facts")
            await conn.execute("VACUUM ANALYZE lexeme_stats, agent_text_stats")
            for load in ("first", "on top"):
                started = time.perf_counter()
                await conn.execute(BULK, rows)
                timings.setdefault((auto, load), []).append(time.perf_counter() - started)
        finally:
            await conn.close()
    for load in ("first", "on top"):
        off, on = min(timings[False, load]), min(timings[True, load])
        print(
            f"bulk SQL insert of {rows:,} memories naming no policy, {load} (best of {rounds}):"
            f" automatic importance off {off:.1f} s, on {on:.1f} s: {on / off:.2f}x"
            " (goal <= 1.2x)"
        )
    latencies: dict[bool, list[float]] = {False: [], True: []}
    engines = {
        auto: Engine(
            Settings(
                database=DatabaseSettings(url=urls[auto]),
                importance=ImportanceSettings(auto=auto),
            )
        )
        for auto in (False, True)
    }
    async with engines[False] as off_engine, engines[True] as on_engine:
        for i in range(2 * adds):
            auto = i % 2 == 1
            engine = on_engine if auto else off_engine
            started = time.perf_counter()
            await engine.add("episode", agent_id="agent-1", content=f"memory {i} of a day")
            latencies[auto].append((time.perf_counter() - started) * 1000)
    p_off, p_on = percentile(latencies[False], 0.5), percentile(latencies[True], 0.5)
    print(
        f"add p50 over {adds} adds each, alternating: off {p_off:.2f} ms, on {p_on:.2f} ms:"
        f" {p_on / p_off:.2f}x (goal <= 1.1x)"
    )


async def main(args: argparse.Namespace, conversations: list[Conversation]) -> None:
    logs.configure(LoggingSettings(level="warning"))
    if args.cost_rows:
        urls = {}
        for auto in (False, True):
            url = await fresh_database(Path.cwd() / args.data_dir, f"ethos_cost_{auto}".lower())
            await asyncio.to_thread(db.migrate, Settings(database=DatabaseSettings(url=url)), url)
            urls[auto] = url
        await cost(urls, args.cost_rows, args.cost_adds, args.cost_rounds)
        return
    print(f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations):,}"
          f" turns, {sum(len(c.questions) for c in conversations)} questions")  # fmt: skip
    results: dict[str, list[Outcome]] = {}
    for config in CONFIGS:
        url = await fresh_database(Path.cwd() / args.data_dir, "ethos_lifecycle")
        await asyncio.to_thread(db.migrate, Settings(database=DatabaseSettings(url=url)), url)
        started = time.perf_counter()
        results[config.name] = [await replay(url, config, c) for c in conversations]
        print(f"{config.name}: replayed in {time.perf_counter() - started:.0f} s", flush=True)
    unpruned = results["nothing forgotten"]
    print("\nPer conversation (automatic importance):\n")
    print(HEADER)
    for c, outcome, base in zip(conversations, results["automatic importance"], unpruned,
                                strict=True):  # fmt: skip
        print(row(c.name, [outcome], [base]))
    print("\nOverall:\n")
    print(HEADER)
    for name, outcomes in results.items():
        print(row(name, outcomes, unpruned))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo")
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    parser.add_argument(
        "--cost-rows",
        type=int,
        default=0,
        help="instead: what automatic importance costs, at this many rows",
    )
    parser.add_argument("--cost-adds", type=int, default=300)
    parser.add_argument("--cost-rounds", type=int, default=2, help="bulk inserts: best of")
    arguments = parser.parse_args()
    asyncio.run(main(arguments, [load(p) for p in sorted(Path(arguments.data).glob("*.json"))]))
