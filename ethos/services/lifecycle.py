"""Consolidation beyond decay: merging duplicates, forgetting on request, purging old
tombstones, erasing an agent (a forget by id is the engine's: it finds the ids, then
runs in `audited`). Each of these loses information, so each is explicit,
audited in lifecycle_runs (counts only, never content), previewable with a dry run,
and done in set-based batches, each its own transaction (an interrupted merge, erase or
purge resumes where it stopped when run again). A caller's Watch follows them batch by
batch and stops them at a batch boundary; the audit row then says `interrupted`, with
the counts committed."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from ethos.db.store import Store
from ethos.domain.errors import DatabaseError, InputError
from ethos.domain.tables import MEMORY_TABLES, PRUNE_REASONS, SOURCE_TABLES, VECTORS, TableSpec
from ethos.services.progress import Watch, ended_by
from ethos.settings import Settings

log = structlog.get_logger("ethos.services.lifecycle")

# Groups of duplicates merged per statement.
MERGE_BATCH = 500
# Vectors looked at per near-duplicate statement (each through the HNSW index).
NEAR_BATCH = 200


@dataclass
class LifecycleReport:
    kind: str
    now: datetime
    dry_run: bool
    counts: dict[str, Any] = field(default_factory=dict)
    run_id: int | None = None
    status: str = "completed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "now": self.now.isoformat(),
            "dry_run": self.dry_run,
            "counts": self.counts,
            "run_id": self.run_id,
            "status": self.status,
        }


@asynccontextmanager
async def audited(
    store: Store,
    report: LifecycleReport,
    trigger: str,
    selector: dict[str, Any],
    watch: Watch | None = None,
) -> AsyncIterator[None]:
    """An audit row for a run that changes something: written before it starts and
    finished whatever happens (shielded, so a cancelled run is recorded too); a run its
    `watch` stopped is `interrupted`."""
    if report.dry_run:
        yield
        return
    report.run_id = await store.start_lifecycle_run(report.kind, trigger, report.now, selector)
    if watch is not None:
        watch.audit = f"lifecycle_runs #{report.run_id}"
    error: str | None = None
    try:
        yield
        if watch is not None and watch.interrupted:
            report.status = "interrupted"
    except BaseException as exc:
        report.status = ended_by(exc)
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        await asyncio.shield(
            store.finish_lifecycle_run(
                report.run_id, status=report.status, counts=report.counts, error=error
            )
        )
        log.info(f"lifecycle_{report.kind}", status=report.status, run_id=report.run_id,
                 counts=report.counts)  # fmt: skip


async def merge_duplicates(
    store: Store,
    settings: Settings,
    *,
    now: datetime,
    tables: Sequence[TableSpec] = MEMORY_TABLES,
    agent: str | None = None,
    near: bool = False,
    dry_run: bool = False,
    trigger: str,
    watch: Watch | None = None,
) -> LifecycleReport:
    """Exact duplicates (one agent, one normalised content; vectors: one embedding) in
    every table given that [dedup] tables names (in the others one event may happen
    twice), then (near) near-duplicate vectors: each group merged into its earliest
    member. `watch` counts the duplicates merged (no total: counting them costs the
    scan the merge does); stopped, a merge ends after the groups it has merged."""
    tables = [spec for spec in tables if spec.alias in settings.dedup.tables]
    report = LifecycleReport("merge", now, dry_run)
    watch = watch or Watch()
    selector = {"tables": [s.name for s in tables], "agent": agent, "near": near}
    async with audited(store, report, trigger, selector, watch):
        for spec in tables:
            counts: dict[str, int] = {}
            report.counts[spec.name] = counts
            await _merge_exact(store, spec, agent, now, dry_run, counts, watch)
        if near and VECTORS in tables and not watch.stopping():
            report.counts["near"] = await _merge_near(store, settings, agent, now, dry_run)
    return report


# Where a scan of duplicate groups starts: before every agent, content key and identity.
_FIRST_GROUP = ("", uuid.UUID(int=0), "null")

# A group of duplicates: its agent, and its members' ids (the one merged into first).
Group = tuple[str, list[uuid.UUID]]
# A memory as a merge names it: its agent and its id (two agents may hold one id).
Member = tuple[str, uuid.UUID]


async def _merge_exact(
    store: Store,
    spec: TableSpec,
    agent: str | None,
    now: datetime,
    dry_run: bool,
    counts: dict[str, int],
    watch: Watch,
) -> None:
    """A table's exact duplicates merged, batch by batch, into `counts` as each commits."""
    counts.update(scanned_groups=0, groups=0, merged=0, links_moved=0)
    after = _FIRST_GROUP
    while not watch.stopping():
        groups = await store.duplicate_groups(spec, agent, after, MERGE_BATCH)
        if not groups:
            return
        last = groups[-1]
        after = (last["agent_id"], last["content_key"], last["identity"])
        counts["scanned_groups"] += len(groups)
        merged = counts["merged"]
        if dry_run:
            counts["groups"] += len(groups)
            counts["merged"] += sum(g["n"] - 1 for g in groups)
        else:
            await _merge_groups(store, spec, [(g["agent_id"], g["ids"]) for g in groups], now,
                                counts)  # fmt: skip
        watch.add(counts["merged"] - merged)
        if len(groups) < MERGE_BATCH:
            return


