"""ethos's LangGraph store side by side with LangGraph's own PostgresStore (issue 39).

    python bench/peer.py [--items 100000] [--quick] [--profile] [--data-dir DIR]

One embedded PostgreSQL (default .ethos/bench-pgdata), fresh databases on it: one
migrated for ethos (AsyncEthosStore, everything on: decay, importance, text recall),
one set up by AsyncPostgresStore (psycopg 3, a pool; and a schema "flat" in it for its
exact search, below). --quick: 10,000 items; the default, 100,000. Both get the same
precomputed 384-dim vectors through their `index={"dims": 384, "embed": ...}` (a fake embed that
looks each text's vector up), the same items in 100 namespaces, the same queries. The
stores take turns in every measure (the order swapped each round), so the noise of a
shared machine falls on both alike. One table at the end: ethos, PostgresStore, the
ratio, the goal of issue 39 and whether it is met.

The load: N items less those the put rounds write, in batches of 1,000, through the
statements each store's put runs, over unnest (ethos: one INSERT of the facts, one of
their vectors, the same columns and triggers; PostgresStore: one INSERT into store, one
into store_vectors): the same rows, in a fraction of the time 100,000 puts through the
stores would take. Each store's HNSW index is dropped for the load and built again as
its own migration defines it, as a bulk load should. Then the measures, at N items:

  (a) puts: single `aput`s and `abatch`es of 100 PutOps, new items, in rounds;
  (b) bytes a memory: pg_total_relation_size (tables, indexes, TOAST) of each store's
      tables, after less before the load, over the items loaded;
  (c) vector search p50/p99 (ms), one namespace and a prefix of ten; recall@10 against
      the exact top 10 (numpy, by cosine) of the items under the prefix; against
      PostgresStore as shipped (its HNSW index, scanned before the namespace filter) and
      PostgresStore without a vector index (kind "flat": exact; a copy of its tables
      in a schema "flat" of its database);
  (d) get p50/p99 (ms) of random keys;
  (e) expired items removed: `--expired` items put with a ttl, then PostgresStore's
      sweep_ttl (a DELETE) against ethos's sweep (prunes them, recoverable) and purge
      (the hard delete).

--profile: where an EthosStore put's time goes (per-trigger times from EXPLAIN ANALYZE
of the put's statement, functions' self time from pg_stat_user_functions) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.postgres.aio import AsyncPostgresStore

from ethos import db, logs
from ethos.adapters.langgraph import KEEP, KEEP_UNTIL_TTL, AsyncEthosStore
from ethos.db.store.query import embedding_binds
from ethos.db.store.sql.items import build_put_items_query
from ethos.services.engine import migrate
from ethos.services.engine.items import TTL_KEY
from ethos.settings import DatabaseSettings, LoggingSettings, Settings

ETHOS_DB = "peer_ethos"
PEER_DB = "peer_langgraph"
DIMS = 384
NAMESPACES = 100  # ("bench", "g<0..9>", "n<0..9>"): ten groups of ten
TOPICS = 500
SPREAD = 0.5
VOCABULARY = 3000
LOAD_BATCH = 1000
PUT_BATCH = 100  # PutOps in one abatch of the put measure


def namespace(i: int) -> tuple[str, ...]:
    j = i % NAMESPACES
    return ("bench", f"g{j // 10}", f"n{j % 10}")


def text(i: int, rng: random.Random) -> str:
    """An item's text: its number (the fake embed reads it) and six words of a
    vocabulary, common words more often (ethos indexes them for text recall)."""
    words = " ".join(f"w{int(VOCABULARY * rng.random() ** 2)}" for _ in range(6))
    return f"item {i} {words}"


class Vectors:
    """Deterministic embeddings: items cluster around topics (uniform random vectors
    have no neighbourhoods); a query is a topic's centre with as much noise."""

    def __init__(self, items: int, queries: int, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        centres = rng.random((TOPICS, DIMS), dtype=np.float32) - 0.5
        topic = (np.arange(items) * 7919) % TOPICS
        self.items = centres[topic] + SPREAD * (rng.random((items, DIMS), dtype=np.float32) - 0.5)
        qtopic = rng.integers(0, TOPICS, queries)
        noise = SPREAD * (rng.random((queries, DIMS), dtype=np.float32) - 0.5)
        self.queries = centres[qtopic] + noise
        self.unit = self.items / np.linalg.norm(self.items, axis=1, keepdims=True)

    def of(self, text: str) -> list[float]:
        kind, number = text.split(" ", 2)[:2]
        rows = self.items if kind == "item" else self.queries
        return [float(x) for x in rows[int(number)]]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.of(t) for t in texts]

    def exact(self, candidates: np.ndarray, query: int, k: int = 10) -> set[int]:
        q = self.queries[query] / np.linalg.norm(self.queries[query])
        scores = self.unit[candidates] @ q
        return {int(candidates[i]) for i in np.argsort(-scores)[:k]}


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def fresh_database(data_dir: Path, name: str) -> str:
    conn = await asyncpg.connect(db.embedded_uri(data_dir, "postgres"))
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return db.embedded_uri(data_dir, name)


