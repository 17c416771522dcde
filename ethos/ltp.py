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

import structlog

from ethos.errors import DatabaseError, TransientDatabaseError
from ethos.settings import Settings
from ethos.store import LtpFlush, Row, Store
from ethos.tables import TableSpec, table_spec

log = structlog.get_logger("ethos.ltp")

# Buffered retrievals: (table, id) -> {moment: count}.
Pending = dict[tuple[TableSpec, uuid.UUID], dict[datetime, int]]
Rows = dict[uuid.UUID, dict[datetime, int]]


@dataclass
class LtpStats:
    recorded: int = 0  # retrievals accepted into the buffer
    applied: int = 0  # retrievals written to their rows
    skipped: int = 0  # retrievals of unknown or pruned rows (nothing to strengthen)
    reinforced: int = 0  # episodes and facts strengthened through a retrieved vector
    promoted: int = 0  # memories moved to another policy by a retrieval (promote_after)
    dropped: int = 0  # retrievals that could not be buffered or applied
    failed_flushes: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class LtpResult:
    applied: int = 0
    skipped: int = 0
    reinforced: int = 0
    promoted: int = 0
    replayed: bool = False  # this flush had been applied already (an in-doubt commit)


# --- the rules: what a flush writes, in which order ---------------------------------


async def apply_retrievals(store: Store, pending: Pending, flush_id: uuid.UUID) -> LtpResult:
    """Apply buffered retrievals in one transaction, exactly once per flush id.

    Tables whose rows embed others (vectors) go first: a hit on a vector also
    strengthens the episode or fact it embeds, at the same moment. Those
    reinforcements join the target rows' own retrievals, so every row takes its
    retrievals in time order, as one after another.
    """
    by_table: dict[TableSpec, Rows] = defaultdict(dict)
    for (spec, memory_id), moments in pending.items():
        by_table[spec][memory_id] = moments
    result = LtpResult()
    async with store.ltp_flush(flush_id) as flush:
        if flush is None:
            result.applied = _total(by_table.values())
            result.replayed = True
            return result
        sources: dict[TableSpec, Rows] = defaultdict(lambda: defaultdict(dict))
        for spec in [s for s in by_table if s.has_source]:
            returned = await _apply_rounds(flush, spec, by_table[spec])
            _account(result, spec, by_table[spec], {}, returned)
            for row in returned:
                if row["source_id"] is not None:
                    moments = sources[table_spec(row["source_type"])][row["source_id"]]
                    moments[row["at"]] = moments.get(row["at"], 0) + row["n"]
        targets = {s for s in by_table if not s.has_source} | set(sources)
        for spec in sorted(targets, key=lambda s: s.name):
            own, through = by_table.get(spec, {}), sources.get(spec, {})
            returned = await _apply_rounds(flush, spec, _merge(own, through))
            _account(result, spec, own, through, returned)
        if result.applied:
            await flush.touch_retrieval_activity()
    return result


async def _apply_rounds(flush: LtpFlush, spec: TableSpec, rows: Rows) -> list[Row]:
    """Round i holds the i-th moment of every row, so a row retrieved at several
    moments is strengthened in time order, exactly as one retrieval after another."""
    if not rows:
        return []
    # Rows are locked in id order, as sweep batches lock them, to keep deadlocks rare.
    ordered = {i: sorted(moments.items()) for i, moments in sorted(rows.items())}
    returned: list[Row] = []
    for depth in range(max(len(m) for m in ordered.values())):
        level = [(i, m[depth]) for i, m in ordered.items() if depth < len(m)]
        returned += await flush.strengthen(
            spec,
            ids=[memory_id for memory_id, _ in level],
            counts=[count for _, (_, count) in level],
            moments=[at for _, (at, _) in level],
        )
    return returned


def _merge(a: Rows, b: Rows) -> Rows:
    merged: Rows = {i: dict(moments) for i, moments in a.items()}
    for memory_id, moments in b.items():
        target = merged.setdefault(memory_id, {})
        for at, count in moments.items():
            target[at] = target.get(at, 0) + count
    return merged


def _total(tables: Iterable[Rows]) -> int:
    return sum(sum(moments.values()) for rows in tables for moments in rows.values())


def _account(
    result: LtpResult, spec: TableSpec, own: Rows, through: Rows, returned: list[Row]
) -> None:
    """Retrievals of rows that were found count as applied (or reinforced, through a
    vector); those of unknown or pruned rows as skipped, and are logged."""
    found = {row["id"] for row in returned}
    promoted = [row for row in returned if row["policy"] != row["old_policy"]]
    result.promoted += len(promoted)
    for row in promoted:
        log.debug(
            "memory_promoted", table=spec.name, id=str(row["id"]),
            policy=row["policy"], old_policy=row["old_policy"],
        )  # fmt: skip
    result.applied += _total([{i: m for i, m in own.items() if i in found}])
    result.reinforced += _total([{i: m for i, m in through.items() if i in found}])
    missing = [str(i) for i in own if i not in found]
    if missing:
        result.skipped += _total([{i: m for i, m in own.items() if i not in found}])
        log.warning("ltp_skipped", table=spec.name, count=len(missing), ids=missing[:5])


# --- the buffer -------------------------------------------------------------------------


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
        # A table the flush could not write fails its caller now, not the flush later.
        ltp.boost(spec)
        await self._store.check_table(spec)
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
            self._pending[(spec, memory_id)][at] += 1
        self._size += count
        self.stats.recorded += count
        if len(self._pending) >= ltp.flush_max_rows:
            self._wake.set()

    async def flush(self) -> bool:
        """Apply what is buffered now (at most ltp.flush_max_rows rows, a row being one
        memory at one moment); False if the database was away, in which case the same
        batch, with the same flush id, is the next one tried."""
        async with self._flush_lock:
            if self._retry is None:
                taken = self._take(self._settings.ltp.flush_max_rows)
                if not taken:
                    return True
                count = sum(sum(moments.values()) for moments in taken.values())
                self._retry = (uuid.uuid4(), taken, count)
            flush_id, taken, count = self._retry
            try:
                result = await apply_retrievals(self._store, taken, flush_id)
            except TransientDatabaseError as exc:
                self.stats.failed_flushes += 1
                log.warning(
                    "ltp_update_failed", error=str(exc) or type(exc).__name__, backlog=self._size
                )
                return False
            except DatabaseError as exc:
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
            self.stats.promoted += result.promoted
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
        """The batch in retry is done with (applied, or given up): its room is free for
        the callers waiting in record()."""
        self._retry = None
        self._size -= count
        self._space.set()


def _report_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("ltp_task_crashed", error=repr(task.exception()))
