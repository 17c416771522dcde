"""Long-term potentiation and feedback, fire-and-forget and never lost: the buffer.

What happens to memories (retrievals, search hits, useful and wrong feedback) is
recorded into an in-memory buffer at once; a background task applies it (ethos.services.ltp_flush
says what a flush writes) in set-based UPDATEs, one transaction per flush. A failed
flush is requeued and retried with backoff, with the same id, and applied exactly once;
closing drains the buffer. Events of an agent one of whose rows another transaction
holds wait in the buffer (the queue's, in the queue), tried again every
HELD_RETRY_SECONDS, and go to the durable queue if the buffer closes first (decision
0022). What cannot be applied is counted and logged, never silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import structlog

from ethos.db.store import Store
from ethos.domain.errors import DatabaseError, InputError, TransientDatabaseError
from ethos.domain.tables import TableSpec
from ethos.services.ltp_flush import (
    COUNTED,
    KINDS,
    Deferred,
    Events,
    Group,
    Kind,
    LtpResult,
    Pending,
    apply_queued,
    apply_retrievals,
    event_of,
    group_of,
    kinds_of,
)
from ethos.settings import Settings

log = structlog.get_logger("ethos.services.ltp")

# Queued events applied per transaction: many, since events of one row at one moment
# coalesce into one write, and queued events arrive one SQL call at a time.
QUEUE_BATCH = 50_000
# Events waiting on a row another transaction holds are tried again this often; while
# they wait, `ltp_events_held` is logged this often.
HELD_RETRY_SECONDS = 0.25
HELD_LOG_SECONDS = 60.0


@dataclass
class LtpStats:
    recorded: int = 0  # retrievals, hits and feedback accepted into the buffer
    unmatched: int = 0  # of them, hits found only through others: counted, not reinforced
    applied: int = 0  # of them, written to their rows
    skipped: int = 0  # of unknown or pruned rows (nothing to write)
    promoted: int = 0  # memories moved to another policy by a retrieval (promote_after)
    pruned: int = 0  # memories that wrong feedback brought below their threshold
    links: int = 0  # link updates (pairs) written
    set_aside: int = 0  # refused by the database for good: in retrieval_dead_letters
    dropped: int = 0  # what could not be buffered, applied or set aside
    queued: int = 0  # of the recorded, written to the durable queue (ltp.durable)
    failed_flushes: int = 0
    held: int = 0  # events left for a later flush, each time (a row of their agent was held)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _Batch:
    """What one flush applies, kept with its flush id until it is applied: a retry
    after an in-doubt commit must not apply it twice."""

    flush_id: uuid.UUID
    pending: Pending
    groups: list[Group] = field(default_factory=list)
    size: int = 0
    # what its last try left for later (a held row), known before that try's COMMIT
    deferred: Deferred = field(default_factory=Deferred)


@dataclass
class Held:
    """What waits on rows other transactions hold: the buffer's events (with the groups
    they teach links in), and the queue's agents; since when (time.monotonic())."""

    events: Deferred = field(default_factory=Deferred)
    since: float | None = None
    retry_at: float = 0.0
    agents: dict[str, float] = field(default_factory=dict)  # queue: agent -> held since
    tried: dict[str, float] = field(default_factory=dict)  # queue: agent -> last tried
    logged_at: float = float("-inf")

    @property
    def oldest_wait_seconds(self) -> float:
        starts = [*self.agents.values(), *([self.since] if self.since is not None else [])]
        return time.monotonic() - min(starts) if starts else 0.0

    @property
    def size(self) -> int:
        return self.events.units + sum(group.pairs for group in self.events.groups)