async def _merge_groups(
    store: Store,
    spec: TableSpec,
    groups: Sequence[Group],
    now: datetime,
    counts: dict[str, int],
) -> None:
    """Groups of memories, each of one agent, merged, each into its first."""
    done = await store.merge(spec, groups, now)
    counts["groups"] += done["groups"]
    counts["merged"] += done["merged"]
    counts["links_moved"] += done["links_moved"]


async def _merge_near(
    store: Store, settings: Settings, agent: str | None, now: datetime, dry_run: bool
) -> dict[str, int]:
    """Near-duplicate vectors (cosine >= dedup.near_threshold), found batch by batch
    through the HNSW index, grouped (a chain of near pairs is one group) and merged; then
    the episodes and facts whose embeddings are near duplicates, a table at a time."""
    threshold = settings.dedup.near_threshold
    found = await _near_groups(store, VECTORS, agent, threshold)
    counts = {"groups": len(found), "merged": sum(len(ids) - 1 for _, ids in found)}
    if dry_run:
        return counts
    if found:
        counts = {"groups": 0, "merged": 0, "links_moved": 0}
        await _merge_batches(store, VECTORS, found, now, counts)
    for spec in SOURCE_TABLES:
        groups = await _near_groups(store, spec, agent, threshold)
        if groups:
            source_counts = {"groups": 0, "merged": 0, "links_moved": 0}
            await _merge_batches(store, spec, groups, now, source_counts)
            counts[f"{spec.name}_merged"] = source_counts["merged"]
    return counts


async def _merge_batches(
    store: Store, spec: TableSpec, groups: list[Group], now: datetime,
    counts: dict[str, int],
) -> None:  # fmt: skip
    for start in range(0, len(groups), MERGE_BATCH):
        await _merge_groups(store, spec, groups[start : start + MERGE_BATCH], now, counts)


async def _near_groups(
    store: Store, spec: TableSpec, agent: str | None, threshold: float
) -> list[Group]:
    """The live memories of `spec` whose vectors (an episode's or fact's: embeddings)
    are near duplicates, in groups of one agent's (a chain of near pairs is one)."""
    parent: dict[Member, Member] = {}

    def root(x: Member) -> Member:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    after = uuid.UUID(int=0)
    while True:
        rows = await store.near_duplicates(spec, agent, after, NEAR_BATCH, threshold)
        if not rows:
            break
        for row in rows:
            if row["other"] is not None:  # a neighbour is of the memory's agent
                a = root((row["agent_id"], row["id"]))
                b = root((row["agent_id"], row["other"]))
                parent.setdefault(a, a)
                parent.setdefault(b, b)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        after = rows[0]["last_id"]
    members: dict[Member, list[uuid.UUID]] = defaultdict(list)
    for member in parent:
        members[root(member)].append(member[1])
    return [(owner, sorted(ids)) for (owner, _), ids in members.items() if len(ids) > 1]


async def forget_agent(store: Store, agent: str, *, now: datetime, trigger: str) -> LifecycleReport:
    """Soft-delete every live memory of one agent on request: reason 'manual',
    recoverable (`recover --agent`). An agent with none forgets nothing."""
    report = LifecycleReport("forget", now, False)
    async with audited(store, report, trigger, {"agent": agent}):
        for spec in MEMORY_TABLES:
            report.counts[spec.name] = {"manual": await store.forget_agent(spec, agent, now)}
    return report


