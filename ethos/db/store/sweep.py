"""The sweep: keyset batches, due batches on a sweeper's slices (SweepWorker), the
due count, faded links, the sweep runs' audit rows, and what a sweep runs on: the
database whole, or on a Citus cluster each shard group on its node (ShardSweep)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from ethos.db.store.core import Row, StoreCore, shard_names
from ethos.db.store.query import Query, on_shard
from ethos.db.store.sessions import translated
from ethos.db.store.sql.fragments import MAX_ID, NIL_ID
from ethos.db.store.sql.sweep import (
    ANYTHING_DUE,
    FINISH_SWEEP_RUN,
    HINT_HORIZON,
    LAST_SWEEP_FINISHED,
    PRUNE_SLICE_LOCK_CLASS,
    PRUNED_AT,
    REMOVE_FADED_LINKS,
    START_SWEEP_RUN,
    SWEEP_SLICE_LOCK_CLASS,
    TRY_SLICE_LOCKS,
    UNLOCK_SLICES,
    build_count_due_query,
    build_drop_hints_query,
    build_due_batch_query,
    build_due_share_query,
    build_rehint_query,
    build_split_query,
    build_sweep_batch_query,
)
from ethos.domain.tables import TableSpec

SLICES = 16  # ethos_slice(ctid): the rows' share-out among parallel sweepers, by place


class SweepStore(StoreCore):
    """Store's sweep: batches, sweepers' slices, the due count, sweep runs."""

    node = ""  # the server a part of a sweep runs on ("": the database's own)
    first_lock = 0  # the advisory lock of this part's slice 0 (sql: try_slice_locks)

    def _placed(self, query: Query) -> Query:
        """A sweep's statement as this part runs it (ShardSweep: on its shards)."""
        return query

    async def sweep_parts(self, agent: str | None) -> list[SweepStore]:
        """What a sweep runs on: this database; on a Citus coordinator whose memory
        tables are distributed, each shard group (the group of `agent` alone, where one
        is named), on its node."""
        if not await self.distributed():
            return [self]
        return [
            ShardSweep(self, group, await self._node_pool(group["host"], group["port"], sweep=True))
            for group in await self._shard_groups(agent)
        ]

    async def sweep_batch(
        self,
        spec: TableSpec,
        *,
        now: datetime,
        tolerance: float,
        after: uuid.UUID | None,
        upto: uuid.UUID | None = None,
        limit: int,
        agent: str | None,
        dry_run: bool,
    ) -> BatchResult:
        """One keyset batch after `after` (up to `upto`), in its own transaction."""
        await self.check_table(spec)
        query = build_sweep_batch_query(
            spec, by_agent=agent is not None, dry_run=dry_run, batch_size=limit
        )
        values = {
            "now": now,
            "tolerance": tolerance,
            "after": after or uuid.UUID(NIL_ID),
            "upto": upto or uuid.UUID(MAX_ID),
            "agent": agent,
        }
        query = self._placed(query)
        with translated():
            row = await self._sweep_pool.fetchrow(query.text, *query.args(values))
        return BatchResult(
            row["last_id"], row["scanned"], row["updated"], row["pruned"], row["expired"],
            held=row["held"],
        )  # fmt: skip

    async def split_ids(self, spec: TableSpec, parts: int) -> list[uuid.UUID]:
        """Ids that cut the live rows of a table into `parts` ranges of about equal
        size, from a sample of some SAMPLE_PAGES pages (every row of a small table); none
        for one part or an empty table."""
        await self.check_table(spec)
        if parts < 2:
            return []
        cuts: list[uuid.UUID] | None = await self._fetchval(
            self._placed(build_split_query(spec)), fractions=[i / parts for i in range(1, parts)]
        )
        return sorted(set(cuts or []))

    async def due_share(self, spec: TableSpec, now: datetime) -> float | None:
        """The share of a table's live rows due at `now`, in a sample of some
        SAMPLE_PAGES pages (None for an empty sample)."""
        await self.check_table(spec)
        share: float | None = await self._fetchval(
            self._placed(build_due_share_query(spec)), now=now
        )
        return share

    async def hint_horizon(self) -> str:
        """The oldest transaction still running (xid8, as text): before a full sweep of
        a table reads it."""
        horizon: str = await self._fetchval(HINT_HORIZON)
        return horizon

    async def drop_hints_before(self, spec: TableSpec, horizon: str) -> int:
        """After a full sweep of the whole table from `horizon`: drop the hints it
        superseded. How many it dropped."""
        await self.check_table(spec)
        query = self._placed(build_drop_hints_query(spec))
        with translated():
            status = await self._sweep_pool.execute(query.text, *query.args({"horizon": horizon}))
        return int(status.split()[-1])

    @asynccontextmanager
    async def sweep_worker(
        self, slices: Sequence[int], *, prune: bool
    ) -> AsyncIterator[SweepWorker]:
        """A connection of the sweep pool, holding those of `slices` that no other
        sweeper of the same kind (refresh, or prune) holds, by a session-level advisory
        lock each, until the block ends."""
        with translated():
            async with self._sweep_pool.acquire() as conn:
                worker = SweepWorker(
                    conn,
                    self,
                    PRUNE_SLICE_LOCK_CLASS if prune else SWEEP_SLICE_LOCK_CLASS,
                )
                try:
                    worker.slices = list(await worker.run(TRY_SLICE_LOCKS, slices=list(slices)))
                    yield worker
                finally:
                    if not conn.is_closed():
                        await worker.run(UNLOCK_SLICES, slices=worker.slices)

    async def anything_due(self, now: datetime, *, prune: bool) -> bool:
        """Whether a due sweep (prune: a prune pass) at `now` has anything to do here."""
        due: bool = await self._fetchval(self._placed(ANYTHING_DUE), now=now, prune=prune)
        return due

    async def count_due(self, spec: TableSpec, now: datetime, *, prune: bool) -> int:
        await self.check_table(spec)
        query = self._placed(build_count_due_query(spec))
        count: int = await self._fetchval(query, now=now, prune=prune)
        return count

    async def rehint(self, spec: TableSpec, now: datetime) -> int:
        """A table's hints made again from its rows' own moments; the rows hinted."""
        hinted: int = await self._fetchval(self._placed(build_rehint_query(spec)), now=now)
        return hinted

    async def remove_faded_links(self, now: datetime, limit: int) -> int:
        """Up to `limit` links whose weight fell below links.prune_weight by `now`."""
        removed: int = await self._fetchval(self._placed(REMOVE_FADED_LINKS), now=now, limit=limit)
        return removed

    async def start_sweep_run(
        self, trigger: str, mode: str, now: datetime, agent: str | None, daemon_id: str | None
    ) -> int:
        await self.interrupt_orphaned_runs()
        run_id: int = await self._fetchval(
            START_SWEEP_RUN,
            trigger=trigger,
            mode=mode,
            now=now,
            agent=agent,
            daemon_id=daemon_id,
        )
        return run_id

    async def finish_sweep_run(
        self,
        run_id: int,
        *,
        status: str,
        totals: tuple[int, int, int],
        tables: dict[str, Any],
        error: str | None,
    ) -> None:
        scanned, updated, pruned = totals
        await self._fetchval(
            FINISH_SWEEP_RUN,
            id=run_id,
            status=status,
            scanned=scanned,
            updated=updated,
            pruned=pruned,
            tables=json.dumps(tables),
            error=error,
        )

    async def last_sweep_finished(self) -> datetime | None:
        value: datetime | None = await self._fetchval(LAST_SWEEP_FINISHED)
        return value

    async def pruned_at(self, agent: str, at: datetime) -> list[Row]:
        """The memories of an agent that a sweep at `at` pruned."""
        return await self._fetch(PRUNED_AT, agent=agent, at=at)


