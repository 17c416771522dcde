"""The lifecycle: merges, forgetting, purge, erase, recovery and the lifecycle
runs' audit rows."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ethos.db.store.core import Row, StoreCore, Transaction
from ethos.db.store.sql.fragments import NIL_ID
from ethos.db.store.sql.lifecycle import (
    COUNT_AGENT_LINKS,
    COUNT_AGENT_POLICY,
    ERASE_AGENT_LINKS,
    ERASE_AGENT_POLICY,
    FINISH_CONSOLIDATION_RUN,
    NEAR_DUPLICATE_EMBEDDINGS,
    NEAR_DUPLICATE_SEARCH_SETTINGS,
    NEAR_DUPLICATES,
    RECORD_RECOVERY,
    RECOVERIES_OF,
    START_CONSOLIDATION_RUN,
    UNDELETABLE_TABLES,
    build_drop_agent_hints_query,
    build_duplicate_groups_query,
    build_erase_batch_query,
    build_erase_count_query,
    build_forget_agent_query,
    build_forget_query,
    build_merge_query,
    build_purge_batch_query,
    build_purge_count_query,
    build_recover_batch_query,
    build_recovery_candidates_query,
    build_recovery_count_query,
    build_rehint_rows_query,
)
from ethos.domain.tables import MEMORY_TABLES, TableSpec


class LifecycleStore(StoreCore):
    """Store's lifecycle: merge, forget, purge, erase, recovery, their audit."""

    async def duplicate_groups(
        self, spec: TableSpec, agent: str | None, after: tuple[str, uuid.UUID, str], limit: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch_of(
            build_duplicate_groups_query(spec),
            agent=agent,
            after_agent=after[0],
            after_key=after[1],
            after_identity=after[2],
            limit=limit,
        )

    async def near_duplicates(
        self, spec: TableSpec, agent: str | None, after: uuid.UUID, limit: int, threshold: float
    ) -> list[Row]:
        """The next `limit` live memories of `spec` after `after`, each with its near
        duplicates by their vectors (an episode's or fact's: embeddings). On a Citus
        cluster each shard group's on its node (Citus refuses the statement's lateral join
        on the distributed table; an agent's rows are all in one group), the first `limit`
        of all of them kept, in id order, as one server's batch."""
        values = {"agent": agent, "after": after, "limit": limit, "threshold": threshold,
                  "table": spec.name}  # fmt: skip
        query = NEAR_DUPLICATES if spec.has_embedding else NEAR_DUPLICATE_EMBEDDINGS
        if not await self.distributed():
            async with self._transaction() as tx:
                await tx.execute_literal(NEAR_DUPLICATE_SEARCH_SETTINGS)
                return await tx.fetch(query, **values)
        found: list[Row] = []
        for group in await self._shard_groups(agent):
            async with self._group_transaction(*await self._group_node(group)) as tx:
                await tx.execute_literal(NEAR_DUPLICATE_SEARCH_SETTINGS)
                found += await tx.fetch(query, **values)
        kept = sorted({row["id"] for row in found})[:limit]
        last, chosen = (kept[-1] if kept else None), set(kept)
        return [{**row, "last_id": last} for row in found if row["id"] in chosen]

    async def merge(
        self, spec: TableSpec, groups: Sequence[tuple[str, Sequence[uuid.UUID]]], now: datetime
    ) -> Row:
        """Merge groups of memories (each its agent and its members' ids): the groups,
        the merged and the links moved. In the agents' sessions (on a Citus cluster one
        agent's groups at a time, on its node: Citus refuses the statement's lock of rows
        across shards)."""
        await self.check_table(spec)

        async def merge_of(agents: list[str], tx: Transaction) -> Row:
            own = [group for group in groups if group[0] in agents]
            row = await tx.fetchrow(build_merge_query(spec), **_members(own), now=now)
            assert row is not None
            return row

        done: Counter[str] = Counter(groups=0, merged=0, links_moved=0)
        for row in await self._agent_sessions((agent for agent, _ in groups), merge_of):
            done.update(dict(row))
        return done

    async def forget(
        self, spec: TableSpec, ids: list[uuid.UUID], now: datetime, agent: str
    ) -> list[uuid.UUID]:
        await self.check_table(spec)
        rows = await self._fetch_of(build_forget_query(spec), ids=ids, now=now, agent=agent)
        return [row["id"] for row in rows]

    async def purge(
        self, spec: TableSpec, selector: Mapping[str, Any], *, limit: int, dry_run: bool
    ) -> dict[str, int]:
        """What a purge deletes (dry_run: would delete), by reason; a batch at a time."""
        await self.check_table(spec)
        if dry_run:
            rows = await self._fetch_of(build_purge_count_query(spec), **selector)
        else:
            # Where the server routes it (on Citus, the coordinator): on a node, a hard
            # delete's trigger reaches the other nodes as the definer role, which may not
            # log in there.
            query = build_purge_batch_query(spec, of_one_agent=selector["agent"] is not None)
            rows = await self._fetch(query, **selector, limit=limit)
        return {row["reason"]: row["n"] for row in rows}

    async def erase_count(self, spec: TableSpec, agent: str) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval_of(build_erase_count_query(spec), agent=agent)
        return count

    async def undeletable(self, tables: Sequence[str]) -> list[str]:
        """The tables the connecting role may not DELETE from."""
        rows = await self._fetch(UNDELETABLE_TABLES, tables=list(tables))
        return [row["t"] for row in rows]

    async def erase_batch(
        self, spec: TableSpec, agent: str, after: uuid.UUID, limit: int, run_id: int
    ) -> tuple[int, uuid.UUID | None]:
        """Delete the agent's next `limit` memories after `after`: (how many, last id);
        audit row run_id counts them in the same transaction."""
        await self.check_table(spec)
        row = await self._fetchrow(
            build_erase_batch_query(spec), agent=agent, after=after, limit=limit, run_id=run_id
        )
        assert row is not None
        return row["n"], row["last_id"]

    async def erase_agent_rest(self, agent: str, run_id: int | None) -> dict[str, int]:
        """The agent's links and policy assignment: deleted and counted in audit row
        run_id, or (None: a dry run) only counted."""
        dry_run = run_id is None
        links = COUNT_AGENT_LINKS if dry_run else ERASE_AGENT_LINKS
        policy = COUNT_AGENT_POLICY if dry_run else ERASE_AGENT_POLICY
        values = {"agent": agent} if dry_run else {"agent": agent, "run_id": run_id}
        return {
            "memory_links": await self._fetchval(links, **values),
            "agent_policies": await self._fetchval(policy, **values),
        }

    async def erase_agent_hints(self, agent: str, now: datetime) -> None:
        """After an erase of the agent's memories: no hint names the agent, and the
        other agents' rows such a hint held are hinted anew, at `now`'s grouping. (On
        Citus a hint and its rows lie in the agent's shard group: there, on its node.)"""
        async with self._transaction_of(agent) as tx:
            for spec in MEMORY_TABLES:
                ids = await tx.fetchval(build_drop_agent_hints_query(spec), agent=agent)
                if ids:
                    await tx.fetch(build_rehint_rows_query(spec), ids=ids, now=now)

    async def start_lifecycle_run(
        self, kind: str, trigger: str, now: datetime, selector: Mapping[str, Any]
    ) -> int:
        await self.interrupt_orphaned_runs()
        run_id: int = await self._fetchval(
            START_CONSOLIDATION_RUN,
            kind=kind,
            trigger=trigger,
            now=now,
            selector=json.dumps(selector, default=str),
        )
        return run_id

    async def finish_lifecycle_run(
        self, run_id: int, *, status: str, counts: Mapping[str, Any], error: str | None
    ) -> None:
        await self._fetchval(
            FINISH_CONSOLIDATION_RUN,
            id=run_id,
            status=status,
            counts=json.dumps(counts),
            error=error,
        )

    async def recoveries_of(self, spec: TableSpec, memory_id: uuid.UUID) -> list[Row]:
        return await self._fetch(RECOVERIES_OF, table=spec.name, id=str(memory_id))

    async def forget_agent(self, spec: TableSpec, agent: str, now: datetime) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval_of(build_forget_agent_query(spec), agent=agent, now=now)
        return count

    async def recovery_candidates(
        self, spec: TableSpec, selector: Mapping[str, Any], after: uuid.UUID | None, limit: int
    ) -> list[Row]:
        """The next `limit` pruned memories `selector` matches after id `after` (of its
        agent, where it names one: in the agent's session)."""
        await self.check_table(spec)
        return await self._fetch_of(
            build_recovery_candidates_query(spec),
            **selector,
            after=after or uuid.UUID(NIL_ID),
            limit=limit,
        )

    async def recovery_count(self, spec: TableSpec, selector: Mapping[str, Any]) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval_of(build_recovery_count_query(spec), **selector)
        return count

    async def recover_batch(
        self, spec: TableSpec, rows: Sequence[Row], *, strength: float, now: datetime
    ) -> list[uuid.UUID]:
        """Bring back the pruned memories `rows` (recovery_candidates': each its agent and
        id) that are still pruned: their ids. In their agents' sessions (on a Citus
        cluster one agent at a time, on its node: Citus refuses the statement's lock of
        rows across shards)."""
        owners = [row["agent_id"] for row in rows]
        ids = [row["id"] for row in rows]
        values = {"owners": owners, "ids": ids, "strength": strength, "now": now,
                  "tolerance": self.settings.decay.refresh_tolerance}  # fmt: skip

        async def recover_of(agents: list[str], tx: Transaction) -> list[Row]:
            return await tx.fetch(build_recover_batch_query(spec), agents=agents, **values)

        done = await self._agent_sessions(owners, recover_of)
        return sorted(row["id"] for rows in done for row in rows)

    async def record_recovery(
        self,
        *,
        now: datetime,
        spec: TableSpec,
        selector: dict[str, Any],
        command: str,
        recovered: int,
        strength: float,
        status: str,
    ) -> int:
        recovery_id: int = await self._fetchval(
            RECORD_RECOVERY,
            now=now,
            table=spec.name,
            selector=json.dumps(selector, default=str),
            command=command,
            recovered=recovered,
            strength=strength,
            status=status,
        )
        return recovery_id


def _members(groups: Sequence[tuple[str, Sequence[uuid.UUID]]]) -> dict[str, list[Any]]:
    """The merge statement's binds of groups: each member's agent, id and group number."""
    members = [(n, agent, member) for n, (agent, ids) in enumerate(groups) for member in ids]
    return {
        "agents": [agent for _, agent, _ in members],
        "ids": [member for _, _, member in members],
        "groups": [n for n, _, _ in members],
    }
