"""The one module that talks to the database on behalf of the others."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import structlog

from ethos import queries
from ethos.decay import DecayParams
from ethos.errors import DatabaseError, NotFoundError
from ethos.inputs import MemoryInput, vector_literal
from ethos.schema import MEMORY_TABLES, TableSpec, table_spec
from ethos.settings import Settings

log = structlog.get_logger("ethos.store")


# Buffered retrievals: (table, id) -> {moment: count}.
Pending = dict[tuple[str, uuid.UUID], dict[datetime, int]]
Rows = dict[uuid.UUID, dict[datetime, int]]


@dataclass
class LtpResult:
    applied: int = 0  # retrievals written to the rows asked for
    skipped: int = 0  # retrievals of unknown or pruned rows
    reinforced: int = 0  # source episodes and facts strengthened through their vectors
    replayed: bool = False  # this flush had been applied already (an in-doubt commit)


@dataclass(frozen=True)
class BatchResult:
    last_id: uuid.UUID | None
    scanned: int
    updated: int
    pruned: int


async def _init_connection(conn: asyncpg.Connection) -> None:
    """pgvector's text form both ways, so no binary codec (or numpy) is needed."""
    try:
        await conn.set_type_codec(
            "vector", encoder=vector_literal, decoder=_parse_vector, schema="public", format="text"
        )
    except ValueError:
        raise DatabaseError("the database has no ethos schema: run `ethos migrate` first") from None


def _parse_vector(text: str) -> list[float]:
    return [float(v) for v in text.strip("[]").split(",")] if text != "[]" else []


