"""The decay sweep: every live row of each table, in keyset batches, computed in PostgreSQL.

A sweep only materializes salience (the row's curve is a function of its stored state and
`now`) and prunes; it never changes the state. Running it twice at one `now` writes
nothing, and any cadence gives the same values.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import structlog

from ethos.errors import TransientDatabaseError
from ethos.settings import Settings
from ethos.store import Store
from ethos.tables import MEMORY_TABLES, TableSpec, table_spec

log = structlog.get_logger("ethos.sweep")

# A batch that loses a deadlock is tried again this often before the sweep gives up.
BATCH_ATTEMPTS = 3

# Called after each batch with (table, rows scanned so far in that table, table done).
Progress = Callable[[str, int, bool], None]


@dataclass
class TableCounts:
    scanned: int = 0
    updated: int = 0
    pruned: int = 0


@dataclass
class SweepReport:
    now: datetime
    dry_run: bool
    counts: dict[TableSpec, TableCounts] = field(default_factory=dict)
    duration_ms: int = 0
    status: str = "completed"
    run_id: int | None = None

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
            "dry_run": self.dry_run,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "tables": {name: asdict(counts) for name, counts in self.tables.items()},
        }

    def summary(self) -> str:
        """The runbook's line: `15 vectors (2 pruned), 8 episodes (0 pruned), ... in 45ms`."""
        parts = [
            f"{c.scanned} {spec.plural} ({c.pruned} pruned)" for spec, c in self.counts.items()
        ]
        return f"{', '.join(parts)} in {self.duration_ms}ms"


async def run_sweep(
    store: Store,
    settings: Settings,
    *,
    now: datetime | None = None,
    tables: Sequence[TableSpec] = MEMORY_TABLES,
    agent: str | None = None,
    dry_run: bool = False,
    trigger: str = "manual",
    daemon_id: str | None = None,
    stop: asyncio.Event | None = None,
    progress: Progress | None = None,
) -> SweepReport:
    """Sweep `tables` at one fixed `now` (the database's clock by default).

    `stop` is checked between batches: a set event ends the sweep at the next batch
    boundary, with status `interrupted`. Every batch is its own transaction.
    """
    now = now or await store.now()
    specs = [table_spec(t) for t in tables]
    for spec in specs:  # a table unfit for ethos fails here, before the audit row
        await store.check_table(spec)
    report = SweepReport(now=now, dry_run=dry_run)
    started = time.monotonic()
    run_id = None
    if not dry_run:
        run_id = await store.start_sweep_run(trigger, now, agent, daemon_id)
    report.run_id = run_id
    error: str | None = None
    try:
        for spec in specs:
            counts = report.counts.setdefault(spec, TableCounts())
            await _sweep_table(store, settings, spec, now, agent, dry_run, counts, stop, progress)
            if stop is not None and stop.is_set():
                report.status = "interrupted"
                break
    except BaseException as exc:
        report.status = "failed" if not isinstance(exc, asyncio.CancelledError) else "interrupted"
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        report.duration_ms = round((time.monotonic() - started) * 1000)
        if run_id is not None:
            # The audit row must be written even when the sweep is being cancelled.
            await asyncio.shield(
                store.finish_sweep_run(
                    run_id,
                    status=report.status,
                    totals=report.totals(),
                    tables={name: asdict(c) for name, c in report.tables.items()},
                    error=error,
                )
            )
        _log_report(report, trigger, error)
    return report


async def _sweep_table(
    store: Store,
    settings: Settings,
    spec: TableSpec,
    now: datetime,
    agent: str | None,
    dry_run: bool,
    counts: TableCounts,
    stop: asyncio.Event | None,
    progress: Progress | None,
) -> None:
    after = None
    limit = settings.decay.batch_size
    while stop is None or not stop.is_set():
        for attempt in range(1, BATCH_ATTEMPTS + 1):
            try:
                batch = await store.sweep_batch(
                    spec,
                    now=now,
                    tolerance=settings.decay.refresh_tolerance,
                    after=after,
                    limit=limit,
                    agent=agent,
                    dry_run=dry_run,
                )
                break
            except TransientDatabaseError as exc:
                # A deadlock with a concurrent LTP write (or a dropped connection): the
                # batch rolled back whole; the pool gives the next attempt a connection.
                if attempt == BATCH_ATTEMPTS:
                    raise
                log.warning("decay_sweep_batch_retry", table=spec.name, error=str(exc))
        counts.scanned += batch.scanned
        counts.updated += batch.updated
        counts.pruned += batch.pruned
        done = batch.scanned < limit
        if progress is not None:
            progress(spec.name, counts.scanned, done)
        if done:
            return
        after = batch.last_id


def _log_report(report: SweepReport, trigger: str, error: str | None) -> None:
    scanned, updated, pruned = report.totals()
    fields = {
        "trigger": trigger,
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
