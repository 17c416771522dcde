"""The Python API: an Engine opened from settings, used as an async context manager.

async with Engine(load_settings()) as engine:
    memory_id = await engine.add("episode", agent_id="a1", content="met Ada", emotional_tone=0.8)
    report = await engine.sweep()
    print(await engine.explain("episode", memory_id))
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import asyncpg

from ethos import db, queries
from ethos.explain import explain
from ethos.inputs import MemoryInput, aware, parse_id
from ethos.ltp import LtpBuffer
from ethos.recovery import RecoveryReport, Selector, recover
from ethos.retrieval import Hit, search
from ethos.schema import MEMORY_TABLES, TableSpec, table_spec
from ethos.settings import Settings, load_settings
from ethos.store import Store
from ethos.sweep import Progress, SweepReport, run_sweep


class Engine:
    """Connects on enter, closes on exit. One engine serves many concurrent tasks."""

    def __init__(self, settings: Settings | None = None, *, url: str | None = None) -> None:
        self.settings = settings or load_settings()
        self._url = url
        self._pool: asyncpg.Pool | None = None

    async def __aenter__(self) -> Engine:
        url = self._url or await db.resolve_url(self.settings)
        self._pool = await db.create_pool(
            self.settings,
            url,
            init=Store.init_connection,
            server_settings=queries.search_server_settings(
                self.settings.search.candidates, self.settings.search.max_scan_tuples
            ),
        )
        self.url = url
        self.store = Store(self._pool)
        self.ltp = LtpBuffer(self.store, self.settings)
        self.ltp.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Apply the buffered LTP, then close the pool."""
        if self._pool is not None:
            await self.ltp.close()
            await self._pool.close()
            self._pool = None

    async def add(
        self, table: str | TableSpec, *, agent_id: str, content: str, **fields: Any
    ) -> uuid.UUID:
        """Insert one memory; see MemoryInput for the fields each table accepts."""
        memory = MemoryInput.build(
            table, self.settings.embedding.dimension, agent_id=agent_id, content=content, **fields
        )
        return await self.store.insert(memory)

    async def sweep(
        self,
        *,
        now: datetime | None = None,
        tables: Iterable[str | TableSpec] | None = None,
        agent: str | None = None,
        dry_run: bool = False,
        trigger: str = "manual",
        daemon_id: str | None = None,
        stop: asyncio.Event | None = None,
        progress: Progress | None = None,
    ) -> SweepReport:
        """Decay and prune at `now` (the database's clock by default). A set `stop`
        ends the sweep at the next batch boundary."""
        specs = _specs(tables)
        return await run_sweep(
            self.store,
            self.settings,
            now=aware(now, "now") if now else None,
            tables=specs,
            agent=agent,
            dry_run=dry_run,
            trigger=trigger,
            daemon_id=daemon_id,
            stop=stop,
            progress=progress,
        )

    async def explain(
        self, table: str | TableSpec, memory_id: str | uuid.UUID, *, now: datetime | None = None
    ) -> dict[str, Any]:
        spec = table if isinstance(table, TableSpec) else table_spec(table)
        row = await self.store.fetch(spec, parse_id(memory_id))
        at = aware(now, "now") if now else await self.store.now()
        return explain(spec, row, at, self.settings.decay_params)

    async def search(
        self,
        agent_id: str,
        embedding: Sequence[float],
        k: int = 10,
        *,
        now: datetime | None = None,
        record: bool = True,
    ) -> list[Hit]:
        """Nearest live vectors of agent_id, ranked by similarity × salience^weight.

        Returns at once; the hits' LTP is buffered (record=False: not recorded).
        """
        return await search(
            self.store,
            self.ltp if record else None,
            self.settings,
            agent=agent_id,
            embedding=embedding,
            k=k,
            now=aware(now, "now") if now else datetime.now(UTC),
        )

    async def record_retrieval(
        self,
        table: str | TableSpec,
        ids: Iterable[str | uuid.UUID],
        *,
        now: datetime | None = None,
    ) -> None:
        """Schedule LTP for memories an agent read by other means; a repeated id counts
        as repeated retrievals. Applied in the background, and at the latest on close."""
        spec = table if isinstance(table, TableSpec) else table_spec(table)
        parsed = [parse_id(i) for i in ids]
        await self.ltp.record(spec, parsed, aware(now, "now") if now else datetime.now(UTC))

    async def stats(self, agent: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """What the monitoring views say, for one agent or all."""
        return await self.store.stats(agent)

    async def recover(
        self,
        table: str | TableSpec,
        selector: Selector,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        command: str = "api",
    ) -> RecoveryReport:
        """Bring pruned memories back with a fresh start (recovery.salience, anchored
        at now); dry_run lists them and changes nothing."""
        spec = table if isinstance(table, TableSpec) else table_spec(table)
        return await recover(
            self.store,
            self.settings,
            spec,
            selector,
            now=aware(now, "now") if now else await self.store.now(),
            dry_run=dry_run,
            command=command,
        )

    async def status(self, alive_seconds: float) -> dict[str, Any]:
        """Daemons with a heartbeat in the last alive_seconds, who holds the sweep lock,
        the last sweep; and this engine's own LTP counters."""
        status = await self.store.status(alive_seconds)
        status["ltp"] = {"backlog": self.ltp.backlog, **self.ltp.stats.as_dict()}
        return status

    async def now(self) -> datetime:
        """The database's clock."""
        return await self.store.now()


def _specs(tables: Iterable[str | TableSpec] | None) -> tuple[TableSpec, ...]:
    if tables is None:
        return MEMORY_TABLES
    return tuple(t if isinstance(t, TableSpec) else table_spec(t) for t in tables)