async def total_bytes(conn: asyncpg.Connection, schema: str = "public") -> int:
    """Every table of the schema with its indexes and TOAST."""
    value = await conn.fetchval(
        """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND c.relkind IN ('r', 'm', 'p')""",
        schema,
    )
    return int(value)


async def relation_bytes(conn: asyncpg.Connection, schema: str = "public") -> dict[str, int]:
    """Each table, index and TOAST table of the schema: its size."""
    rows = await conn.fetch(
        """SELECT c.relname, pg_relation_size(c.oid) AS size FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_class t ON t.reltoastrelid = c.oid
           WHERE (n.nspname = $1 OR t.relnamespace = $1::regnamespace)
             AND c.relkind IN ('r', 'm', 'p', 'i', 't')""",
        schema,
    )
    return {r["relname"]: int(r["size"]) for r in rows}


async def hnsw_indexes(conn: asyncpg.Connection, schema: str = "public") -> list[tuple[str, str]]:
    rows = await conn.fetch(
        """SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           JOIN pg_am a ON a.oid = c.relam
           WHERE a.amname = 'hnsw' AND c.relnamespace = $1::regnamespace""",
        schema,
    )
    return [(r["name"], r["def"]) for r in rows]


@dataclass
class Side:
    """One store under test: its name, the store, a raw connection to its database."""

    name: str
    store: BaseStore
    conn: asyncpg.Connection
    url: str
    times: dict[str, list[float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, measure: str, seconds: float, count: int = 1) -> None:
        self.times.setdefault(measure, []).append(seconds)
        self.counts[measure] = self.counts.get(measure, 0) + count

    def rate(self, measure: str) -> float:
        return self.counts[measure] / sum(self.times[measure])

    def ms(self, measure: str, share: float) -> float:
        return 1000 * percentile(self.times[measure], share)


class Items:
    """The items put so far, by number: their namespace, key, value."""

    def __init__(self, total: int, seed: int = 5) -> None:
        rng = random.Random(seed)
        self.texts = [text(i, rng) for i in range(total)]

    def op(self, i: int, ttl: float | None = None) -> PutOp:
        value = {"text": self.texts[i], "i": i}
        return PutOp(namespace(i), f"k{i}", value, ttl=ttl)


# ethos's load: the writes of its put (ethos/db/store/sql/items.py
# build_put_items_query: put and embedded) for many rows at once; the same columns, the
# same triggers, the same ethos_embed (one call a batch).
ETHOS_LOAD_FACTS = f"""
INSERT INTO semantic_facts AS m (agent_id, client_key, content, metadata, expires_at,
                                 policy, created_at, updated_at)
SELECT a, k, c, v::jsonb, now() + make_interval(secs => $5::float8 * 60),
       CASE WHEN $5 IS NULL THEN '{KEEP}' ELSE '{KEEP_UNTIL_TTL}' END, now(), now()
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(a, k, c, v)
RETURNING m.id, m.agent_id, m.client_key, m.content
"""
ETHOS_LOAD_VECTORS = """
SELECT ethos_embed('semantic_facts', array_agg(a), array_agg(i), array_agg('text'::text),
                   array_agg(e::vector), NULL, NULL)
FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(i, a, e)
"""


async def load_ethos(
    conn: asyncpg.Connection,
    items: Items,
    vectors: Vectors,
    numbers: range,
    ttl: float | None = None,
) -> None:
    """The items `numbers` (with a ttl in minutes: expiring, their value holding the ttl
    and their policy the store's for them, as its put makes them)."""
    extra = {} if ttl is None else {TTL_KEY: ttl}
    for start in range(numbers.start, numbers.stop, LOAD_BATCH):
        batch = range(start, min(start + LOAD_BATCH, numbers.stop))
        ops = [items.op(i) for i in batch]
        async with conn.transaction():
            rows = await conn.fetch(
                ETHOS_LOAD_FACTS,
                [".".join(op.namespace) for op in ops],
                [op.key for op in ops],
                [op.value["text"] for op in ops],  # type: ignore[index]
                [json.dumps({**(op.value or {}), **extra}) for op in ops],
                ttl,
            )
            number = {row["client_key"]: int(row["client_key"][1:]) for row in rows}
            await conn.execute(
                ETHOS_LOAD_VECTORS,
                [row["id"] for row in rows],
                [row["agent_id"] for row in rows],
                [str(vectors.of(items.texts[number[row["client_key"]]])) for row in rows],
            )


# PostgresStore's load: the statements of its batched put (langgraph.store.postgres
# base.py _prepare_batch_PUT_queries: one INSERT into store, one into store_vectors,
# field_name the index's field) over unnest rather than a VALUES list.
PEER_LOAD_ITEMS = """
INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
SELECT p, k, v::jsonb, now(), now(), now() + make_interval(secs => $4::float8 * 60), $4
FROM unnest($1::text[], $2::text[], $3::text[]) AS u(p, k, v)
"""
PEER_LOAD_VECTORS = """
INSERT INTO store_vectors (prefix, key, field_name, embedding, created_at, updated_at)
SELECT p, k, 'text', e::vector, now(), now()
FROM unnest($1::text[], $2::text[], $3::text[]) AS u(p, k, e)
"""


async def load_peer(
    conn: asyncpg.Connection,
    items: Items,
    vectors: Vectors,
    numbers: range,
    ttl: float | None = None,
) -> None:
    for start in range(numbers.start, numbers.stop, LOAD_BATCH):
        ops = [items.op(i) for i in range(start, min(start + LOAD_BATCH, numbers.stop))]
        prefixes = [".".join(op.namespace) for op in ops]
        keys = [op.key for op in ops]
        async with conn.transaction():
            await conn.execute(
                PEER_LOAD_ITEMS, prefixes, keys, [json.dumps(op.value) for op in ops], ttl
            )
            await conn.execute(
                PEER_LOAD_VECTORS,
                prefixes,
                keys,
                [str(vectors.of(op.value["text"])) for op in ops],  # type: ignore[index]
            )


def turns(sides: Sequence[Side], round_: int) -> Sequence[Side]:
    return sides if round_ % 2 == 0 else list(reversed(sides))


async def put_rounds(
    sides: Sequence[Side], items: Items, start: int, rounds: int, single: int, batches: int
) -> int:
    """(a) each round, each store: `single` aputs, then `batches` abatches of PUT_BATCH
    PutOps; every item new, the same items for both. Returns the next item number."""
    for r in range(rounds):
        single_items = range(start, start + single)
        batch_items = range(single_items.stop, single_items.stop + batches * PUT_BATCH)
        for side in turns(sides, r):
            for i in single_items:
                op = items.op(i)
                assert op.value is not None
                started = time.perf_counter()
                await side.store.aput(op.namespace, op.key, op.value)
                side.add("put", time.perf_counter() - started)
            for b in range(batches):
                first = batch_items.start + b * PUT_BATCH
                ops = [items.op(i) for i in range(first, first + PUT_BATCH)]
                started = time.perf_counter()
                await side.store.abatch(ops)
                side.add("put_batch", time.perf_counter() - started, len(ops))
        start = batch_items.stop
    return start


async def search_rounds(
    sides: Sequence[Side], vectors: Vectors, members: dict[tuple[str, ...], np.ndarray],
    queries: int,
) -> None:  # fmt: skip
    """(c) half the queries under one namespace, half under a group of ten; the query
    vector is the query text's (the fake embed looks it up)."""
    rng = random.Random(13)
    plan = []
    for q in range(queries):
        i = rng.randrange(NAMESPACES)
        prefix = namespace(i) if q % 2 == 0 else namespace(i)[:2]
        plan.append(("search_ns" if q % 2 == 0 else "search_group", prefix, q))
    for side in sides:  # warm each store's cache and plans alike
        for _, prefix, q in plan[:20]:
            await side.store.asearch(prefix, query=f"query {q}", limit=10)
    for r, chunk in enumerate(range(0, queries, 50)):
        for side in turns(sides, r):
            for measure, prefix, q in plan[chunk : chunk + 50]:
                started = time.perf_counter()
                found = await side.store.asearch(prefix, query=f"query {q}", limit=10)
                side.add(measure, time.perf_counter() - started)
                exact = vectors.exact(members[prefix], q)
                hits = len(exact & {int(item.key[1:]) for item in found})
                side.counts[f"{measure}_hits"] = side.counts.get(f"{measure}_hits", 0) + hits
                side.counts[f"{measure}_wanted"] = side.counts.get(f"{measure}_wanted", 0) + 10


async def get_rounds(sides: Sequence[Side], items: Items, total: int, gets: int) -> None:
    """(d) random keys of the items loaded, the same for both."""
    rng = random.Random(17)
    keys = [rng.randrange(total) for _ in range(gets)]
    for r, chunk in enumerate(range(0, gets, 50)):
        for side in turns(sides, r):
            for i in keys[chunk : chunk + 50]:
                started = time.perf_counter()
                item = await side.store.aget(namespace(i), f"k{i}")
                side.add("get", time.perf_counter() - started)
                assert item is not None and item.value["i"] == i, (side.name, i)


async def expired_rounds(
    sides: Sequence[Side], items: Items, vectors: Vectors, start: int, count: int
) -> None:
    """(e) `count` items with a ttl of 0.6 s (loaded as each store's put writes them),
    expired by the time they are removed: PostgresStore's sweep_ttl deletes them; ethos's
    sweep prunes them (recoverable; it visits only rows due), its purge deletes them."""
    ttl = 0.01  # minutes
    numbers = range(start, start + count)
    for side in sides:
        if isinstance(side.store, AsyncPostgresStore):
            await load_peer(side.conn, items, vectors, numbers, ttl)
        else:
            await load_ethos(side.conn, items, vectors, numbers, ttl)
        await side.conn.execute("VACUUM (ANALYZE)")
    await asyncio.sleep(2)
    for side in turns(sides, 0):
        if isinstance(side.store, AsyncPostgresStore):
            store = side.store
            started = time.perf_counter()
            removed = await store.sweep_ttl()
            side.add("expire", time.perf_counter() - started, removed)
        else:
            assert isinstance(side.store, AsyncEthosStore)
            engine = side.store.engine
            started = time.perf_counter()
            report = await engine.sweep()
            side.add("expire", time.perf_counter() - started, report_pruned(report))
            now = await side.conn.fetchval("SELECT now()")
            started = time.perf_counter()
            purged = await engine.purge(now + timedelta(seconds=1), now=now + timedelta(seconds=2))
            side.add("purge", time.perf_counter() - started, purged_rows(purged))


def report_pruned(report: Any) -> int:
    return int(report.totals()[2])


def purged_rows(report: Any) -> int:
    return int(sum(n for c in report.counts.values() for n in c.values()))


FLAT = "flat"  # the schema of PostgresStore's exact copy


@contextlib.asynccontextmanager
async def stores(data_dir: Path, vectors: Vectors) -> AsyncIterator[tuple[Side, Side, Side]]:
    """ethos; PostgresStore as shipped (an HNSW index over store_vectors); PostgresStore
    without one (ann_index_config kind "flat": its search is exact), in the schema FLAT
    of the same database (its connections' search_path), for search only.
    AsyncPostgresStore.setup refuses kind "flat" (langgraph-checkpoint-postgres 3.2.0
    checks the index's parameters before the migration's condition that skips it), so
    that schema is set up as shipped and its HNSW index dropped: the schema kind "flat"
    makes; the search statement does not depend on the kind."""
    index: Any = {"dims": DIMS, "embed": vectors.embed, "fields": ["text"]}
    urls = {name: await fresh_database(data_dir, name) for name in (ETHOS_DB, PEER_DB)}
    settings = Settings(database=DatabaseSettings(url=urls[ETHOS_DB]))
    await migrate(settings, urls[ETHOS_DB])
    pool: Any = {"min_size": 1, "max_size": 4}
    flat_pool: Any = {**pool, "kwargs": {"options": f"-c search_path={FLAT},public"}}
    async with (
        AsyncEthosStore(settings, index=index) as ethos,
        AsyncPostgresStore.from_conn_string(urls[PEER_DB], index=index, pool_config=pool) as peer,
        AsyncPostgresStore.from_conn_string(
            urls[PEER_DB], index=index, pool_config=flat_pool
        ) as flat,
    ):
        await peer.setup()
        conns = {name: await asyncpg.connect(url) for name, url in urls.items()}
        await conns[PEER_DB].execute(f"CREATE SCHEMA {FLAT}")
        await flat.setup()
        for name, _ in await hnsw_indexes(conns[PEER_DB], FLAT):
            await conns[PEER_DB].execute(f"DROP INDEX {name}")
        try:
            yield (
                Side("ethos", ethos, conns[ETHOS_DB], urls[ETHOS_DB]),
                Side("PostgresStore", peer, conns[PEER_DB], urls[PEER_DB]),
                Side("PostgresStore, flat", flat, conns[PEER_DB], urls[PEER_DB]),
            )
        finally:
            for conn in conns.values():
                await conn.close()


def row(label: str, ours: float, theirs: float, goal: str = "", met: bool | None = None,
        fmt: str = ",.0f") -> str:  # fmt: skip
    ratio = ours / theirs if theirs else float("inf")
    verdict = "" if met is None else ("met" if met else "NOT met")
    return (f"  {label:<40} {ours:>11{fmt}} {theirs:>13{fmt}} {ratio:>7.2f}x"
            f"   {goal:<14} {verdict}")  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    logs.configure(LoggingSettings(level="warning"))
    data_dir = Path.cwd() / args.data_dir
    total = args.items
    put_items = args.rounds * (args.single + args.batches * PUT_BATCH)
    loaded = total - put_items
    if loaded < NAMESPACES:
        raise SystemExit(f"--items {total}: fewer than the {put_items:,} the put rounds write")
    started_run = time.perf_counter()
    vectors = Vectors(total + args.expired, args.queries)
    items = Items(total + args.expired)
    async with stores(data_dir, vectors) as (ethos, peer, flat):
        sides = (ethos, peer)
        before = {side.name: await total_bytes(side.conn) for side in sides}
        parts_before = {side.name: await relation_bytes(side.conn) for side in sides}
        before[flat.name] = await total_bytes(flat.conn, FLAT)
        print(f"ethos vs LangGraph's PostgresStore: {total:,} items in {NAMESPACES} namespaces,"
              f" {DIMS}-dim vectors, one embedded server")  # fmt: skip
        dropped = {}
        for side in sides:
            dropped[side.name] = await hnsw_indexes(side.conn)
            for name, _ in dropped[side.name]:
                await side.conn.execute(f"DROP INDEX {name}")
        for side in sides:
            started = time.perf_counter()
            load = load_ethos if side is ethos else load_peer
            await load(side.conn, items, vectors, range(loaded))
            elapsed = time.perf_counter() - started
            print(f"  loaded {loaded:,} items into {side.name} in {elapsed:.1f} s"
                  f" ({loaded / elapsed:,.0f} items/s)")  # fmt: skip
        for side in sides:
            started = time.perf_counter()
            await side.conn.execute("SET maintenance_work_mem = '512MB'")
            for _, definition in dropped[side.name]:
                await side.conn.execute(definition)
            print(f"  built {side.name}'s HNSW index again in"
                  f" {time.perf_counter() - started:.1f} s")  # fmt: skip
        for side in sides:
            await side.conn.execute("VACUUM (ANALYZE)")
        print(f"  (a) puts: {args.rounds} rounds of {args.single} aputs and {args.batches}"
              f" abatches of {PUT_BATCH}, each store in turn")  # fmt: skip
        next_item = await put_rounds(sides, items, loaded, args.rounds, args.single, args.batches)
        assert next_item == total
        for table in ("store", "store_vectors"):  # PostgresStore's exact copy, all N items
            await flat.conn.execute(f"INSERT INTO {FLAT}.{table} SELECT * FROM public.{table}")
        for side in sides:
            await side.conn.execute("VACUUM (ANALYZE)")
        after = {side.name: await total_bytes(side.conn) for side in sides}
        after[flat.name] = await total_bytes(flat.conn, FLAT)
        per_item = {name: (after[name] - before[name]) / total for name in after}
        parts = {}  # where each store's bytes a memory go
        for side in sides:
            sizes = await relation_bytes(side.conn)
            parts[side.name] = {
                name: (size - parts_before[side.name].get(name, 0)) / total
                for name, size in sizes.items()
            }
        members: dict[tuple[str, ...], list[int]] = {}
        for i in range(total):
            members.setdefault(namespace(i), []).append(i)
            members.setdefault(namespace(i)[:2], []).append(i)
        arrays = {prefix: np.array(numbers) for prefix, numbers in members.items()}
        print(f"  (c) searches: {args.queries} queries, k=10; (d) gets: {args.gets}")
        await search_rounds((ethos, peer, flat), vectors, arrays, args.queries)
        await get_rounds(sides, items, total, args.gets)
        print(f"  (e) {args.expired:,} expired items removed")
        await expired_rounds(sides, items, vectors, total, args.expired)

    elapsed = time.perf_counter() - started_run
    print(f"\n{'':<42} {'ethos':>11} {'PostgresStore':>13} {'ratio':>8}   {'goal':<14} verdict")
    put, theirs = ethos.rate("put"), peer.rate("put")
    print(row("puts, one aput each (items/s)", put, theirs, ">= 1.0x", put >= theirs))
    print(row("puts, abatch of 100 (items/s)", ethos.rate("put_batch"), peer.rate("put_batch"),
              ">= 1.0x", ethos.rate("put_batch") >= peer.rate("put_batch")))  # fmt: skip
    print(row("bytes a memory", per_item[ethos.name], per_item[peer.name], "<= 1.5x",
              per_item[ethos.name] <= 1.5 * per_item[peer.name]))  # fmt: skip
    for measure, label in (("search_ns", "1 namespace"), ("search_group", "10 namespaces")):
        for baseline, how in ((peer, "HNSW"), (flat, "flat")):
            for share, name in ((0.5, "p50"), (0.99, "p99")):
                ours, theirs = ethos.ms(measure, share), baseline.ms(measure, share)
                goal, met = ("<= 1.2x", ours <= 1.2 * theirs) if name == "p99" else ("", None)
                print(row(f"search {label} {name} (ms) vs {how}", ours, theirs, goal, met,
                          ".2f"))  # fmt: skip
            recall = [s.counts[f"{measure}_hits"] / s.counts[f"{measure}_wanted"]
                      for s in (ethos, baseline)]  # fmt: skip
            print(row(f"  recall@10 vs exact, {how}", recall[0], recall[1], "equal",
                      abs(recall[0] - recall[1]) <= 0.005, ".3f"))  # fmt: skip
    for share, name in ((0.5, "p50"), (0.99, "p99")):
        print(row(f"get {name} (ms)", ethos.ms("get", share), peer.ms("get", share), fmt=".2f"))
    print(row(f"expired removed (ms; {ethos.counts['expire']:,}/{peer.counts['expire']:,} items)",
              1000 * sum(ethos.times["expire"]), 1000 * sum(peer.times["expire"]),
              fmt=",.0f"))  # fmt: skip
    print(f"  {'  then purged (hard delete, ms)':<40} {1000 * sum(ethos.times['purge']):>11,.0f}"
          f"   ({ethos.counts['purge']:,} rows)")  # fmt: skip
    print(f"\n  bytes: ethos {after[ethos.name] - before[ethos.name]:,}, PostgresStore"
          f" {after[peer.name] - before[peer.name]:,} ({per_item[flat.name]:,.0f} a memory"
          f" without its HNSW index) over {total:,} items")  # fmt: skip
    for name, sizes in parts.items():
        largest = sorted(sizes.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{relation} {size:,.0f}" for relation, size in largest if size >= 8)
        print(f"  {name}'s bytes a memory: {shown}")
    print("  HNSW: PostgresStore as shipped (its HNSW index; the namespace filtered after the"
          " index scan);\n  flat: PostgresStore with ann_index_config kind flat (no vector"
          " index: exact).")  # fmt: skip
    print(f"  run {elapsed:.0f} s")


# --profile: the statement of one EthosStore put of a new item with its vector
# (ethos/db/store/sql/items.py build_put_items_query), under EXPLAIN ANALYZE.
PROFILE_DB = "peer_ethos_profile"
PUT_ITEMS = build_put_items_query(
    one=True, puts=True, deletes=False, embeds=True, locks_first=False
)


def put_binds(op: PutOp, vectors: Vectors, now: Any) -> list[Any]:
    """PUT_ITEMS's binds for one put of a new item, as the engine makes them."""
    assert op.value is not None
    content = op.value["text"]
    agent = ".".join(op.namespace)
    return PUT_ITEMS.args(
        {"agents": [agent], "keys": [op.key], "contents": [content],
         "given_policies": json.dumps({agent: {op.key: KEEP}}),
         "values": [json.dumps(op.value)], "expires_at": [None], "policies": [KEEP],
         "embedded": [True], "vector_items": [1], "vector_fields": ["text"],
         **embedding_binds([vectors.of(content)]), "now": now}
    )  # fmt: skip


async def profile(args: argparse.Namespace) -> None:
    """Where an EthosStore put's time goes, on a store holding --items items: puts
    through the store timed by the client; the same statement under EXPLAIN ANALYZE
    (execution, planning, each trigger's time); the functions' own time
    (pg_stat_user_functions, track_functions = all) over the store's puts."""
    logs.configure(LoggingSettings(level="warning"))
    data_dir = Path.cwd() / args.data_dir
    puts = args.profile_puts
    vectors = Vectors(args.items + 3 * puts, 1)
    items = Items(args.items + 3 * puts)
    url = await fresh_database(data_dir, PROFILE_DB)
    settings = Settings(database=DatabaseSettings(url=url))
    await migrate(settings, url)
    conn = await asyncpg.connect(url)
    index: Any = {"dims": DIMS, "embed": vectors.embed, "fields": ["text"]}
    try:
        await load_ethos(conn, items, vectors, range(args.items))
        await conn.execute("VACUUM (ANALYZE)")
        await conn.execute(f"ALTER DATABASE {PROFILE_DB} SET track_functions = 'all'")
        await conn.execute("SELECT pg_stat_reset()")
        async with AsyncEthosStore(settings, index=index) as store:
            started = time.perf_counter()
            for i in range(args.items, args.items + puts):
                op = items.op(i)
                assert op.value is not None
                await store.aput(op.namespace, op.key, op.value)
            client = (time.perf_counter() - started) / puts
        await asyncio.sleep(1.5)  # the pool's backends report their counts as they exit
        functions = await conn.fetch(
            """SELECT funcname, calls, self_time, total_time FROM pg_stat_user_functions
               ORDER BY self_time DESC LIMIT 12"""
        )
        # As a pooled connection runs it: prepared once, planned anew or not
        # (pg_prepared_statements counts the generic plans and the custom ones).
        prepared = await conn.prepare(PUT_ITEMS.text)
        now = await conn.fetchval("SELECT now()")
        started = time.perf_counter()
        for i in range(args.items + 2 * puts, args.items + 3 * puts):
            await prepared.fetch(*put_binds(items.op(i), vectors, now))
        round_trip = (time.perf_counter() - started) / puts
        plans = await conn.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
            PUT_ITEMS.text,
        )
        statements: list[float] = []
        planning: list[float] = []
        triggers: dict[str, list[float]] = {}
        for i in range(args.items + puts, args.items + 2 * puts):
            now = await conn.fetchval("SELECT now()")
            async with conn.transaction():
                [plan] = json.loads(
                    await conn.fetchval(
                        f"EXPLAIN (ANALYZE, FORMAT JSON) {PUT_ITEMS.text}",
                        *put_binds(items.op(i), vectors, now),
                    )
                )
            statements.append(plan["Execution Time"])
            planning.append(plan["Planning Time"])
            for trigger in plan.get("Triggers", []):
                triggers.setdefault(trigger["Trigger Name"], []).append(trigger["Time"])
    finally:
        await conn.close()
    server = sum(statements) / puts
    print(f"EthosStore put profile: {puts} puts into {args.items:,} items")
    print(f"  client, one aput through AsyncEthosStore: {1000 * client:.2f} ms")
    print(f"  the statement prepared, on a connection: {1000 * round_trip:.2f} ms a put"
          f" (round trip; plans: {plans['generic_plans']} generic,"
          f" {plans['custom_plans']} custom)")  # fmt: skip
    print(f"  server, its statement (EXPLAIN ANALYZE execution): {server:.2f} ms;"
          f" planning {sum(planning) / puts:.2f} ms")  # fmt: skip
    print("  triggers (ms a put, share of the statement's execution)")
    for key, values in sorted(triggers.items(), key=lambda kv: -sum(kv[1])):
        mean = sum(values) / puts
        print(f"    {key:<60} {mean:7.3f} ms {mean / server:6.1%}")
    print(f"  functions' own time over the {puts} store puts (pg_stat_user_functions)")
    for f in functions:
        print(
            f"    {f['funcname']:<44} {f['calls'] / puts:6.1f} calls/put"
            f" self {f['self_time'] / puts:7.3f} ms  total {f['total_time'] / puts:7.3f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 items")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--single", type=int, default=100, help="aputs a store a round")
    parser.add_argument("--batches", type=int, default=4, help="abatches of 100 a round")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--gets", type=int, default=500)
    parser.add_argument("--expired", type=int, default=2000)
    parser.add_argument("--profile", action="store_true", help="where an ethos put's time goes")
    parser.add_argument("--profile-puts", type=int, default=200)
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    arguments = parser.parse_args()
    if arguments.quick or (arguments.profile and arguments.items == 100_000):
        arguments.items = 10_000
    asyncio.run(profile(arguments) if arguments.profile else main(arguments))