async def purge(
    store: Store,
    settings: Settings,
    *,
    pruned_before: datetime,
    now: datetime,
    tables: Sequence[TableSpec] = MEMORY_TABLES,
    agent: str | None = None,
    reason: str | None = None,
    dry_run: bool = False,
    trigger: str,
    watch: Watch | None = None,
) -> LifecycleReport:
    """Hard-delete memories pruned before `pruned_before` (of one agent, for one reason,
    if given), with their links and hints; counts per table and reason. `watch` follows
    the rows deleted of those there were."""
    if pruned_before > now:
        raise InputError("`pruned_before` must not be after now")
    if reason is not None and reason not in PRUNE_REASONS:
        raise InputError(f"`reason` must be one of {', '.join(PRUNE_REASONS)} (got {reason!r})")
    report = LifecycleReport("purge", now, dry_run)
    selector = {"pruned_before": pruned_before.isoformat(), "agent": agent, "reason": reason,
                "tables": [s.name for s in tables]}  # fmt: skip
    binds = {"before": pruned_before, "agent": agent, "reason": reason}
    limit = settings.decay.batch_size
    watch = watch or Watch()
    async with audited(store, report, trigger, selector, watch):
        if not dry_run:  # a dry run is one count a table: it needs no total
            watch.start(sum([sum((await store.purge(spec, binds, limit=limit, dry_run=True))
                                 .values()) for spec in tables]))  # fmt: skip
        for spec in tables:
            counts: dict[str, int] = defaultdict(int)
            report.counts[spec.name] = counts
            while not watch.stopping():
                batch = await store.purge(spec, binds, limit=limit, dry_run=dry_run)
                for why, n in batch.items():
                    counts[why] += n
                watch.add(sum(batch.values()))
                if dry_run or sum(batch.values()) < limit:
                    break
            report.counts[spec.name] = dict(counts)
    return report


async def erase(
    store: Store,
    settings: Settings,
    agent: str,
    *,
    now: datetime,
    dry_run: bool,
    trigger: str,
    watch: Watch | None = None,
) -> LifecycleReport:
    """Hard-delete everything of one agent: its memories in every table (live or
    pruned), their hints and links, its policy assignment. In batches: interrupted, it
    resumes when run again, and each batch is counted in the audit row as it commits.
    A role that may not delete from every table it would touch is refused before
    anything is deleted (the audit row: failed, nothing counted)."""
    if not isinstance(agent, str) or not agent.strip():
        raise InputError("say which agent to erase: `agent`")
    report = LifecycleReport("erase", now, dry_run)
    limit = settings.decay.batch_size
    touched = ["memory_links", "agent_policies", *(spec.name for spec in MEMORY_TABLES)]
    watch = watch or Watch()
    async with audited(store, report, trigger, {"agent": agent}, watch):
        report.counts.update(dict.fromkeys(touched, 0))
        refused = await store.undeletable(touched)
        if refused:
            raise DatabaseError(
                f"erase needs DELETE on {', '.join(refused)}: run it as the eraser role"
                " (runbooks/operations.md); nothing was deleted"
            )
        # Links and the policy assignment first: then the links counted are the agent's.
        report.counts.update(await store.erase_agent_rest(agent, report.run_id))
        if dry_run:
            for spec in MEMORY_TABLES:
                report.counts[spec.name] = await store.erase_count(spec, agent)
                watch.add(report.counts[spec.name])
            return report
        assert report.run_id is not None
        watch.start(sum([await store.erase_count(spec, agent) for spec in MEMORY_TABLES]))
        for spec in MEMORY_TABLES:
            erased, after = 0, uuid.UUID(int=0)
            while not watch.stopping():
                batch, last = await store.erase_batch(spec, agent, after, limit, report.run_id)
                erased += batch
                report.counts[spec.name] = erased
                watch.add(batch)
                if last is None or batch < limit:
                    break
                after = last
        if not watch.stopping():
            # The hints last: a rerun of an interrupted erase still finds them.
            await store.erase_agent_hints(agent, now)
    return report


def purge_cutoff(settings: Settings, now: datetime) -> datetime | None:
    """retention.purge_after_days ago, or None if the daemon does not purge."""
    days = settings.retention.purge_after_days
    return None if days is None else now - timedelta(days=days)
