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

`--hybrid` adds rows where the engine has an embedder (multilingual-e5-small, the
recall bench's cached vectors, bench/recall_quality.py; needs the bench extra): each
turn is stored with its vector, and the questions are asked both by text and by hybrid
recall (each against the same recall with nothing forgotten). What each turn reinforces
is found by text recall (the check: the same figures as text only) or by hybrid recall
(the turn's text and its vector); `--recalled` and `--floors` add hybrid rows that
reinforce k hits, or only those whose fused relevance (0..1) clears a floor. A turn's
vector lives, is pruned and is recovered with its turn (migration 0031).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
from locomo import Conversation, load_all

from bench import WORDS_SQL, fresh_database, percentile
from ethos import logs
from ethos.domain.tables import table_spec
from ethos.services.embedding import Embedder
from ethos.services.engine import Engine, migrate
from ethos.services.retrieval import Hit
from ethos.settings import DatabaseSettings, ImportanceSettings, LoggingSettings, Settings

K = 10
LASTING = timedelta(days=3652)  # "outlives 10 years with no further use"
RECALLED = 5  # what each turn recalls and reinforces
LIVE = "SELECT id FROM episodic_traces WHERE agent_id = $1 AND NOT pruned"


@dataclass
class Outcome:
    """One conversation under one configuration."""

    turns: int
    pruned: int
    evidence: int
    evidence_kept: int
    lasting: int = 0  # live turns that would outlive LASTING with no further use
    recall10: list[float] = field(default_factory=list)
    hybrid10: list[float] = field(default_factory=list)  # the questions by hybrid recall

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
    # With an embedder (--hybrid): what each turn reinforces is found by "text" or
    # "hybrid" recall; None: no embedder, add-with-recall by text.
    reinforce: str | None = None
    recalled: int = RECALLED
    floor: float | None = None  # reinforce only hits whose fused relevance clears it
    particularity: float | None = None  # [importance] auto_particularity; None: default


CONFIGS = (
    Config("automatic importance"),
    Config("automatic importance off", auto=False),
    Config("long_term", policy="long_term"),
    Config("nothing forgotten", policy="permanent", sweeps=False),
)
HYBRID_CONFIGS = (
    Config("automatic importance, vectors, reinforced by text", reinforce="text"),
    Config("the same, words only (auto_particularity 0)", reinforce="text", particularity=0),
    Config("automatic importance, reinforced by hybrid", reinforce="hybrid"),
    Config("automatic importance off, reinforced by hybrid", auto=False, reinforce="hybrid"),
    Config("nothing forgotten, reinforced by hybrid", policy="permanent", sweeps=False,
           reinforce="hybrid"),
)  # fmt: skip


async def sweep(engine: Engine, agent: str, now: datetime) -> None:
    await engine.ltp.drain(30)
    await engine.sweep(now=now, agent=agent)


async def looked_up(
    engine: Engine, embedder: Embedder | None, agent: str, query: str, k: int,
    tables: list[str] | None, at: datetime,
) -> list[Hit]:  # fmt: skip
    """What `engine` recalls with `embedder` (None: by text alone), recording nothing: an
    engine of its own on the same store (the settings name no provider)."""
    async with Engine(
        engine.settings, store=engine.store, embedder=embedder, check_settings=False
    ) as asking:
        return await asking.recall(agent, query, k, tables=tables, now=at, record=False)


async def add(engine: Engine, config: Config, agent: str, text: str, at: datetime) -> uuid.UUID:
    """A turn added with add-with-recall (what it recalls reinforced, then it is stored);
    for text reinforcement beside vectors, or a floor, the same in three steps."""
    if config.reinforce is None or (config.reinforce == "hybrid" and config.floor is None):
        return await engine.add(
            "episode", agent_id=agent, content=text, created_at=at, recall=config.recalled
        )
    embedder = engine.embedder if config.reinforce == "hybrid" else None
    hits = await looked_up(engine, embedder, agent, text, config.recalled, None, at)
    floor = config.floor or 0.0
    for table in {h.table for h in hits}:
        chosen = [h.id for h in hits if h.table == table and (h.relevance or 0.0) >= floor]
        if chosen:
            await engine.ltp.record(table_spec(table), chosen, at, "surfaced")
    return await engine.add("episode", agent_id=agent, content=text, created_at=at)


async def replay(
    url: str, config: Config, conversation: Conversation, embedder: Embedder | None
) -> Outcome:
    importance = ImportanceSettings(auto=config.auto)
    if config.particularity is not None:
        importance.auto_particularity = config.particularity
    settings = Settings(database=DatabaseSettings(url=url), importance=importance)
    ids: dict[str, str] = {}
    agent = conversation.name
    embedder = embedder if config.reinforce else None
    # The config's importance into the database: an engine only says when it differs.
    async with Engine(settings, embedder=embedder, check_settings=False) as engine:
        await engine.apply_settings()
        if config.policy:
            await engine.assign_policy(agent, config.policy)
        for start, dia_ids in conversation.sessions:
            if config.sweeps:
                await sweep(engine, agent, start)
            for dia_id in dia_ids:
                text, at = conversation.turns[dia_id]
                memory = await add(engine, config, agent, text, at)
                ids[str(memory)] = dia_id
        asked_at = conversation.sessions[-1][0] + timedelta(days=1)
        await engine.ltp.drain(30)
        if config.sweeps:
            await sweep(engine, agent, asked_at)
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(LIVE, agent)
        finally:
            await conn.close()
        live = {ids[str(r["id"])] for r in rows}
        evidence = conversation.evidence
        lasting = 0
        for r in rows:  # explain's forecast, as an operator reads it
            prunes_at = (await engine.explain("episode", r["id"], now=asked_at)).prunes_at
            if prunes_at is None or prunes_at > asked_at + LASTING:
                lasting += 1
        outcome = Outcome(
            len(conversation.turns), len(conversation.turns) - len(live), len(evidence),
            len(evidence & live), lasting,
        )  # fmt: skip
        for question, _, wanted in conversation.questions:
            # by text, and with vectors by hybrid recall
            asked: list[tuple[list[float], Embedder | None]] = [(outcome.recall10, None)]
            if embedder is not None:
                asked.append((outcome.hybrid10, embedder))
            for scores, embedded in asked:
                hits = await looked_up(engine, embedded, agent, question, K, ["episode"], asked_at)
                found = {ids.get(str(h.id)) for h in hits}
                scores.append(len(wanted & found) / len(wanted))
    return outcome


def row(
    name: str,
    outcomes: list[Outcome],
    unpruned: list[Outcome] | None,
    hybrid: list[Outcome] | None = None,
) -> str:
    """A table row; with `hybrid` (the nothing-forgotten outcomes of a replay with
    vectors), also r@10 by hybrid recall and its ratio to that replay's."""
    turns = sum(o.turns for o in outcomes)
    pruned = sum(o.pruned for o in outcomes)
    evidence = sum(o.evidence for o in outcomes)
    kept = sum(o.evidence_kept for o in outcomes)
    lasting = sum(o.lasting for o in outcomes)
    total = Outcome(turns, pruned, evidence, kept)
    r10 = statistics.fmean(r for o in outcomes for r in o.recall10)
    cells = [
        f"{pruned:,} of {turns:,} ({pruned / turns:.0%})",
        f"{kept:,} of {evidence:,} ({kept / evidence:.0%})",
        f"{total.selectivity:.2f}",
        f"{lasting:,} ({lasting / max(turns - pruned, 1):.0%})",
        f"{r10:.3f}",
    ]
    if unpruned is not None:
        base = statistics.fmean(r for o in unpruned for r in o.recall10)
        cells.append(f"{r10 / base:.2f}x")
    else:
        cells.append("")
    if hybrid is not None:
        if outcomes[0].hybrid10:
            h10 = statistics.fmean(r for o in outcomes for r in o.hybrid10)
            base = statistics.fmean(r for o in hybrid for r in o.hybrid10)
            cells += [f"{h10:.3f}", f"{h10 / base:.2f}x"]
        else:
            cells += ["", ""]
    return f"| {name} | " + " | ".join(cells) + " |"


HEADER = (
    "| | turns pruned | evidence turns kept | selectivity | live past 10 years"
    " | r@10 after forgetting | vs nothing pruned |\n| --- | --- | --- | --- | --- | --- | --- |"
)
HYBRID_HEADER = (
    "| | turns pruned | evidence turns kept | selectivity | live past 10 years | r@10 text"
    " | vs nothing pruned | r@10 hybrid | vs nothing pruned (hybrid) |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def vectors(conversations: list[Conversation]) -> Embedder:
    """The recall bench's cached e5 vectors of every turn (as a passage and as a
    query) and question, as an ethos Embedder."""
    from recall_quality import Vectors

    cache = Vectors()
    for c in conversations:
        texts = [c.turns[d][0] for d in sorted(c.turns, key=lambda d: c.turns[d][1])]
        cache.get(texts, "passage")
        cache.get(texts, "query")
        cache.get([q for q, _, _ in c.questions], "query")

    async def embed(texts: Sequence[str], role: str) -> list[list[float]]:
        return await cache.embedder(texts, "query" if role == "query" else "passage")

    return embed


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
        await migrate(settings, urls[auto])  # its settings into the database
        conn = await asyncpg.connect(urls[auto])
        try:
            await conn.execute(  # TRUNCATE runs no trigger: the statistics anew
                "TRUNCATE episodic_traces, memory_vectors, semantic_facts;"
                " SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()"
            )
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
    await vector_cost(urls, adds)


async def vector_cost(urls: dict[bool, str], adds: int) -> None:
    """Adds of episodes with their vectors (random unit vectors, no provider's time),
    the vector tiering its episode (auto_particularity 2, on the second database) or not
    (0, on the first), alternating: their p50."""
    rng = random.Random(5)

    async def embedder(texts: Sequence[str], role: str) -> list[list[float]]:
        vectors = [[rng.gauss(0, 1) for _ in range(384)] for _ in texts]
        return [[x / math.sqrt(sum(y * y for y in v)) for x in v] for v in vectors]

    latencies: dict[float, list[float]] = {0.0: [], 2.0: []}
    engines = {
        k: Engine(
            Settings(database=DatabaseSettings(url=urls[k > 0]),
                     importance=ImportanceSettings(auto_particularity=k)),
            embedder=embedder,
        )
        for k in latencies
    }  # fmt: skip
    async with engines[0.0] as words, engines[2.0] as vectors:
        for i in range(2 * adds):
            k = 2.0 if i % 2 else 0.0
            engine = vectors if k else words
            started = time.perf_counter()
            await engine.add("episode", agent_id="agent-2", content=f"memory {i} of a night")
            latencies[k].append((time.perf_counter() - started) * 1000)
    p_off, p_on = percentile(latencies[0.0], 0.5), percentile(latencies[2.0], 0.5)
    print(
        f"add with a vector, p50 over {adds} adds each, alternating: words only {p_off:.2f}"
        f" ms, the vector tiering too {p_on:.2f} ms: {p_on / p_off:.2f}x"
    )


async def main(args: argparse.Namespace, conversations: list[Conversation]) -> None:
    logs.configure(LoggingSettings(level="warning"))
    if args.cost_rows:
        urls = {}
        for auto in (False, True):
            url = await fresh_database(Path.cwd() / args.data_dir, f"ethos_cost_{auto}".lower())
            await migrate(Settings(database=DatabaseSettings(url=url)), url)
            urls[auto] = url
        await cost(urls, args.cost_rows, args.cost_adds, args.cost_rounds)
        return
    print(f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations):,}"
          f" turns, {sum(len(c.questions) for c in conversations)} questions")  # fmt: skip
    configs = [] if args.hybrid_only else list(CONFIGS)
    embedder = None
    if args.hybrid or args.hybrid_only:
        embedder = vectors(conversations)
        configs += HYBRID_CONFIGS
        for recalled in args.recalled:
            configs.append(Config(f"automatic importance, hybrid, recall={recalled}",
                                  reinforce="hybrid", recalled=recalled))  # fmt: skip
        for k in args.particularity:
            configs.append(Config(f"automatic importance, vectors, text, particularity {k}",
                                  reinforce="text", particularity=k))  # fmt: skip
        for floor in args.floors:
            configs.append(Config(f"automatic importance, hybrid, floor {floor}",
                                  reinforce="hybrid", floor=floor))  # fmt: skip
    results: dict[str, list[Outcome]] = {}
    for config in configs:
        url = await fresh_database(Path.cwd() / args.data_dir, "ethos_lifecycle")
        await migrate(Settings(database=DatabaseSettings(url=url)), url)
        started = time.perf_counter()
        results[config.name] = [await replay(url, config, c, embedder) for c in conversations]
        print(f"{config.name}: replayed in {time.perf_counter() - started:.0f} s", flush=True)
    unpruned = results.get("nothing forgotten")
    if unpruned is not None:
        print("\nPer conversation (automatic importance):\n")
        print(HEADER)
        for c, outcome, base in zip(conversations, results["automatic importance"], unpruned,
                                    strict=True):  # fmt: skip
            print(row(c.name, [outcome], [base]))
    hybrid = results.get("nothing forgotten, reinforced by hybrid")
    print("\nOverall:\n")
    print(HEADER if hybrid is None else HYBRID_HEADER)
    for name, outcomes in results.items():
        print(row(name, outcomes, unpruned or hybrid, hybrid))


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
    parser.add_argument("--hybrid", action="store_true",
                        help="also the rows with an embedder (e5; the bench extra)")  # fmt: skip
    parser.add_argument("--hybrid-only", action="store_true", help="only those rows")
    parser.add_argument("--recalled", type=int, nargs="*", default=[],
                        help="with --hybrid: also reinforcing this many hits")  # fmt: skip
    parser.add_argument("--floors", type=float, nargs="*", default=[],
                        help="with --hybrid: also reinforcing only hits of at least this"
                        " fused relevance")  # fmt: skip
    parser.add_argument("--particularity", type=float, nargs="*", default=[],
                        help="with --hybrid: also with this auto_particularity")  # fmt: skip
    arguments = parser.parse_args()
    asyncio.run(main(arguments, load_all(arguments.data)))
