"""ethos on a Citus cluster beside ethos on the cluster's coordinator alone, the same rows.

    python bench/citus.py [--rows 200000] [--vectors 20000] [--agents 100] [--queries 400]

Two databases on the cluster `make citus` starts (CITUS_URL, else /tmp/ethos-citus/url):
`bench_citus_single`, where ethos's tables stay on the coordinator (one PostgreSQL 15
server, as a single-server deployment), and `bench_citus_distributed`, the same load
(the same seed), then distributed by agent over the two workers (tests/citus/cluster.py).
Per-agent text recall and vector search take turns query by query on the two, and the
p50/p99 of each and their ratio are printed. Issue 40's goal: per-agent recall p50 within
1.5x of the single server. Then the same sweeps on both: seconds, rows, and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg

# The cluster's helpers are the tests': the repository root on the path, after this folder.
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from bench import T0, alternate, load, percentile, words
from ethos import logs
from ethos.services.engine import Engine, migrate
from ethos.services.sweep import Mode
from ethos.settings import DatabaseSettings, LoggingSettings, Settings
from tests.citus.cluster import (
    configured_url,
    create_cluster_database,
    distribute,
    drop_cluster_database,
)

SIDES = ("single", "distributed")


async def prepared(url: str, name: str, args: argparse.Namespace) -> tuple[str, float]:
    """A fresh database `name` on the cluster, migrated and loaded; distributed for the
    distributed side. Its URL and the seconds the load (and distribution) took."""
    await drop_cluster_database(url, name)
    database = await create_cluster_database(url, name)
    settings = Settings(database=DatabaseSettings(url=database))
    await migrate(settings, database)
    conn = await asyncpg.connect(database)
    started = time.perf_counter()
    try:
        await conn.execute("SELECT setseed(0.25)")  # the same rows on both sides
        await load(conn, args.rows, args.vectors, settings.embedding.dimension, args.agents)
        async with Engine(settings, url=database, check_settings=False) as engine:
            await engine.store.build_vector_index()
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()
    if name.endswith("distributed"):
        await distribute(database)
    return database, time.perf_counter() - started


async def main(args: argparse.Namespace) -> None:
    logs.configure(LoggingSettings(level="error"))
    url, source = configured_url()
    if url is None:
        raise SystemExit(f"no Citus cluster: {source}; `make citus` starts one (as root)")
    urls = {}
    for side in SIDES:
        urls[side], elapsed = await prepared(url, f"bench_citus_{side}", args)
        print(f"  {side}: {args.rows:,} rows ({args.vectors:,} vectors) over {args.agents}"
              f" agents, loaded{' and distributed' if side == 'distributed' else ''}"
              f" in {elapsed:.1f} s")  # fmt: skip
    conn = await asyncpg.connect(urls["single"])
    try:
        centres = [r[0] for r in await conn.fetch("SELECT centre FROM bench_topics ORDER BY k")]
    finally:
        await conn.close()
    rng = random.Random(7)
    queries = [
        (f"agent-{rng.randrange(args.agents)}", words(rng, 3), rng.choice(centres))
        for _ in range(args.queries)
    ]
    at = T0 + timedelta(days=1)
    times: dict[tuple[str, str], list[float]] = {
        (kind, side): [] for kind in ("recall", "nearest") for side in SIDES
    }
    async with contextlib.AsyncExitStack() as stack:
        engines = {
            side: await stack.enter_async_context(
                Engine(Settings(database=DatabaseSettings(url=urls[side])), url=urls[side],
                       check_settings=False)
            )
            for side in SIDES
        }  # fmt: skip
        # Warm the caches and the connections: every agent's once (on the cluster, each
        # shard group's statements are planned once a connection), then 50 queries.
        warm = [(f"agent-{a}", words(rng, 3), rng.choice(centres)) for a in range(args.agents)]
        for agent, text, centre in warm + queries[:50]:
            for engine in engines.values():
                await engine.recall(agent, text, now=at, record=False)
                await engine.nearest(agent, centre, now=at, record=False)
        for i, (agent, text, centre) in enumerate(queries):
            order = SIDES if alternate(i) else SIDES[::-1]
            for side in order:
                engine = engines[side]
                started = time.perf_counter()
                await engine.recall(agent, text, now=at, record=False)
                middle = time.perf_counter()
                await engine.nearest(agent, centre, now=at, record=False)
                ended = time.perf_counter()
                times["recall", side].append((middle - started) * 1000)
                times["nearest", side].append((ended - middle) * 1000)
        print(f"\nper-agent search, {args.queries} queries, k=10, the sides in turn"
              " (ms; distributed / single)")  # fmt: skip
        print(f"  {'':<22}{'single':>10}{'distributed':>13}{'ratio':>8}   goal")
        for kind, label in (("recall", "text recall"), ("nearest", "vector search")):
            for q, name in ((0.5, "p50"), (0.99, "p99")):
                one, many = (percentile(times[kind, side], q) for side in SIDES)
                goal = "<= 1.5x" if kind == "recall" and name == "p50" else ""
                print(f"  {label + ' ' + name:<22}{one:>10.2f}{many:>13.2f}"
                      f"{many / one:>7.2f}x   {goal}")  # fmt: skip
        await sweeps(engines, at)


async def sweeps(engines: dict[str, Engine], at: datetime) -> None:
    """The sweeps of the same rows at the same moments on both sides: the first after
    the load (every row due), a full one an hour on, a due one 15 minutes after that."""
    parts = await engines["distributed"].store.sweep_parts(None)
    nodes = Counter(part.node for part in parts)
    print(
        "\nsweeps (distributed: "
        + ", ".join(f"{n} shard groups on {node}" for node, n in sorted(nodes.items()))
        + ")"
    )
    print(f"  {'':<22}{'single':>20}{'distributed':>24}{'ratio':>8}")
    runs: tuple[tuple[str, Mode, datetime], ...] = (
        ("due, all due", "due", at),
        ("full", "full", at + timedelta(hours=1)),
        ("due, 15 min later", "due", at + timedelta(hours=1, minutes=15)),
    )
    for label, mode, moment in runs:
        seconds, rows = {}, {}
        for side in SIDES:
            started = time.perf_counter()
            report = await engines[side].sweep(now=moment, mode=mode)
            seconds[side] = time.perf_counter() - started
            rows[side] = report.totals()[0]
        cells = [f"{rows[side]:>10,} {seconds[side]:>7.2f} s" for side in SIDES]
        print(f"  {label:<22}{cells[0]:>20}{cells[1]:>24}"
              f"{seconds['distributed'] / seconds['single']:>7.2f}x")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--vectors", type=int, default=20_000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--queries", type=int, default=400)
    asyncio.run(main(parser.parse_args()))
