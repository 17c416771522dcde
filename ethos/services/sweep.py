"""The decay sweep, computed in PostgreSQL, in batches that are each a transaction.

A sweep only materializes salience (the row's curve is a function of its stored state and
`now`) and prunes; it never changes the state, so any cadence gives the same values.
Three modes:

- due (the default): only the rows whose next write is due (their stored value drifts
  past the tolerance, they fall below the threshold, or expire), popped from their
  hints; its cost follows the work, not the table. A table whose live rows are nearly
  all due is swept whole instead, as a full sweep does. `sweep.workers` connections share
  the 16 slices of the rows, each slice held by an advisory lock.
- prune: the same, for rows due to be pruned only: cheap enough to run every minute.
- full: every live row in keyset batches (verification and repair; also what a sweep of
  one agent, or a dry run, does); the tables' ids are cut into ranges that
  `sweep.workers` connections take in turn.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

import structlog

from ethos.db.store import SLICES, BatchResult, Store, SweepStore, SweepWorker
from ethos.domain.errors import TransientDatabaseError
from ethos.domain.tables import MEMORY_TABLES, TableSpec, table_spec
from ethos.settings import Settings

Mode = Literal["due", "prune", "full"]
MODES: tuple[Mode, ...] = ("due", "prune", "full")

log = structlog.get_logger("ethos.services.sweep")

# A batch that loses a deadlock is tried again this often before the sweep gives up.
BATCH_ATTEMPTS = 3

# Called after each batch with (table, rows scanned so far in that table, table done).
Progress = Callable[[str, int, bool], None]
T = TypeVar("T")


# A due sweep takes a table whole, as a full sweep does, when at least this share of a
# sample of its live rows is due, and its hints name at least this many rows.
MOSTLY_DUE = 0.9
MOSTLY_DUE_ROWS = 10_000


@dataclass
class TableCounts:
    scanned: int = 0
    updated: int = 0
    pruned: int = 0
    expired: int = 0  # of the pruned, by expires_at (the others by decay)
    held: int = 0  # due, not written: another transaction held them (for the next sweep)
    whole: bool = False  # every live row read in keyset ranges (full, or nearly all due)


@dataclass
class SweepReport:
    now: datetime
    dry_run: bool
    mode: Mode = "due"
    counts: dict[TableSpec, TableCounts] = field(default_factory=dict)
    duration_ms: int = 0
    status: str = "completed"
    run_id: int | None = None
    links_removed: int = 0  # links faded below links.prune_weight

    @property
    def tables(self) -> dict[str, TableCounts]:
        """The counts by table name."""
        return {spec.name: c for spec, c in self.counts.items()}

    def totals(self) -> tuple[int, int, int]:
        counts = self.counts.values()
        return (
            sum(c.scanned for c in counts),
            sum(c.updated for c in counts),
            sum(c.pruned for c in counts),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(),
            "mode": self.mode,
            "dry_run": self.dry_run,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "tables": {name: asdict(counts) for name, counts in self.tables.items()},
            "links_removed": self.links_removed,
        }

    def summary(self) -> str:
        """The runbook's line: `15 vectors (2 pruned), 8 episodes (0 pruned), ... in 45ms`."""
        parts = [
            f"{c.scanned} {spec.plural} ({c.pruned} pruned)" for spec, c in self.counts.items()
        ]
        links = f", {self.links_removed} faded links removed" if self.links_removed else ""
        return f"{', '.join(parts)}{links} in {self.duration_ms}ms"