@dataclass(frozen=True)
class BatchResult:
    last_id: uuid.UUID | None  # full sweeps: where the next batch starts
    scanned: int
    updated: int
    pruned: int
    expired: int  # of the pruned, by expires_at (the others by decay)
    popped: int = 0  # due sweeps: hints taken (0: nothing left in these slices)
    visited: int = 0  # due sweeps: rows of those hints looked at (due or not)
    held: int = 0  # due rows not written: another transaction held them (decision 0022)


class SweepWorker:
    """One sweeper's connection and the slices it holds: what a due sweep runs on."""

    def __init__(self, conn: asyncpg.Connection, store: SweepStore, lock_class: int) -> None:
        self._conn = conn
        self._store = store
        self._lock_class = lock_class
        self.slices: list[int] = []

    async def run(self, query: Query, **values: Any) -> Any:
        with translated():
            return await self._conn.fetchval(
                query.text,
                *query.args({**values, "class": self._lock_class, "first": self._store.first_lock}),
            )

    async def due_batch(
        self, spec: TableSpec, *, now: datetime, tolerance: float, prune: bool, limit: int
    ) -> BatchResult:
        """One batch of due rows of this worker's slices, in its own transaction."""
        await self._store.check_table(spec)
        query = self._store._placed(build_due_batch_query(spec, prune=prune, batch_size=limit))
        values = {"now": now, "tolerance": tolerance, "slices": self.slices}
        with translated():
            row = await self._conn.fetchrow(query.text, *query.args(values))
        return BatchResult(
            None,
            row["scanned"],
            row["updated"],
            row["pruned"],
            row["expired"],
            row["popped"],
            row["visited"],
            row["held"],
        )


class ShardSweep(SweepStore):
    """One shard group of a Citus cluster, swept on the node that holds it, against its
    shards by their own names (core.on_shard): Citus plans a statement naming a
    distributed table as a distributed one, and refuses a sweep's. Its statements name
    one shard group, so a sweep of a cluster runs on every node at once. Each node keeps
    its own transaction ids, so a full sweep's hint horizon is read there too."""

    def __init__(self, store: SweepStore, group: Row, pool: asyncpg.Pool) -> None:
        super().__init__(store.settings, store.url, pool, pool)
        self._checked = store._checked  # the coordinator checked the tables
        self.node = f"{group['host']}:{group['port']}"
        self.shard: int = group["shard"]
        self.first_lock = self.shard * SLICES  # each shard group's slices have their own
        self._names = shard_names(group)

    def _placed(self, query: Query) -> Query:
        return on_shard(query, self._names)
