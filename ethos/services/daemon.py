"""The consolidation daemon: a long-running asyncio loop that sweeps.

Every daemon.interval_seconds (± jitter) it runs a consolidation cycle, an
ordered list of steps (forget old LTP receipts, purge old tombstones if retention says
so, merge duplicates) of which the decay sweep is the last. It prefers to sweep when
the system is idle, but never defers a due sweep by more than max_defer_seconds.
Beside it, every prune_interval_seconds, a prune pass prunes the rows whose moment has
come, busy or not, during a long sweep too, so a memory is pruned within that interval
of its exact moment. One daemon at a time holds the leader lock (a PostgreSQL advisory
lock); the others stand by and take over when it goes. A database outage is waited out
with capped backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import structlog

from ethos import db
from ethos.db.store import Store
from ethos.domain.errors import DatabaseError, EthosError, TransientDatabaseError
from ethos.services.engine import Engine
from ethos.services.lifecycle import purge_cutoff
from ethos.services.ltp import Held, LtpStats
from ethos.services.sweep import SweepReport
from ethos.settings import Settings, with_daemon_statement_timeout

log = structlog.get_logger("ethos.services.daemon")

# A cancelled loop that does not finish its own shutdown gets this long more.
CANCEL_GRACE_SECONDS = 5.0
# Health says degraded while retrievals were set aside this recently.
DEAD_LETTER_WINDOW_SECONDS = 3600.0


class SweepObserver(Protocol):
    """Who counts the daemon's sweeps (the metrics, when served)."""

    def observe(self, report: SweepReport, trigger: str) -> None: ...
    def failed(self, trigger: str, mode: str) -> None: ...


class DaemonStopTimeout(EthosError):
    """The daemon did not stop within daemon.shutdown_timeout_seconds."""


@dataclass
class Cycle:
    """What a consolidation step sees."""

    engine: Engine
    store: Store
    daemon_id: str
    stop: asyncio.Event
    metrics: SweepObserver | None = None


Step = Callable[[Cycle], Awaitable[object]]
# Starts what watches a daemon from outside: its sweep observer and the server it serves on.
Observe = Callable[["Daemon"], Awaitable[tuple[SweepObserver, asyncio.Server]]]


async def forget_ltp_receipts(cycle: Cycle) -> object:
    """Receipts of applied LTP flushes only need to outlive the flushes' retries."""
    await cycle.store.forget_ltp_flushes()
    return None


async def merge_duplicates(cycle: Cycle) -> object:
    """Duplicates that plain SQL or COPY inserted, merged before the sweep sees them
    (near-duplicate vectors too, with dedup.near)."""
    near = cycle.engine.settings.dedup.near
    return await cycle.engine.merge(near=near, trigger="daemon")


async def purge_old_tombstones(cycle: Cycle) -> object:
    """With retention.purge_after_days set: memories pruned longer ago, hard-deleted."""
    now = await cycle.engine.now()
    cutoff = purge_cutoff(cycle.engine.settings, now)
    if cutoff is None:
        return None
    return await cycle.engine.purge(cutoff, now=now, trigger="daemon")


async def decay_sweep(cycle: Cycle) -> object:
    sweep = cycle.engine.sweep(trigger="daemon", daemon_id=cycle.daemon_id, stop=cycle.stop)
    return await observed(cycle.metrics, "due", sweep)