async def run_sweep(
    store: Store,
    settings: Settings,
    *,
    now: datetime | None = None,
    tables: Sequence[TableSpec] = MEMORY_TABLES,
    agent: str | None = None,
    dry_run: bool = False,
    mode: Mode = "due",
    trigger: str,  # who asked: the engine's caller says (ethos.services.engine.core.TRIGGER)
    daemon_id: str | None = None,
    stop: asyncio.Event | None = None,
    progress: Progress | None = None,
) -> SweepReport:
    """Sweep `tables` at one fixed `now` (the database's clock by default).

    A sweep of one agent, or a dry run, is a full sweep (the schedule's hints are not
    kept per agent, and a dry run takes none); a dry run still reports the mode it was
    asked for, and for a prune pass counts only the rows it would prune. `stop` is
    checked between batches: a set event ends the sweep at the next batch boundary, with
    status `interrupted`; so does a cancellation, wherever it lands (the audit row is
    written all the same). A prune pass is recorded in `sweep_runs` only when it pruned
    something (or failed): the rows it only looked at again (new ones, hinted at once)
    are bookkeeping, and a pass a minute would bury the sweeps in the audit.
    """
    asked = mode
    if agent is not None or dry_run:
        mode = "full"
    now = now or await store.now()
    specs = [table_spec(t) for t in tables]
    for spec in specs:  # a table unfit for ethos fails here, before the audit row
        await store.check_table(spec)
    report = SweepReport(now=now, dry_run=dry_run, mode=mode)
    report.counts = {spec: TableCounts() for spec in specs}
    started = time.monotonic()
    run = (trigger, mode, now, agent, daemon_id)
    if not dry_run and mode != "prune":
        report.run_id = await store.start_sweep_run(*run)
    error: str | None = None
    try:
        parts = await store.sweep_parts(agent)
        if len(parts) == 1:
            await _sweep_part(
                parts[0], settings, specs, report, agent, stop, progress, settings.sweep.workers
            )
        else:
            await _sweep_cluster(parts, settings, specs, report, agent, stop, progress)
        if stop is not None and stop.is_set():
            report.status = "interrupted"
        if dry_run:
            report.mode = asked
            await _as_asked(parts, report, agent)
    except asyncio.CancelledError:
        # A stop, not a failure: what the batches committed is kept and counted.
        report.status = "interrupted"
        raise
    except BaseException as exc:
        report.status = "failed"
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        report.duration_ms = round((time.monotonic() - started) * 1000)
        worked = report.totals()[2] > 0 or report.status == "failed"
        if report.run_id is not None or (mode == "prune" and not dry_run and worked):
            # The audit row must be written even when the sweep is being cancelled.
            await asyncio.shield(_record(store, report, run, error))
        _log_report(report, trigger, error)
    return report


async def _as_asked(parts: Sequence[SweepStore], report: SweepReport, agent: str | None) -> None:
    """A dry run reads every live row (it pops no hint); it reports what the sweep asked
    for would do at its moment, so that `sweep --dry-run` and `sweep` agree: a prune
    pass looks only at the rows it prunes, a due sweep only at its due rows (each of
    them written), unless it takes the table whole. A sweep of one agent is full."""
    for spec, counts in report.counts.items():
        if report.mode == "prune":  # a prune pass refreshes nothing: only its prunes count
            counts.updated = counts.pruned
        elif report.mode == "due" and agent is None:
            whole = [await _mostly_due(part, spec, report.now) for part in parts]
            if not any(whole):
                counts.scanned, counts.whole = counts.updated, False


async def _record(
    store: Store,
    report: SweepReport,
    run: tuple[str, Mode, datetime, str | None, str | None],
    error: str | None,
) -> None:
    """A sweep's audit row finished (a prune pass's made first: it is made only once
    the pass has something to show)."""
    if report.run_id is None:
        report.run_id = await store.start_sweep_run(*run)
    await store.finish_sweep_run(
        report.run_id,
        status=report.status,
        totals=report.totals(),
        tables={
            **{name: asdict(c) for name, c in report.tables.items()},
            "memory_links": {"removed": report.links_removed},
        },
        error=error,
    )


async def _sweep_part(
    part: SweepStore,
    settings: Settings,
    specs: Sequence[TableSpec],
    report: SweepReport,
    agent: str | None,
    stop: asyncio.Event | None,
    progress: Progress | None,
    workers: int,
) -> None:
    """Sweep `specs` on one part, on `workers` connections at once."""
    mode = report.mode
    whole = specs if mode == "full" else []
    if mode == "due":
        mostly = await _together(_mostly_due(part, spec, report.now) for spec in specs)
        whole = [spec for spec, due in zip(specs, mostly, strict=True) if due]
    if whole:
        await _sweep_tables(part, settings, whole, report, agent, stop, progress, workers)
        if stop is not None and stop.is_set():
            return
    # A table taken whole is drained by its hints too: the rows a concurrent write
    # changed under the keyset pass were hinted at now, to be written in this sweep.
    rest = specs if mode != "full" else []
    if rest:
        # A prune pass is light: one connection takes every slice.
        sweepers = 1 if mode == "prune" else workers
        await _together(
            _sweep_slices(part, settings, rest, report, slices, stop, progress)
            for slices in ([s for s in range(SLICES) if s % sweepers == i]
                           for i in range(sweepers))
        )  # fmt: skip
        if progress is not None:
            for spec in rest:
                progress(spec.name, report.counts[spec].scanned, True)
    if mode != "prune" and not report.dry_run and not (stop is not None and stop.is_set()):
        report.links_removed += await _remove_faded_links(part, settings, report.now)


