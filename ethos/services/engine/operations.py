"""The operator's calls: sweeps, the lifecycle (recover, merge, forget, purge,
erase), roles, distributing on Citus, status and the monitoring views, and the counts a
progress bar needs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from ethos.db.store import Distribution
from ethos.domain.errors import InputError
from ethos.domain.inputs import aware, named_agent, some
from ethos.domain.roles import Roles
from ethos.domain.tables import TableSpec, table_spec
from ethos.services import lifecycle
from ethos.services.engine.core import TRIGGER, EngineCore, specs
from ethos.services.lifecycle import LifecycleReport, audited
from ethos.services.ltp import LtpStats
from ethos.services.progress import Watch
from ethos.services.recovery import RecoveryReport, Selector, recover
from ethos.services.sweep import MODES, Mode, Progress, SweepReport, run_sweep

ViewRows = list[dict[str, Any]]  # a monitoring view's rows, column by column


@dataclass(frozen=True)
class Stats:
    """What the monitoring views say (ethos_agent_counts, ethos_memories, …)."""

    counts: ViewRows  # live, pruned and pinned per table
    salience_by_age: ViewRows
    at_risk: ViewRows  # near the prune threshold
    most_retrieved: ViewRows
    recent_sweeps: ViewRows
    ltp: ViewRows  # the daemons' LTP backlogs and drops
    policies: ViewRows  # live, pruned and average salience per policy

    def as_dict(self) -> dict[str, ViewRows]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True)
class LtpStatus:
    """This engine's LTP: what waits in its buffer and in the durable queue, and its
    counters since it opened."""

    backlog: int
    queue_backlog: int
    stats: LtpStats

    def as_dict(self) -> dict[str, int]:
        return {"backlog": self.backlog, "queue_backlog": self.queue_backlog} | self.stats.as_dict()


@dataclass(frozen=True)
class Status:
    """The daemons alive, who holds the leader lock, the last sweep, the retrievals set
    aside; and this engine's own LTP."""

    daemons: ViewRows  # each with its role, heartbeat and whether it holds the lock
    last_sweep: dict[str, Any] | None
    retrieval_dead_letters: int
    ltp: LtpStatus

    def as_dict(self) -> dict[str, Any]:
        return {
            "daemons": self.daemons,
            "last_sweep": self.last_sweep,
            "retrieval_dead_letters": self.retrieval_dead_letters,
            "ltp": self.ltp.as_dict(),
        }


@dataclass(frozen=True)
class PrunedMemory:
    """A memory a sweep pruned: its table, id and text."""

    table: str
    id: uuid.UUID
    content: str