async def observed(
    metrics: SweepObserver | None, mode: str, sweep: Awaitable[SweepReport]
) -> SweepReport:
    """A daemon sweep, counted in the metrics (when they are served); rows it left for
    the next sweep because another transaction held them are logged (decision 0022)."""
    try:
        report = await sweep
    except Exception:
        if metrics is not None:
            metrics.failed("daemon", mode)
        raise
    if metrics is not None:
        metrics.observe(report, "daemon")
    for table, counts in report.tables.items():
        if counts.held:
            log.warning("sweep_rows_held", table=table, rows=counts.held, mode=mode,
                        now=report.now.isoformat())  # fmt: skip
    return report


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        url: str | None = None,
        steps_before_sweep: Sequence[Step] = (),
        observe: Observe | None = None,
    ) -> None:
        self.settings = settings
        self.url = url
        self._observe = observe
        # The decay sweep is always the last step: deduplication, promotion and the like
        # slot in before it.
        self.steps: list[Step] = [
            forget_ltp_receipts,
            purge_old_tombstones,
            merge_duplicates,
            *steps_before_sweep,
            decay_sweep,
        ]
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._store: Store | None = None
        self._engine: Engine | None = None
        self._leader = False
        self._due_at: datetime | None = None
        self._deferred_for: datetime | None = None
        self._pruning: asyncio.Task[None] | None = None
        self._leader_since = 0.0  # time.monotonic() when it took the lock
        self.metrics: SweepObserver | None = None

    @property
    def store(self) -> Store | None:
        return self._store

    readings = store  # what the metrics read: the store, once connected

    @property
    def leading(self) -> bool:
        """Whether this daemon holds the leader lock."""
        return self._leader

    @property
    def leading_for_seconds(self) -> float:
        return time.monotonic() - self._leader_since if self._leader else 0.0

    def ltp_stats(self) -> LtpStats | None:
        return self._engine.ltp.stats if self._engine is not None else None

    def ltp_backlog(self) -> int:
        return self._engine.ltp.backlog if self._engine is not None else 0

    def ltp_held(self) -> Held | None:
        """What LTP leaves waiting on rows other transactions hold (decision 0022)."""
        return self._engine.ltp.held if self._engine is not None else None

    async def health(self, timeout_seconds: float) -> tuple[int, dict[str, Any]]:
        """(HTTP status, why): healthy while the database answers within the timeout and
        a leader's last sweep is no older than interval + max_defer (a standby is
        healthy); degraded, still 200, while retrievals were set aside in the last hour."""
        store = self._store
        if store is None:
            return 503, {"status": "unhealthy", "reason": "not connected to the database yet"}
        try:
            async with asyncio.timeout(timeout_seconds):
                now = await store.now()
                last = await store.last_sweep_finished()
                _, recent = await store.dead_letters(DEAD_LETTER_WINDOW_SECONDS)
        except (DatabaseError, TimeoutError) as exc:
            reason = str(exc) or f"no answer within {timeout_seconds:g} s"
            return 503, {"status": "unhealthy", "reason": f"database: {reason}"}
        role = "leader" if self.leading else "standby"
        c = self.settings.daemon
        limit = c.interval_seconds + c.max_defer_seconds
        age = (now - last).total_seconds() if last else None
        if role == "leader" and self.leading_for_seconds > limit and (age is None or age > limit):
            since = "never" if age is None else f"{age:.0f} s ago"
            return 503, {"status": "unhealthy", "role": role,
                         "reason": f"last sweep {since}; limit {limit:g} s"}  # fmt: skip
        health = {"status": "ok", "role": role, "last_sweep_age_seconds": age}
        if recent:  # working, but some retrievals could not be applied: look at them
            reason = f"{recent} retrievals set aside in retrieval_dead_letters in the last hour"
            health |= {"status": "degraded", "reason": reason}
        return 200, health

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set, then stop gracefully: the batch in flight finishes,
        the LTP buffer is flushed, the sweep is recorded and the connections close.
        Cancelling run() asks for the same stop. Either way the loop gets
        daemon.shutdown_timeout_seconds; past that it is cancelled and
        DaemonStopTimeout is raised."""
        served = await self._serve_metrics()
        loop = asyncio.create_task(self._loop(stop), name="ethos-daemon")
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({loop, stopping}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            stop.set()
            await self._wind_down(loop)
            raise
        finally:
            stopping.cancel()
            if served is not None:
                served.close()
        if not loop.done():
            await self._wind_down(loop)
        loop.result()

    async def _serve_metrics(self) -> asyncio.Server | None:
        """What watches this daemon from outside (the metrics adapter, given by the CLI),
        started; None: nothing does."""
        if self._observe is None:
            return None
        self.metrics, served = await self._observe(self)
        return served

    async def _wind_down(self, loop: asyncio.Task[None]) -> None:
        timeout = self.settings.daemon.shutdown_timeout_seconds
        try:
            await asyncio.wait_for(asyncio.shield(loop), timeout)
        except TimeoutError:
            loop.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(loop, CANCEL_GRACE_SECONDS)
            raise DaemonStopTimeout(f"the daemon did not stop within {timeout}s") from None

    async def _loop(self, stop: asyncio.Event) -> None:
        c = self.settings.daemon
        log.info("daemon_started", daemon_id=self.id, interval_seconds=c.interval_seconds)
        failures = 0
        try:
            while not stop.is_set():
                try:
                    wait = await self._tick(stop)
                    failures = 0
                except TransientDatabaseError as exc:
                    failures += 1
                    wait = self._backoff(failures)
                    log.warning(
                        "daemon_database_unavailable",
                        error=str(exc),
                        retry_in_seconds=round(wait, 2),
                        failures=failures,
                    )
                    await self._drop_lock()
                except Exception as exc:
                    # A refused statement (DatabaseError: a missing schema, say) is worth
                    # trying again soon; anything else is a bug: wait a full interval.
                    failures += 1
                    wait = (
                        self._backoff(failures)
                        if isinstance(exc, DatabaseError)
                        else c.interval_seconds
                    )
                    log.error(
                        "daemon_cycle_error",
                        error=f"{type(exc).__name__}: {exc}",
                        retry_in_seconds=round(wait, 2),
                    )
                await _wait(stop, wait)
        finally:
            await self._shutdown()

    def _backoff(self, failures: int) -> float:
        """Capped exponential backoff with jitter."""
        cap = self.settings.daemon.retry_max_seconds
        return float(min(cap, 0.5 * 2 ** min(failures, 16)) * random.uniform(0.5, 1.0))

    async def _tick(self, stop: asyncio.Event) -> float:
        """One turn of the loop; returns how long to wait before the next."""
        c = self.settings.daemon
        engine, store = await self._open()
        leader = await self._hold_lock(store)
        await self._heartbeat(engine, store, "leader" if leader else "standby")
        if not leader:
            return c.standby_poll_seconds
        if self._pruning is None or self._pruning.done():
            self._pruning = asyncio.create_task(self._prune_passes(engine, stop))
        now = await engine.now()
        if self._due_at is None:
            last = await store.last_sweep_finished()
            self._due_at = last + self._interval() if last else now
        if now >= self._due_at:
            overdue = now >= self._due_at + timedelta(seconds=c.max_defer_seconds)
            if overdue or await store.is_idle(c.idle_seconds):
                await self._cycle(engine, store, stop, overdue=overdue)
                self._due_at = await engine.now() + self._interval()
                await self._heartbeat(engine, store, "leader")
            elif self._deferred_for != self._due_at:
                self._deferred_for = self._due_at
                log.info("decay_sweep_deferred", reason="busy", due_at=self._due_at.isoformat())
        until_due = (self._due_at - now).total_seconds()
        if until_due <= 0:  # due but deferred: look again at the next heartbeat
            until_due = c.heartbeat_seconds
        return max(0.05, min(c.heartbeat_seconds, until_due))

    async def _cycle(
        self, engine: Engine, store: Store, stop: asyncio.Event, *, overdue: bool
    ) -> None:
        cycle = Cycle(
            engine=engine, store=store, daemon_id=self.id, stop=stop, metrics=self.metrics
        )
        log.debug("consolidation_cycle", daemon_id=self.id, overdue=overdue)
        # A long sweep must not look like a dead daemon: keep the heartbeat going.
        beating = asyncio.create_task(self._beat_during_cycle(engine, store))
        try:
            for step in self.steps:
                if stop.is_set():
                    return
                await step(cycle)
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating

    async def _prune_passes(self, engine: Engine, stop: asyncio.Event) -> None:
        """A prune pass every prune_interval_seconds while this daemon leads. A failed
        pass is logged and tried again at the next interval (the main loop sees an
        outage and drops the lead, which ends this task)."""
        interval = self.settings.daemon.prune_interval_seconds
        await _wait(stop, interval)  # a new leader sweeps first, when it can
        while not stop.is_set() and self._leader:
            try:
                sweep = engine.sweep(mode="prune", trigger="daemon", daemon_id=self.id, stop=stop)
                await observed(self.metrics, "prune", sweep)
            except DatabaseError as exc:
                log.warning("prune_pass_failed", error=str(exc))
            await _wait(stop, interval)

    async def _beat_during_cycle(self, engine: Engine, store: Store) -> None:
        while True:
            await asyncio.sleep(self.settings.daemon.heartbeat_seconds)
            with contextlib.suppress(DatabaseError):
                await self._heartbeat(engine, store, "leader")

    def _interval(self) -> timedelta:
        c = self.settings.daemon
        return timedelta(seconds=c.interval_seconds * random.uniform(1 - c.jitter, 1 + c.jitter))

    async def _open(self) -> tuple[Engine, Store]:
        """The daemon's store (its pools and its lock connection) and the engine that
        works through it, opened on the first tick and kept."""
        settings = with_daemon_statement_timeout(self.settings)
        if self._store is None:
            url = self.url or await db.resolve_url(settings)
            self._store = await Store.open(settings, url)
        if self._engine is None:
            engine = Engine(settings, store=self._store, drains_queue=True)
            await engine.__aenter__()
            self._engine = engine
        return self._engine, self._store

    async def _hold_lock(self, store: Store) -> bool:
        """True while this daemon holds the leader lock; tries to take it otherwise."""
        was_leader = self._leader
        self._leader = await store.try_leader_lock()
        if was_leader and not self._leader:
            await self._stop_pruning()
        if self._leader and not was_leader:
            log.info("daemon_took_leader_lock", daemon_id=self.id)
            self._leader_since = time.monotonic()
            self._due_at = None  # recomputed from the sweeps the previous holder made
        return self._leader

    async def _drop_lock(self) -> None:
        await self._stop_pruning()
        if self._store is not None:
            await self._store.release_leader_lock()
        self._leader = False

    async def _stop_pruning(self) -> None:
        pruning, self._pruning = self._pruning, None
        if pruning is not None:
            pruning.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pruning

    async def _heartbeat(self, engine: Engine, store: Store, role: str) -> None:
        await store.heartbeat(
            self.id,
            host=socket.gethostname(),
            pid=os.getpid(),
            role=role,
            next_sweep_due=self._due_at if role == "leader" else None,
            ltp_backlog=engine.ltp.backlog,
            ltp_dropped=engine.ltp.stats.dropped,
        )

    async def _shutdown(self) -> None:
        await self._stop_pruning()
        engine, self._engine = self._engine, None
        store, self._store = self._store, None
        if engine is not None:
            await engine.close()  # drains the LTP buffer
        if store is not None:
            with contextlib.suppress(DatabaseError):
                await store.daemon_stopped(self.id)
            await store.close()
        self._leader = False
        log.info("daemon_stopped", daemon_id=self.id)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep that ends as soon as `stop` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
