"""The one module that talks to the database on behalf of the others."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from ethos import queries
from ethos.decay import DecayParams
from ethos.errors import DatabaseError, NotFoundError
from ethos.inputs import MemoryInput
from ethos.schema import TableSpec, table_spec


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
            "vector", encoder=str, decoder=_parse_vector, schema="public", format="text"
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
        query = queries.build_sweep_batch_query(spec, by_agent=agent is not None, dry_run=dry_run)
        args: list[Any] = [
            now,
            *params.sql_args(),
            params.prune_threshold,
            tolerance,
            after or uuid.UUID(queries.NIL_ID),
            limit,
        ]
        if agent is not None:
            args.append(agent)
        row = await self.pool.fetchrow(query, *args)
        return BatchResult(row["last_id"], row["scanned"], row["updated"], row["pruned"])

    async def start_sweep_run(self, trigger: str, now: datetime, agent: str | None) -> int:
        run_id: int = await self.pool.fetchval(queries.START_SWEEP_RUN, trigger, now, agent)
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