class Store:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    init_connection = staticmethod(_init_connection)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def sweep_session(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection for one sweep. Its batches commit asynchronously: they only
        materialize values that the next sweep recomputes from the stored state, so a
        crash can cost a few batches of refresh but never correctness, and no batch
        waits for a WAL flush. Generic plans spare re-planning every batch.
        (The pool resets these settings when the connection goes back.)"""
        async with self.pool.acquire() as conn:
            await conn.execute(queries.SWEEP_SESSION)
            yield conn

    async def now(self) -> datetime:
        value: datetime = await self.pool.fetchval(queries.DATABASE_NOW)
        return value

    async def insert(self, memory: MemoryInput) -> uuid.UUID:
        columns = memory.columns()
        async with self.transaction() as conn:
            if memory.source_id is not None:
                source = table_spec(memory.source_type or "")
                if (
                    await conn.fetchval(queries.build_fetch_memory_query(source), memory.source_id)
                    is None
                ):
                    raise NotFoundError(f"no {source.name} row with id {memory.source_id}")
            query = queries.build_insert_query(memory.table, list(columns))
            new_id: uuid.UUID = await conn.fetchval(query, *columns.values())
            return new_id

    async def fetch(self, spec: TableSpec, memory_id: uuid.UUID) -> asyncpg.Record:
        row = await self.pool.fetchrow(queries.build_fetch_memory_query(spec), memory_id)
        if row is None:
            raise NotFoundError(f"no {spec.name} row with id {memory_id}")
        return row

    async def count_live(self, spec: TableSpec, agent: str | None) -> int:
        query = queries.build_count_live_query(spec, by_agent=agent is not None)
        count: int = await self.pool.fetchval(query, *([agent] if agent else []))
        return count

    async def sweep_batch(
        self,
        conn: asyncpg.Connection,
        spec: TableSpec,
        *,
        now: datetime,
        params: DecayParams,
        tolerance: float,
        after: uuid.UUID | None,
        limit: int,
        agent: str | None,
        dry_run: bool,
    ) -> BatchResult:
        query = queries.build_sweep_batch_query(
            spec, by_agent=agent is not None, dry_run=dry_run, batch_size=limit
        )
        args: list[Any] = [
            now,
            *params.sql_args(),
            params.prune_threshold,
            tolerance,
            after or uuid.UUID(queries.NIL_ID),
        ]
        if agent is not None:
            args.append(agent)
        row = await conn.fetchrow(query, *args)
        return BatchResult(row["last_id"], row["scanned"], row["updated"], row["pruned"])

    async def apply_retrievals(
        self, pending: Pending, settings: Settings, flush_id: uuid.UUID
    ) -> LtpResult:
        """Apply buffered retrievals in one transaction: vectors first (their hits also
        reinforce the episode or fact they embed), then episodes and facts. A flush id
        that was applied before is not applied again."""
        by_table: dict[str, Rows] = defaultdict(dict)
        for (table, memory_id), moments in pending.items():
            by_table[table][memory_id] = moments
        sources: dict[str, Rows] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
        result = LtpResult()
        async with self.transaction() as conn:
            if await conn.fetchval(queries.CLAIM_LTP_FLUSH, flush_id) is None:
                requested = sum(sum(moments.values()) for moments in pending.values())
                return LtpResult(applied=requested, replayed=True)
            for spec in MEMORY_TABLES:
                asked = by_table.get(spec.name, {})
                returned = await self._apply_rounds(conn, spec, asked, settings)
                applied = sum(row["n"] for row in returned)
                result.applied += applied
                asked_total = sum(sum(m.values()) for m in asked.values())
                if applied < asked_total:
                    result.skipped += asked_total - applied
                    found = {row["id"] for row in returned}
                    missing = [str(i) for i in asked if i not in found]
                    log.warning("ltp_skipped", table=spec.name, count=len(missing), ids=missing[:5])
                if spec.has_expiry:
                    for row in returned:
                        if row["source_id"] is not None:
                            sources[row["source_type"]][row["source_id"]][row["at"]] += row["n"]
                reinforced = await self._apply_rounds(
                    conn, spec, sources.get(spec.name, {}), settings
                )
                result.reinforced += sum(row["n"] for row in reinforced)
            if result.applied:
                await conn.execute(queries.TOUCH_RETRIEVAL_ACTIVITY)
        return result

    async def _apply_rounds(
        self, conn: asyncpg.Connection, spec: TableSpec, rows: Rows, settings: Settings
    ) -> list[asyncpg.Record]:
        """Round i holds the i-th moment of every row, so a row retrieved at several
        moments is strengthened in time order, exactly as one retrieval after another."""
        if not rows:
            return []
        ltp = settings.ltp
        boost = {"memory_vectors": ltp.vector_boost, "episodic_traces": ltp.episode_boost}.get(
            spec.name, ltp.fact_boost
        )
        extra = [ltp.fact_confidence_bonus] if spec.has_confidence else []
        query = queries.build_ltp_query(spec)
        # Rows are locked in id order, as sweep batches lock them, to keep deadlocks rare.
        ordered = {i: sorted(moments.items()) for i, moments in sorted(rows.items())}
        returned: list[asyncpg.Record] = []
        for depth in range(max(len(m) for m in ordered.values())):
            level = [(i, m[depth]) for i, m in ordered.items() if depth < len(m)]
            returned += await conn.fetch(
                query,
                boost,
                *settings.decay_params.sql_args(),
                [memory_id for memory_id, _ in level],
                [count for _, (_, count) in level],
                [at for _, (at, _) in level],
                *extra,
            )
        return returned

    async def search(
        self,
        *,
        agent: str,
        embedding: list[float],
        k: int,
        now: datetime,
        settings: Settings,
    ) -> list[asyncpg.Record]:
        args = (
            now,
            *settings.decay_params.sql_args(),
            agent,
            embedding,
            max(settings.search.candidates, k),
            k,
            settings.search.salience_weight,
        )
        async with self.pool.acquire() as conn:
            rows: list[asyncpg.Record] = await conn.fetch(queries.SEARCH_VECTORS, *args)
            if len(rows) < k:  # the bounded index scan fell short: look at every vector
                rows = await conn.fetch(queries.SEARCH_VECTORS_EXACT, *args)
        return rows

    async def forget_ltp_flushes(self) -> None:
        await self.pool.execute(queries.FORGET_LTP_FLUSHES)

    async def build_vector_index(self, memory: str) -> None:
        """Build the HNSW index with `memory` of maintenance_work_mem."""
        async with self.pool.acquire() as conn:
            await conn.execute(queries.INDEX_BUILD_MEMORY.format(memory=memory))
            await conn.execute(queries.BUILD_VECTOR_INDEX)

    async def start_sweep_run(
        self, trigger: str, now: datetime, agent: str | None, daemon_id: str | None
    ) -> int:
        run_id: int = await self.pool.fetchval(
            queries.START_SWEEP_RUN, trigger, now, agent, daemon_id
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
        await self.pool.execute(
            queries.FINISH_SWEEP_RUN, run_id, status, *totals, json.dumps(tables), error
        )

    # --- the daemon -------------------------------------------------------------------

    @staticmethod
    async def try_sweep_lock(conn: asyncpg.Connection) -> bool:
        """Take the sweep lock on conn (a dedicated connection: the lock lives as long
        as its session)."""
        held: bool = await conn.fetchval(queries.TRY_SWEEP_LOCK, queries.SWEEP_LOCK_KEY)
        return held

    @staticmethod
    async def ping(conn: asyncpg.Connection) -> None:
        await conn.fetchval(queries.PING)

    async def is_idle(self, idle_seconds: float) -> bool:
        idle: bool = await self.pool.fetchval(queries.IS_IDLE, idle_seconds)
        return idle

    async def last_sweep_finished(self) -> datetime | None:
        value: datetime | None = await self.pool.fetchval(queries.LAST_SWEEP_FINISHED)
        return value

    async def heartbeat(
        self,
        daemon_id: str,
        *,
        host: str,
        pid: int,
        role: str,
        lock_backend_pid: int | None,
        next_sweep_due: datetime | None,
        ltp_backlog: int,
        ltp_dropped: int,
    ) -> None:
        await self.pool.execute(
            queries.DAEMON_HEARTBEAT,
            daemon_id,
            host,
            pid,
            role,
            lock_backend_pid,
            next_sweep_due,
            ltp_backlog,
            ltp_dropped,
        )

    async def daemon_stopped(self, daemon_id: str) -> None:
        await self.pool.execute(queries.DAEMON_STOPPED, daemon_id)

    async def status(self, alive_seconds: float) -> dict[str, Any]:
        daemons = await self.pool.fetch(
            queries.STATUS_DAEMONS, alive_seconds, queries.SWEEP_LOCK_KEY
        )
        last = await self.pool.fetchrow(queries.STATUS_LAST_SWEEP)
        return {
            "daemons": [dict(row) for row in daemons],
            "last_sweep": dict(last) if last else None,
        }

    # --- monitoring -------------------------------------------------------------------

    async def record_decay_settings(self, settings: Settings) -> None:
        d = settings.decay
        await self.pool.execute(
            queries.RECORD_DECAY_SETTINGS,
            d.prune_threshold,
            settings.monitoring.at_risk_margin,
            d.base_tau_days,
            d.ltp_multiplier,
            d.max_tau_days,
            d.frequency_weight,
            d.emotional_weight,
        )

    async def stats(self, agent: str | None) -> dict[str, list[dict[str, Any]]]:
        async with self.pool.acquire() as conn:
            return {
                "counts": [dict(r) for r in await conn.fetch(queries.STATS_COUNTS, agent)],
                "salience_by_age": [dict(r) for r in await conn.fetch(queries.STATS_BY_AGE, agent)],
                "at_risk": [dict(r) for r in await conn.fetch(queries.STATS_AT_RISK, agent)],
                "most_retrieved": [
                    dict(r) for r in await conn.fetch(queries.STATS_MOST_RETRIEVED, agent)
                ],
                "recent_sweeps": [dict(r) for r in await conn.fetch(queries.STATS_SWEEPS)],
                "ltp": [dict(r) for r in await conn.fetch(queries.STATS_LTP)],
            }

    async def pruned_at(self, agent: str, at: datetime) -> list[asyncpg.Record]:
        """The memories of an agent that a sweep at `at` pruned."""
        rows: list[asyncpg.Record] = await self.pool.fetch(queries.PRUNED_AT, agent, at)
        return rows

    # --- recovery ---------------------------------------------------------------------

    async def id_states(self, spec: TableSpec, ids: list[uuid.UUID]) -> dict[uuid.UUID, bool]:
        """id -> pruned, for the ids that exist."""
        rows = await self.pool.fetch(queries.build_id_states_query(spec), ids)
        return {row["id"]: row["pruned"] for row in rows}

    async def recovery_candidates(
        self, spec: TableSpec, selector: tuple[Any, ...], after: uuid.UUID | None, limit: int
    ) -> list[asyncpg.Record]:
        query = queries.build_recovery_candidates_query(spec, limit)
        rows: list[asyncpg.Record] = await self.pool.fetch(
            query, *selector, after or uuid.UUID(queries.NIL_ID)
        )
        return rows

    async def recover_batch(
        self,
        spec: TableSpec,
        selector: tuple[Any, ...],
        *,
        after: uuid.UUID | None,
        limit: int,
        strength: float,
        now: datetime,
    ) -> list[uuid.UUID]:
        query = queries.build_recover_batch_query(spec, limit)
        rows = await self.pool.fetch(
            query, *selector, after or uuid.UUID(queries.NIL_ID), strength, now
        )
        return sorted(row["id"] for row in rows)

    async def record_recovery(
        self,
        *,
        now: datetime,
        spec: TableSpec,
        selector: dict[str, Any],
        command: str,
        recovered: int,
        strength: float,
    ) -> int:
        recovery_id: int = await self.pool.fetchval(
            queries.RECORD_RECOVERY,
            now,
            spec.name,
            json.dumps(selector, default=str),
            command,
            recovered,
            strength,
        )
        return recovery_id
