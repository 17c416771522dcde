"""The consolidation daemon: a long-running asyncio loop that sweeps.

Every consolidation.interval_seconds (± jitter) it runs a consolidation cycle, an
ordered list of steps of which the decay sweep is the last. It prefers to sweep when
the system is idle, but never defers a due sweep by more than max_defer_seconds. One
daemon at a time holds the sweep lock (a PostgreSQL advisory lock); the others stand
by and take over when it goes. A database outage is waited out with capped backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
import structlog

from ethos import db
from ethos.engine import Engine
from ethos.errors import DatabaseError
from ethos.ltp import TRANSIENT
from ethos.settings import Settings
from ethos.store import Store

log = structlog.get_logger("ethos.daemon")

# Losing the database is something to wait out, not to crash on.
DATABASE_AWAY = (*TRANSIENT, DatabaseError)


@dataclass
class Cycle:
    """What a consolidation step sees."""

    engine: Engine
    daemon_id: str
    stop: asyncio.Event


Step = Callable[[Cycle], Awaitable[object]]


async def forget_ltp_receipts(cycle: Cycle) -> object:
    """Receipts of applied LTP flushes only need to outlive the flushes' retries."""
    await cycle.engine.store.forget_ltp_flushes()
    return None


async def decay_sweep(cycle: Cycle) -> object:
    return await cycle.engine.sweep(trigger="daemon", daemon_id=cycle.daemon_id, stop=cycle.stop)


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        url: str | None = None,
        steps_before_sweep: Sequence[Step] = (),
    ) -> None:
        self.settings = settings
        self.url = url
        # The decay sweep is always the last step: deduplication, promotion and the like
        # slot in before it.
        self.steps: list[Step] = [forget_ltp_receipts, *steps_before_sweep, decay_sweep]
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.engine: Engine | None = None
        self._lock_conn: asyncpg.Connection | None = None
        self._leader = False
        self._due_at: datetime | None = None
        self._deferred_for: datetime | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set; then finish the batch in flight, flush the LTP
        buffer, record the sweep and close."""
        c = self.settings.consolidation
        log.info("daemon_started", daemon_id=self.id, interval_seconds=c.interval_seconds)
        failures = 0
        try:
            while not stop.is_set():
                try:
                    wait = await self._tick(stop)
                    failures = 0
                except DATABASE_AWAY as exc:
                    failures += 1
                    wait = min(c.retry_max_seconds, 0.5 * 2 ** min(failures, 16))
                    wait *= random.uniform(0.5, 1.0)
                    log.warning(
                        "daemon_database_unavailable",
                        error=str(exc) or type(exc).__name__,
                        retry_in_seconds=round(wait, 2),
                        failures=failures,
                    )
                    await self._drop_lock()
                except Exception as exc:
                    # A bug or a refused statement must not take the daemon down: log it,
                    # wait a full interval, try again.
                    wait = c.interval_seconds
                    log.error(
                        "decay_sweep_error",
                        error=f"{type(exc).__name__}: {exc}",
                        non_fatal=True,
                        retry_in_seconds=wait,
                    )
                await _wait(stop, wait)
        finally:
            await self._shutdown()

    async def _tick(self, stop: asyncio.Event) -> float:
        """One turn of the loop; returns how long to wait before the next."""
        c = self.settings.consolidation
        engine = await self._engine()
        leader = await self._hold_lock()
        await self._heartbeat(engine, "leader" if leader else "standby")
        if not leader:
            return c.standby_poll_seconds
        now = await engine.now()
        if self._due_at is None:
            last = await engine.store.last_sweep_finished()
            self._due_at = last + self._interval() if last else now
        if now >= self._due_at:
            overdue = now >= self._due_at + timedelta(seconds=c.max_defer_seconds)
            if overdue or await engine.store.is_idle(c.idle_seconds):
                await self._cycle(engine, stop, overdue=overdue)
                self._due_at = await engine.now() + self._interval()
                await self._heartbeat(engine, "leader")
            elif self._deferred_for != self._due_at:
                self._deferred_for = self._due_at
                log.info("decay_sweep_deferred", reason="busy", due_at=self._due_at.isoformat())
        until_due = (self._due_at - now).total_seconds()
        if until_due <= 0:  # due but deferred: look again at the next heartbeat
            until_due = c.heartbeat_seconds
        return max(0.05, min(c.heartbeat_seconds, until_due))

    async def _cycle(self, engine: Engine, stop: asyncio.Event, *, overdue: bool) -> None:
        cycle = Cycle(engine=engine, daemon_id=self.id, stop=stop)
        log.debug("consolidation_cycle", daemon_id=self.id, overdue=overdue)
        # A long sweep must not look like a dead daemon: keep the heartbeat going.
        beating = asyncio.create_task(self._beat_during_cycle(engine))
        try:
            for step in self.steps:
                if stop.is_set():
                    return
                await step(cycle)
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating

    async def _beat_during_cycle(self, engine: Engine) -> None:
        while True:
            await asyncio.sleep(self.settings.consolidation.heartbeat_seconds)
            with contextlib.suppress(*DATABASE_AWAY):
                await self._heartbeat(engine, "leader")

    def _interval(self) -> timedelta:
        c = self.settings.consolidation
        return timedelta(seconds=c.interval_seconds * random.uniform(1 - c.jitter, 1 + c.jitter))

    async def _engine(self) -> Engine:
        if self.engine is None:
            engine = Engine(self.settings, url=self.url)
            await engine.__aenter__()
            self.engine = engine
        return self.engine

    async def _hold_lock(self) -> bool:
        """True while this daemon holds the sweep lock; tries to take it otherwise.
        The lock lives with its connection: checking that the connection still
        answers is checking that the lock is still held."""
        if self._lock_conn is None or self._lock_conn.is_closed():
            url = self.url or await db.resolve_url(self.settings)
            self._lock_conn = await db.connect(url, self.settings.database.connect_timeout_seconds)
            self._leader = False
        if self._leader:
            await Store.ping(self._lock_conn)
            return True
        self._leader = await Store.try_sweep_lock(self._lock_conn)
        if self._leader:
            log.info("daemon_took_sweep_lock", daemon_id=self.id)
            self._due_at = None  # recomputed from the sweeps the previous holder made
        return self._leader

    async def _drop_lock(self) -> None:
        if self._lock_conn is not None:
            with contextlib.suppress(Exception):
                await self._lock_conn.close(timeout=1)
        self._lock_conn = None
        self._leader = False

    async def _heartbeat(self, engine: Engine, role: str) -> None:
        await engine.store.heartbeat(
            self.id,
            host=socket.gethostname(),
            pid=os.getpid(),
            role=role,
            lock_backend_pid=(
                self._lock_conn.get_server_pid() if self._leader and self._lock_conn else None
            ),
            next_sweep_due=self._due_at if role == "leader" else None,
            ltp_backlog=engine.ltp.backlog,
            ltp_dropped=engine.ltp.stats.dropped,
        )

    async def _shutdown(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            await engine.ltp.close()
            with contextlib.suppress(*DATABASE_AWAY):
                await engine.store.daemon_stopped(self.id)
            await engine.close()
        await self._drop_lock()
        log.info("daemon_stopped", daemon_id=self.id)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep that ends as soon as `stop` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
