"""Recovery of pruned memories: content, embedding, retrieval count and history come
back intact, with a fresh start (strength recovery.strength, anchored now), in batches
like the sweep. Every recovery is recorded in the `recoveries` table, however it ends:
stopped, cancelled or cut off from the database, its row says what it committed."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from ethos.db.store import Store
from ethos.domain.errors import InputError, NotFoundError, unknown_ids
from ethos.domain.tables import PRUNE_REASONS, TableSpec
from ethos.services.progress import Watch, ended_by
from ethos.settings import Settings

log = structlog.get_logger("ethos.services.recovery")


@dataclass(frozen=True)
class Selector:
    """Which pruned rows to bring back; the parts that are given must all match."""

    ids: tuple[uuid.UUID, ...] = ()
    agent: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    reason: str | None = None

    def check(self) -> None:
        if not (self.ids or self.agent or self.since or self.until or self.reason):
            raise InputError("say which rows to recover: `ids`, `agent`, `since` or `reason`")
        if self.reason is not None and self.reason not in PRUNE_REASONS:
            raise InputError(
                f"unknown reason {self.reason!r}: use one of {', '.join(PRUNE_REASONS)}"
            )
        if self.since and self.until and self.until <= self.since:
            raise InputError("`until` must come after `since`")

    def binds(self) -> dict[str, Any]:
        """The selector as the recovery statements bind it: NULL where not given."""
        return {
            "ids": list(self.ids) or None,
            "agent": self.agent,
            "since": self.since,
            "until": self.until,
            "reason": self.reason,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "ids": [str(i) for i in self.ids] or None,
            "agent": self.agent,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "reason": self.reason,
        }


@dataclass
class RecoveryReport:
    table: str
    now: datetime
    dry_run: bool
    strength: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    recovery_id: int | None = None
    status: str = "completed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "now": self.now.isoformat(),
            "dry_run": self.dry_run,
            "strength": self.strength,
            "count": len(self.rows),
            "recovery_id": self.recovery_id,
            "status": self.status,
            "rows": self.rows,
        }


async def recover(
    store: Store,
    settings: Settings,
    spec: TableSpec,
    selector: Selector,
    *,
    now: datetime,
    dry_run: bool,
    command: str,
    watch: Watch | None = None,
) -> RecoveryReport:
    """Bring back what `selector` matches, batch by batch; a set `watch.stop` ends it at
    the next batch boundary (status interrupted: the same selector again finishes it)."""
    selector.check()
    if selector.ids:
        await _check_ids(store, spec, selector.ids, selector.agent)
    strength = settings.recovery.strength
    report = RecoveryReport(table=spec.name, now=now, dry_run=dry_run, strength=strength)
    watch = watch or Watch()
    watch.start(await store.recovery_count(spec, selector.binds()))
    try:
        await _recover_rows(store, settings, spec, selector.binds(), report, watch)
        if watch.interrupted:
            report.status = "interrupted"
    except BaseException as exc:
        report.status = ended_by(exc)
        raise
    finally:
        if not dry_run and (report.rows or report.status == "completed"):
            # Shielded: a cancelled recovery is recorded too, with what it committed.
            await asyncio.shield(_record(store, spec, selector, report, command))
            watch.audit = f"recoveries #{report.recovery_id}"
    return report


async def _record(
    store: Store, spec: TableSpec, selector: Selector, report: RecoveryReport, command: str
) -> None:
    # A recovery of named ids also keeps which it brought back and how each had been
    # pruned: a memory's history (Engine.history) shows that prune and this recovery, and
    # no recovery that a concurrent one left with nothing to do.
    kept = ("id", "pruned_at", "prune_reason")
    brought_back = [{key: row[key] for key in kept} for row in report.rows]
    report.recovery_id = await store.record_recovery(
        now=report.now,
        spec=spec,
        selector=selector.as_dict() | ({"brought_back": brought_back} if selector.ids else {}),
        command=command,
        recovered=len(report.rows),
        strength=report.strength,
        status=report.status,
    )
    log.info(
        "memories_recovered",
        table=spec.name,
        count=len(report.rows),
        recovery_id=report.recovery_id,
        status=report.status,
        selector=selector.as_dict(),
    )


async def _recover_rows(
    store: Store,
    settings: Settings,
    spec: TableSpec,
    binds: dict[str, Any],
    report: RecoveryReport,
    watch: Watch,
) -> None:
    """The rows a selector's binds match, batch by batch (a dry run: described only),
    each batch added to the report and `watch` as it commits, until it is stopped."""
    limit = settings.decay.batch_size
    after: uuid.UUID | None = None
    while not watch.stopping():
        batch = await store.recovery_candidates(spec, binds, after, limit)
        rows = [_describe(row) for row in batch]
        if not report.dry_run and batch:
            # The UPDATE locks and re-checks its rows: what a concurrent recovery
            # already brought back is neither changed again nor reported.
            recovered = await store.recover_batch(
                spec, batch, strength=report.strength, now=report.now
            )
            done = {str(i) for i in recovered}
            rows = [row for row in rows if row["id"] in done]
        report.rows += rows
        watch.add(len(rows))
        if len(batch) < limit:
            return
        after = batch[-1]["id"]


def _describe(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "agent_id": row["agent_id"],
        "content": row["content"],
        "pruned_at": row["pruned_at"].isoformat() if row["pruned_at"] else None,
        "prune_reason": row["prune_reason"],
    }


async def _check_ids(
    store: Store, spec: TableSpec, ids: tuple[uuid.UUID, ...], agent: str | None
) -> None:
    """Every id must name a pruned row of this table (of `agent`, where one is named), or
    nothing is changed."""
    states = await store.id_states(spec, list(ids), agent)
    unknown = [str(i) for i in ids if i not in states]
    if unknown:
        raise NotFoundError(unknown_ids(f"{spec.name} row", ", ".join(unknown), agent))
    live = [str(i) for i in ids if not states[i]]
    if live:
        raise InputError(f"not pruned, nothing to recover: {', '.join(live)}")