async def _sweep_cluster(
    parts: Sequence[SweepStore],
    settings: Settings,
    specs: Sequence[TableSpec],
    report: SweepReport,
    agent: str | None,
    stop: asyncio.Event | None,
    progress: Progress | None,
) -> None:
    """A Citus cluster's shard groups, each on its node, one connection each:
    `sweep.workers` of them at once on every node; a due sweep or prune pass visits only
    the groups with something due. The counts add up across them; a table is reported
    done when every group has swept it."""
    if report.mode != "full":
        due = await _together(
            part.anything_due(report.now, prune=report.mode == "prune") for part in parts
        )
        parts = [part for part, anything in zip(parts, due, strict=True) if anything]

    def scanned(table: str, rows: int, done: bool) -> None:
        if progress is not None and not done:
            progress(table, rows, False)

    nodes = {part.node: asyncio.Semaphore(settings.sweep.workers) for part in parts}

    async def sweep(part: SweepStore) -> None:
        async with nodes[part.node]:
            if stop is None or not stop.is_set():
                await _sweep_part(part, settings, specs, report, agent, stop, scanned, 1)

    await _together(sweep(part) for part in parts)
    if progress is not None and not (stop is not None and stop.is_set()):
        for spec in specs:
            progress(spec.name, report.counts[spec].scanned, True)


async def _mostly_due(store: SweepStore, spec: TableSpec, now: datetime) -> bool:
    """Whether nearly every live row of a table is due (after a bulk load, an outage, a
    policy edit): then a due sweep takes it whole, in keyset ranges as a full sweep
    does, where its hints would point at every row in an order that costs more to
    follow. The hints' count (at most the rows due) is read first, so a table with
    little due costs no sample."""
    if await store.count_due(spec, now, prune=False) < MOSTLY_DUE_ROWS:
        return False
    share = await store.due_share(spec, now)
    if share is None or share < MOSTLY_DUE:
        return False
    log.info("decay_sweep_mostly_due", table=spec.name, due_share=round(share, 3))
    return True


async def _remove_faded_links(store: SweepStore, settings: Settings, now: datetime) -> int:
    """Links are derived data: those that faded are removed, in batches."""
    limit = settings.decay.batch_size
    removed = 0
    while True:
        batch = await store.remove_faded_links(now, limit)
        removed += batch
        if batch < limit:
            return removed


async def _retrying(batch: Callable[[], Awaitable[BatchResult]], table: str) -> BatchResult:
    for attempt in range(1, BATCH_ATTEMPTS + 1):
        try:
            return await batch()
        except TransientDatabaseError as exc:
            # A deadlock with a concurrent write (or a dropped connection): the batch
            # rolled back whole; the next attempt starts it again.
            if attempt == BATCH_ATTEMPTS:
                raise
            log.warning("decay_sweep_batch_retry", table=table, error=str(exc))
    raise AssertionError("unreachable")


def _add(counts: TableCounts, batch: BatchResult) -> None:
    counts.scanned += batch.scanned
    counts.updated += batch.updated
    counts.pruned += batch.pruned
    counts.expired += batch.expired
    counts.held += batch.held


# A sweep of whole tables cuts each into this many ranges a worker, which the workers
# take in turn: one that finishes early takes the next range, of that table or the
# next, instead of waiting at the table's end for the slowest (on a busy server one
# connection may get far less of a core than another).
RANGES_A_WORKER = 4