class LtpBuffer:
    def __init__(self, store: Store, settings: Settings, *, drains_queue: bool = False) -> None:
        self._store = store
        self._settings = settings
        # Also apply the durable queue every flush interval (the daemon's buffer). A
        # durable buffer's own events wait there for the daemon, or for its close.
        self._drains_queue = drains_queue
        self._pending: Pending = defaultdict(dict)
        self._groups: list[Group] = []
        self._retry: _Batch | None = None
        # events whose enqueue's answer never came, each call's under its receipt
        self._in_doubt: list[_Batch] = []
        self._size = 0  # events and pair updates not yet applied: pending, in doubt, in retry
        self._wake = asyncio.Event()
        self._space = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self.held = Held()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.stats = LtpStats()

    @property
    def backlog(self) -> int:
        """Events and link updates waiting to be applied."""
        return self._size

    def start(self) -> None:
        # The task is referenced here: the event loop itself keeps only a weak reference.
        self._task = asyncio.create_task(self._run(), name="ethos-ltp-flush")
        self._task.add_done_callback(_report_crash)

    async def record(
        self,
        spec: TableSpec,
        ids: Iterable[uuid.UUID],
        at: datetime,
        kind: Kind = "retrieval",
        agent: str | None = None,
    ) -> None:
        """Buffer events of `agent`'s memories (None: of every agent's memory with the
        id): a repeated id counts as repeated events. A search's hits ("surfaced") and
        feedback on several ids also teach their links. Waits up to
        ltp.full_wait_seconds when the buffer is full, then drops (and counts) them."""
        if kind not in KINDS:
            raise InputError(f"unknown event {kind!r}: use one of {', '.join(KINDS)}")
        ids = list(ids)
        ltp = self._settings.ltp
        # A table the flush could not write fails its caller now, not the flush later.
        ltp.boost(spec)
        await self._store.check_table(spec)
        group = group_of(((spec, i, agent) for i in ids), at, kind, self._settings)
        queued = await self._enqueue(spec, ids, at, kind, group, agent) if ltp.durable else False
        if queued is True:
            return
        receipt = queued or None  # the enqueue's flush id, where it is in doubt
        count = len(ids) + (group.pairs if group else 0)
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
        event = event_of(kind, self._settings)
        pending = self._pending if receipt is None else defaultdict(dict)
        for memory_id in ids:
            pending[(spec, memory_id, agent)].setdefault(at, Events()).add(event)
        if receipt is not None:
            self._in_doubt.append(_Batch(receipt, pending, [group] if group else [], count))
        elif group is not None:
            self._groups.append(group)
        self._size += count
        self._accepted(kind, len(ids))
        if len(self._pending) >= ltp.flush_max_rows:
            self._wake.set()

    async def _enqueue(
        self, spec: TableSpec, ids: list[uuid.UUID], at: datetime, kind: Kind,
        group: Group | None, agent: str | None,
    ) -> bool | uuid.UUID:  # fmt: skip
        """Durable: True when the events are in the database queue. False when the
        database refused them: they go to the memory buffer, as without durable. A flush
        id when its answer never came (the database away, or the connection broken
        around the COMMIT): the events may be queued, and are buffered as a flush of
        their own under the receipt the enqueue writes with them, which applies them
        at most once (while the receipt is kept: a day)."""
        receipt = uuid.uuid4()
        try:
            await self._store.enqueue(
                spec, ids, at, kind, uuid.uuid4() if group else None, agent, receipt
            )
        except TransientDatabaseError as exc:
            log.warning("ltp_durable_fallback", error=str(exc), count=len(ids), in_doubt=True)
            return receipt
        except DatabaseError as exc:
            log.warning("ltp_durable_fallback", error=str(exc), count=len(ids))
            return False
        self._accepted(kind, len(ids))
        self.stats.queued += len(ids)
        self._wake.set()
        return True

    def _accepted(self, kind: Kind, count: int) -> None:
        self.stats.recorded += count
        if kind == "unmatched":
            self.stats.unmatched += count

    async def drain_queue(self) -> bool:
        """Apply what the durable queue holds, batch by batch, until it is empty but for
        the events of agents a row of which another transaction held (tried again after
        HELD_RETRY_SECONDS); False if the database was away (what is queued stays
        queued)."""
        held = self.held
        now = time.monotonic()
        waiting = {a for a, at in held.tried.items() if now - at < HELD_RETRY_SECONDS}
        tried = set(held.agents) - waiting
        while True:
            found = set(waiting)
            try:
                result = await apply_queued(self._store, QUEUE_BATCH, found)
            except TransientDatabaseError as exc:
                self.stats.failed_flushes += 1
                log.warning("ltp_queue_drain_failed", error=str(exc))
                return False
            except DatabaseError as exc:  # stays queued: an operator must look
                self.stats.failed_flushes += 1
                log.error("ltp_queue_drain_failed", error=str(exc), permanent=True)
                return False
            for agent in found - waiting:  # held now: tried again later
                held.agents.setdefault(agent, time.monotonic())
                held.tried[agent] = time.monotonic()
            waiting |= found
            if result is None:
                for agent in tried - waiting:  # tried and no longer held
                    del held.agents[agent], held.tried[agent]
                self._report_held()
                return True
            self._count(result)

    def _count(self, result: LtpResult) -> None:
        for name in COUNTED:
            setattr(self.stats, name, getattr(self.stats, name) + getattr(result, name))

    async def flush(self) -> bool:
        """Apply what is buffered now (at most ltp.flush_max_rows rows, a row being one
        memory at one moment, and the links learnt meanwhile); False if the database
        was away, in which case the same batch, with the same flush id, is the next one
        tried."""
        async with self._flush_lock:
            if self._retry is None:
                batch = self._take(self._settings.ltp.flush_max_rows)
                if batch is None:
                    return True
                self._retry = batch
            batch = self._retry
            try:
                result = await apply_retrievals(
                    self._store, batch.pending, batch.flush_id, batch.groups, batch.deferred
                )
            except TransientDatabaseError as exc:
                self.stats.failed_flushes += 1
                log.warning("ltp_update_failed", error=str(exc), backlog=self._size)
                return False
            except DatabaseError as exc:
                # Retrying will not change the answer: count and log what is lost.
                self._settle(batch.size)
                self.stats.dropped += batch.size
                log.error("ltp_update_failed", error=str(exc), dropped=batch.size, permanent=True)
                return True
            self._settle(batch.size)
            if result.replayed:
                log.warning("ltp_flush_replayed", flush_id=str(batch.flush_id), count=batch.size)
            self._count(result)
            self._wait_for_held(batch.deferred)
            return True

    def _wait_for_held(self, deferred: Deferred) -> None:
        """Events a flush left for later (a row of their agent was held) wait in the
        buffer, tried again after HELD_RETRY_SECONDS; logged while they do."""
        held = self.held
        if not deferred.pending and not deferred.groups:
            if held.since is not None and not held.events.pending:
                log.info("ltp_events_released", waited_seconds=round(
                    time.monotonic() - held.since, 3))  # fmt: skip
                held.since, held.logged_at = None, float("-inf")
            return
        events = held.events
        for key, moments in deferred.pending.items():
            target = events.pending.setdefault(key, {})
            for at, e in moments.items():
                target.setdefault(at, Events()).add(e)
        events.groups += deferred.groups
        events.agents |= deferred.agents
        self._size += deferred.units + sum(group.pairs for group in deferred.groups)
        now = time.monotonic()
        held.since = now if held.since is None else held.since
        held.retry_at = now + HELD_RETRY_SECONDS
        self._report_held()

    def _report_held(self) -> None:
        """`ltp_events_held`, when events wait on a held row: at once, then every
        HELD_LOG_SECONDS while they do."""
        held = self.held
        now = time.monotonic()
        if not (held.events.pending or held.agents) or now - held.logged_at < HELD_LOG_SECONDS:
            return
        held.logged_at = now
        agents = sorted({*held.agents, *(a or "(any)" for a in held.events.agents)})
        log.warning(
            "ltp_events_held", events=held.events.units, queued_agents=len(held.agents),
            agents=agents[:5], tables=held.events.tables,
            oldest_wait_seconds=round(held.oldest_wait_seconds, 3),
        )  # fmt: skip

    async def drain(self, timeout_seconds: float) -> None:
        """Flush until empty, retrying with backoff (events waiting on a held row: every
        HELD_RETRY_SECONDS), for at most timeout_seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_seconds
        failures = 0
        while self._size and loop.time() < deadline:
            if not self._ready():  # only events waiting on a held row
                pause = self.held.retry_at - time.monotonic()
            elif await self.flush():
                failures = 0
                continue
            else:
                failures += 1
                pause = self._backoff(failures)
            await asyncio.sleep(min(max(pause, 0.0), max(deadline - loop.time(), 0)))

    def _ready(self) -> bool:
        """Whether a flush has something to try now."""
        waiting = self.held.events.pending or self.held.events.groups
        return self._size > self.held.size or bool(
            waiting and time.monotonic() >= self.held.retry_at
        )

    async def _queue_held(self) -> None:
        """Closing: events still waiting on a held row go to the durable queue, where a
        daemon applies them once the row is free (groups' links are not kept there)."""
        events = self.held.events
        for (spec, memory_id, agent), moments in events.pending.items():
            for at, kind, n in kinds_of(moments, self._settings):
                try:
                    await self._store.enqueue(spec, [memory_id] * n, at, kind, None, agent,
                                              uuid.uuid4())  # fmt: skip
                except DatabaseError as exc:
                    log.error("ltp_dropped", reason=f"held, and not queued: {exc}", count=n)
                    self.stats.dropped += n
                else:
                    self.stats.queued += n
        pairs = sum(group.pairs for group in events.groups)
        if pairs:
            log.warning("ltp_links_dropped", reason="held until the buffer closed", pairs=pairs)
            self.stats.dropped += pairs
        self._size -= self.held.size
        self.held.events = Deferred()
        self.held.since = None

    async def close(self) -> None:
        """Stop the background task, then apply everything still buffered."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.drain(self._settings.ltp.close_timeout_seconds)
        if self.held.events.pending or self.held.events.groups:
            await self._queue_held()
        if self._drains_queue or self._settings.ltp.durable:
            await self.drain_queue()
        if self._size:
            self.stats.dropped += self._size
            log.error(
                "ltp_dropped", reason="closed before the database took them", count=self._size
            )
            self._pending.clear()
            self._groups.clear()
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
            while self._ready() and not self._stopping:
                backlog = self._size
                if not await self.flush():
                    failures += 1
                    break
                failures = 0
                if self._size >= backlog:  # what it took waits on a held row
                    break
            if self._drains_queue and not self._stopping and not await self.drain_queue():
                failures += 1

    def _backoff(self, failures: int) -> float:
        """Capped exponential backoff with jitter."""
        cap = self._settings.ltp.retry_max_seconds
        return float(min(cap, 0.05 * 2**failures) * random.uniform(0.5, 1.0))

    def _take(self, max_rows: int) -> _Batch | None:
        if self._in_doubt:
            return self._in_doubt.pop(0)
        held = self.held
        if (held.events.pending or held.events.groups) and time.monotonic() >= held.retry_at:
            # the events waiting on a held row, tried again with what came since
            for key, moments in held.events.pending.items():
                target = self._pending.setdefault(key, {})
                for at, e in moments.items():
                    target.setdefault(at, Events()).add(e)
            self._groups += held.events.groups
            held.events = Deferred()
        if not self._pending and not self._groups:
            return None
        pending = {key: self._pending.pop(key) for key in list(self._pending)[:max_rows]}
        groups, self._groups = self._groups, []
        size = sum(e.units for m in pending.values() for e in m.values())
        size += sum(g.pairs for g in groups)
        return _Batch(uuid.uuid4(), pending, groups, size)

    def _settle(self, count: int) -> None:
        """The batch in retry is done with (applied, or given up): its room is free for
        the callers waiting in record()."""
        self._retry = None
        self._size -= count
        self._space.set()


def _report_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("ltp_task_crashed", error=repr(task.exception()))
