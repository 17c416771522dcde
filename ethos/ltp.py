"""Long-term potentiation, fire-and-forget and never lost.

Retrievals are recorded into an in-memory buffer at once; a background task applies
them in set-based UPDATEs (one per table and round), coalescing retrievals of one row
at one moment into a single write. A failed flush is requeued and retried with backoff;
closing drains the buffer. What cannot be applied is counted and logged, never silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import asyncpg
import structlog

from ethos.schema import TableSpec
from ethos.settings import Settings
from ethos.store import Pending, Store

log = structlog.get_logger("ethos.ltp")

# Errors that heal by waiting: the database is away, or the transaction lost a
# deadlock or serialization race (with a sweep batch, say). Anything else will not.
TRANSIENT = (
    asyncpg.TransactionRollbackError,
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.ConnectionDoesNotExistError,
)


@dataclass
class LtpStats:
    recorded: int = 0  # retrievals accepted into the buffer
    applied: int = 0  # retrievals written to their rows
    skipped: int = 0  # retrievals of unknown or pruned rows (nothing to strengthen)
    reinforced: int = 0  # episodes and facts strengthened through a retrieved vector
    dropped: int = 0  # retrievals that could not be buffered or applied
    failed_flushes: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class LtpBuffer:
    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self._pending: Pending = defaultdict(lambda: defaultdict(int))
        # A batch whose flush failed, kept with its flush id until it is applied: a
        # retry after an in-doubt commit must not apply it twice.
        self._retry: tuple[uuid.UUID, Pending, int] | None = None
        self._size = 0  # retrievals not yet applied: pending and the batch in retry
        self._wake = asyncio.Event()
        self._space = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.stats = LtpStats()

    @property
    def backlog(self) -> int:
        """Retrievals waiting to be applied."""
        return self._size

    def start(self) -> None:
        # The task is referenced here: the event loop itself keeps only a weak reference.
        self._task = asyncio.create_task(self._run(), name="ethos-ltp-flush")
        self._task.add_done_callback(_report_crash)

    async def record(self, spec: TableSpec, ids: Iterable[uuid.UUID], at: datetime) -> None:
        """Buffer retrievals; a repeated id counts as repeated retrievals. Waits up to
        ltp.full_wait_seconds when the buffer is full, then drops (and counts) them."""
        ids = list(ids)
        count = len(ids)
        ltp = self._settings.ltp
        deadline = asyncio.get_running_loop().time() + ltp.full_wait_seconds
        while self._size + count > ltp.buffer_capacity:
            self._space.clear()
            self._wake.set()
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(self._space.wait(), max(remaining, 0))
            except TimeoutError:
                self.stats.dropped += count
                log.error("ltp_dropped", reason="buffer full", count=count, backlog=self._size)
                return
        for memory_id in ids:
            self._pending[(spec.name, memory_id)][at] += 1
        self._size += count
        self.stats.recorded += count
        if self._size >= ltp.flush_max_rows:
            self._wake.set()

    async def flush(self) -> bool:
        """Apply what is buffered now (at most ltp.flush_max_rows rows); False if the
        database refused, in which case the same batch, with the same flush id, is the
        next one tried."""
        async with self._flush_lock:
            if self._retry is None:
                taken = self._take(self._settings.ltp.flush_max_rows)
                if not taken:
                    return True
                count = sum(sum(moments.values()) for moments in taken.values())
                self._retry = (uuid.uuid4(), taken, count)
            flush_id, taken, count = self._retry
            try:
                result = await self._store.apply_retrievals(taken, self._settings, flush_id)
            except TRANSIENT as exc:
                self.stats.failed_flushes += 1
                log.warning(
                    "ltp_update_failed", error=str(exc) or type(exc).__name__, backlog=self._size
                )
                return False
            except asyncpg.PostgresError as exc:
                # Retrying will not change the answer: count and log what is lost.
                self._settle(count)
                self.stats.dropped += count
                log.error("ltp_update_failed", error=str(exc), dropped=count, permanent=True)
                return True
            self._settle(count)
            if result.replayed:
                log.warning("ltp_flush_replayed", flush_id=str(flush_id), count=count)
            self.stats.applied += result.applied
            self.stats.skipped += result.skipped
            self.stats.reinforced += result.reinforced
            self._space.set()
            return True

    async def drain(self, timeout_seconds: float) -> None:
        """Flush until empty, retrying with backoff, for at most timeout_seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_seconds
        failures = 0
        while self._size and loop.time() < deadline:
            if await self.flush():
                failures = 0
                continue
            failures += 1
            await asyncio.sleep(min(self._backoff(failures), max(deadline - loop.time(), 0)))

    async def close(self) -> None:
        """Stop the background task, then apply everything still buffered."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.drain(self._settings.ltp.close_timeout_seconds)
        if self._size:
            self.stats.dropped += self._size
            log.error(
                "ltp_dropped", reason="closed before the database took them", count=self._size
            )
            self._pending.clear()
            self._retry = None
            self._size = 0

    async def _run(self) -> None:
        interval = self._settings.ltp.flush_interval_seconds
        failures = 0
        while not self._stopping:
            wait = interval if failures == 0 else self._backoff(failures)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            self._wake.clear()
            if self._stopping:
                return
            while self._size and not self._stopping:
                if not await self.flush():
                    failures += 1
                    break
                failures = 0

    def _backoff(self, failures: int) -> float:
        """Capped exponential backoff with jitter."""
        cap = self._settings.ltp.retry_max_seconds
        return float(min(cap, 0.05 * 2**failures) * random.uniform(0.5, 1.0))

    def _take(self, max_rows: int) -> Pending:
        return {key: self._pending.pop(key) for key in list(self._pending)[:max_rows]}

    def _settle(self, count: int) -> None:
        """The batch in retry is done with (applied, or given up)."""
        self._retry = None
        self._size -= count


def _report_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("ltp_task_crashed", error=repr(task.exception()))