class OperationsEngine(EngineCore):
    """Sweep, recover, merge, forget, purge, erase; roles, status, stats."""

    async def sweep(
        self,
        *,
        now: datetime | None = None,
        tables: Iterable[str | TableSpec] | None = None,
        agent: str | None = None,
        dry_run: bool = False,
        mode: Mode = "due",
        trigger: str = TRIGGER,
        daemon_id: str | None = None,
        stop: asyncio.Event | None = None,
        progress: Progress | None = None,
    ) -> SweepReport:
        """Decay and prune at `now` (the database's clock by default): the rows that are
        due (mode "due"), only those due to be pruned ("prune"), or every live row
        ("full"). A set `stop` ends the sweep at the next batch boundary."""
        if mode not in MODES:
            raise InputError(f"unknown sweep mode {mode!r}: use one of {', '.join(MODES)}")
        return await run_sweep(
            self.store,
            self.settings,
            now=aware(now, "now") if now else None,
            tables=specs(tables),
            agent=agent,
            dry_run=dry_run,
            mode=mode,
            trigger=trigger,
            daemon_id=daemon_id,
            stop=stop,
            progress=progress,
        )

    async def stats(self, agent: str | None = None) -> Stats:
        """What the monitoring views say, for one agent or all."""
        return Stats(**await self.store.stats(named_agent(agent)))

    async def recover(
        self,
        table: str | TableSpec,
        selector: Selector,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        command: str = "api",
        watch: Watch | None = None,
    ) -> RecoveryReport:
        """Bring pruned memories back with a fresh start (recovery.strength, anchored
        at now); dry_run lists them and changes nothing. `watch` follows and stops it."""
        spec = table_spec(table)
        return await recover(
            self.store,
            self.settings,
            spec,
            selector,
            now=await self._moment(now),
            dry_run=dry_run,
            command=command,
            watch=watch,
        )

    async def recover_ids(
        self,
        ids: Iterable[str | uuid.UUID],
        *,
        agent: str | None = None,
        now: datetime | None = None,
        command: str = "api",
    ) -> list[uuid.UUID]:
        """Bring back these pruned memories wherever they are (of `agent`, where one is
        named), each as its agent's: the ids recovered. One still live is an error."""
        located = await self.locate(ids, agent=named_agent(agent))
        recovered: list[uuid.UUID] = []
        for (spec, owner), found in located.items():
            selector = Selector(ids=tuple(found), agent=owner)  # no other agent's, whatever the id
            report = await self.recover(spec, selector, now=now, command=command)
            recovered += [uuid.UUID(row["id"]) for row in report.rows]
        asked = {i for found in located.values() for i in found}
        missing = sorted(str(i) for i in asked - set(recovered))
        if missing:  # live again already (a concurrent recover): nothing to bring back
            raise InputError(f"not forgotten: {some(missing)}")
        return recovered

    async def merge(
        self,
        tables: Iterable[str | TableSpec] | None = None,
        *,
        agent: str | None = None,
        near: bool = False,
        now: datetime | None = None,
        dry_run: bool = False,
        trigger: str = TRIGGER,
        watch: Watch | None = None,
    ) -> LifecycleReport:
        """Merge duplicates already in the tables (exact; with `near`, near-duplicate
        vectors too); dry_run counts what would merge and changes nothing."""
        return await lifecycle.merge_duplicates(
            self.store,
            self.settings,
            now=await self._moment(now),
            tables=specs(tables),
            agent=agent,
            near=near,
            dry_run=dry_run,
            trigger=trigger,
            watch=watch,
        )

    async def forget(
        self,
        table: str | TableSpec | None,
        ids: Iterable[str | uuid.UUID],
        *,
        now: datetime | None = None,
        trigger: str = TRIGGER,
        agent: str | None = None,
    ) -> LifecycleReport:
        """Soft-delete memories on request (reason manual, recoverable: `recover`
        brings them back). Every id must be a live memory (of `table`, where given, else
        wherever it is; of `agent`, where one is named: no other agent's memory is
        touched, whatever its id; where none is, of one agent, forgotten as that agent's),
        or nothing changes. One audit row, counted per table."""
        found = await self.locate(ids, agent=named_agent(agent), table=table, live=True)
        report = LifecycleReport("forget", await self._moment(now), False)
        tables = sorted({spec.name for spec, _ in found})
        count = sum(len(own) for own in found.values())
        async with audited(self.store, report, trigger, {"tables": tables, "count": count}):
            for (spec, owner), own in found.items():
                forgotten = await self.store.forget(spec, own, report.now, owner)
                counts = report.counts.setdefault(spec.name, {"manual": 0})
                counts["manual"] += len(forgotten)
        return report

    async def forget_agent(
        self, agent: str, *, now: datetime | None = None, trigger: str = TRIGGER
    ) -> LifecycleReport:
        """Soft-delete every live memory of one agent (reason manual; `recover` with the
        agent brings them back)."""
        if not isinstance(agent, str) or not agent.strip():
            raise InputError("agent is required")
        return await lifecycle.forget_agent(
            self.store, agent, now=await self._moment(now), trigger=trigger
        )

    async def purge(
        self,
        pruned_before: datetime,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        agent: str | None = None,
        reason: str | None = None,
        now: datetime | None = None,
        dry_run: bool = False,
        trigger: str = TRIGGER,
        watch: Watch | None = None,
    ) -> LifecycleReport:
        """Hard-delete memories pruned before `pruned_before`, with their links: not
        recoverable. dry_run counts them and changes nothing."""
        return await lifecycle.purge(
            self.store,
            self.settings,
            pruned_before=aware(pruned_before, "pruned_before"),
            now=await self._moment(now),
            tables=specs(tables),
            agent=agent,
            reason=reason,
            dry_run=dry_run,
            trigger=trigger,
            watch=watch,
        )

    async def erase(
        self, agent: str, *, dry_run: bool, trigger: str = TRIGGER, watch: Watch | None = None
    ) -> LifecycleReport:
        """Hard-delete everything of one agent (every table, links, policy assignment,
        its retrievals still buffered here): not recoverable. dry_run counts it."""
        if not dry_run:
            await self.ltp.drain(self.settings.ltp.close_timeout_seconds)
        return await lifecycle.erase(
            self.store, self.settings, agent, now=await self.store.now(), dry_run=dry_run,
            trigger=trigger, watch=watch,
        )  # fmt: skip

    async def make_roles(
        self,
        app: str,
        eraser: str,
        agents: Iterable[tuple[str, str]] = (),
        *,
        dry_run: bool = False,
    ) -> list[str]:
        """Create or update the app, eraser and agent roles (ethos.domain.roles) with exactly
        their rights; run as the schema's owner. The statements (a dry run changes
        nothing)."""
        roles = Roles(app, eraser, tuple(agents))
        return await self.store.make_roles(roles, dry_run=dry_run)

    async def distribute(self) -> Distribution:
        """On a Citus coordinator, this database's tables distributed by agent, in place
        (decision record 0019); a second run converges (ethos.db.store.ClusterStore)."""
        return await self.store.distribute()

    async def status(self, alive_seconds: float) -> Status:
        """Daemons with a heartbeat in the last alive_seconds, who holds the leader lock,
        the last sweep; and this engine's own LTP counters."""
        status = await self.store.status(alive_seconds)
        # A copy: the buffer counts on while the caller reads.
        ltp = LtpStatus(self.ltp.backlog, await self.store.queue_backlog(), replace(self.ltp.stats))
        return Status(**status, ltp=ltp)

    async def count_live(self, table: str | TableSpec, agent: str | None = None) -> int:
        """Live memories in a table, of one agent or all."""
        return await self.store.count_live(table_spec(table), agent)

    async def count_due(self, table: str | TableSpec, now: datetime, *, prune: bool = False) -> int:
        """Hints of work due by `now` in a table (an upper bound on the rows a due
        sweep, or with prune a prune pass, would look at)."""
        return await self.store.count_due(table_spec(table), aware(now, "now"), prune=prune)

    async def pruned_at(self, agent: str, at: datetime) -> list[PrunedMemory]:
        """The memories of an agent that a sweep at exactly `at` pruned."""
        rows = await self.store.pruned_at(agent, aware(at, "at"))
        return [PrunedMemory(row["table_name"], row["id"], row["content"]) for row in rows]