async def _sweep_tables(
    store: SweepStore,
    settings: Settings,
    specs: Sequence[TableSpec],
    report: SweepReport,
    agent: str | None,
    stop: asyncio.Event | None,
    progress: Progress | None,
    workers: int,
) -> None:
    """Every live row of `specs`, in keyset batches over ranges of ids that `workers`
    connections take in turn, table after table. A sweep of a whole table cuts its ids
    into ranges of about equal size, hints every row it reads, and once every range of
    the table is through drops the hints it superseded: those written before it began."""
    whole = agent is None and not report.dry_run
    # (one horizon, before any table is read: an earlier one only drops fewer hints,
    # and a stale hint costs its next pop a look at rows not due)
    horizon = await store.hint_horizon() if whole else None
    parts = workers * RANGES_A_WORKER if whole and workers > 1 else 1
    cuts = await _together(store.split_ids(spec, parts) for spec in specs)
    ranges: list[tuple[TableSpec, uuid.UUID | None, uuid.UUID | None]] = []
    left: dict[TableSpec, int] = {}
    for spec, table_cuts in zip(specs, cuts, strict=True):
        report.counts[spec].whole = True
        bounds: list[uuid.UUID | None] = [None, *table_cuts, None]
        ranges += [(spec, after, upto) for after, upto in itertools.pairwise(bounds)]
        left[spec] = len(bounds) - 1
    queue = iter(ranges)

    async def worker() -> None:
        for spec, after, upto in queue:
            if not await _sweep_range(
                store, settings, spec, report, agent, after, upto, stop, progress
            ):
                return
            left[spec] -= 1
            if left[spec] == 0:
                if progress is not None:
                    progress(spec.name, report.counts[spec].scanned, True)
                if horizon is not None:
                    await store.drop_hints_before(spec, horizon)

    await _together(worker() for _ in range(min(workers, len(ranges))))


async def _sweep_range(
    store: SweepStore,
    settings: Settings,
    spec: TableSpec,
    report: SweepReport,
    agent: str | None,
    after: uuid.UUID | None,
    upto: uuid.UUID | None,
    stop: asyncio.Event | None,
    progress: Progress | None,
) -> bool:
    """The live rows of one table after `after` up to `upto`: whether it got to the end
    (not stopped)."""
    limit = settings.decay.batch_size
    counts = report.counts[spec]
    while stop is None or not stop.is_set():
        batch = await _retrying(
            lambda after=after: store.sweep_batch(  # type: ignore[misc]
                spec,
                now=report.now,
                tolerance=settings.decay.refresh_tolerance,
                after=after,
                upto=upto,
                limit=limit,
                agent=agent,
                dry_run=report.dry_run,
            ),
            spec.name,
        )
        _add(counts, batch)
        if batch.scanned < limit:
            return True
        if progress is not None:
            progress(spec.name, counts.scanned, False)
        after = batch.last_id
    return False


async def _together(works: Iterable[Awaitable[T]]) -> list[T]:
    """Run `works` at once; the first to fail cancels the others (each releases its
    connection) and its error is raised."""
    tasks = [asyncio.ensure_future(work) for work in works]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _sweep_slices(
    store: SweepStore,
    settings: Settings,
    specs: Sequence[TableSpec],
    report: SweepReport,
    slices: list[int],
    stop: asyncio.Event | None,
    progress: Progress | None,
) -> None:
    """One worker: the due rows of the slices it can hold, table by table, until no
    hint of them is due."""
    async with store.sweep_worker(slices, prune=report.mode == "prune") as worker:
        if worker.slices != slices:
            log.info("decay_sweep_slices_busy", held=worker.slices, wanted=slices)
        if not worker.slices:
            return
        for spec in specs:
            await _drain_due(worker, settings, spec, report, stop, progress)
            if stop is not None and stop.is_set():
                return


async def _drain_due(
    worker: SweepWorker,
    settings: Settings,
    spec: TableSpec,
    report: SweepReport,
    stop: asyncio.Event | None,
    progress: Progress | None,
) -> None:
    counts = report.counts[spec]
    while stop is None or not stop.is_set():
        batch = await _retrying(
            lambda: worker.due_batch(
                spec,
                now=report.now,
                tolerance=settings.decay.refresh_tolerance,
                prune=report.mode == "prune",
                limit=settings.decay.batch_size,
            ),
            spec.name,
        )
        _add(counts, batch)
        if batch.popped == 0:
            return
        if progress is not None:
            progress(spec.name, counts.scanned, False)


def _log_report(report: SweepReport, trigger: str, error: str | None) -> None:
    scanned, updated, pruned = report.totals()
    fields = {
        "trigger": trigger,
        "mode": report.mode,
        "now": report.now.isoformat(),
        "dry_run": report.dry_run,
        "scanned": scanned,
        "updated": updated,
        "pruned": pruned,
        "duration_ms": report.duration_ms,
        "summary": report.summary(),
    }
    if error is not None:
        log.error("decay_sweep_error", error=error, status=report.status, **fields)
    elif report.status == "interrupted":
        log.warning("decay_sweep_interrupted", **fields)
    else:
        log.info("decay_sweep_complete", **fields)
