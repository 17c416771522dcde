"""LTP: the flush transaction (LtpFlush) and its claims, the durable queue, and the
links between memories (LinkRound, neighbours)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ethos.db.store.core import Row, StoreCore, Transaction
from ethos.db.store.query import terms
from ethos.db.store.sessions import lock_timeout
from ethos.db.store.sql.ltp import (
    CLAIM_LTP_FLUSH,
    FORGET_LTP_FLUSHES,
    MAINTENANCE_LOCK_TIMEOUT,
    MEMORY_LINKS,
    NEIGHBOURS,
    OLDEST_QUEUED_AGENT,
    POP_RETRIEVAL_QUEUE,
    RETRIEVAL_QUEUE_BACKLOG,
    SET_ASIDE_EVENTS,
    TOUCH_RETRIEVAL_ACTIVITY,
    WEAKEN_LINKS,
    build_agents_query,
    build_enqueue_query,
    build_lock_query,
    build_ltp_query,
    build_neighbour_rows_query,
    build_strengthen_links_query,
    build_surfaced_query,
)
from ethos.domain.tables import TableSpec


class LtpStore(StoreCore):
    """Store's LTP: flushes, the durable queue, links."""

    @asynccontextmanager
    async def ltp_flush(self, flush_id: uuid.UUID) -> AsyncIterator[LtpFlush | None]:
        """The transaction that applies one flush of retrievals, claimed by its id;
        None when a flush with that id was applied before (an in-doubt COMMIT that went
        through): there is nothing left to do."""
        async with self._transaction() as tx:
            await self._bound_lock_waits(tx)
            if await tx.fetchval(CLAIM_LTP_FLUSH, id=flush_id) is None:
                yield None
                return
            yield LtpFlush(tx, self)

    @asynccontextmanager
    async def ltp_queue(
        self, limit: int, held: Sequence[str] = ()
    ) -> AsyncIterator[tuple[LtpFlush, list[Row]]]:
        """The transaction that applies the oldest `limit` queued events (of agents not
        in `held`): they are deleted in it, so they are applied exactly when it commits.
        On a Citus cluster, those of the agent of the oldest event (its shard's)."""
        # Where Citus differs: it locks rows FOR UPDATE on one shard only, so a drain
        # there pops one agent's events (the pop names it), where one server pops any.
        distributed = await self.distributed()
        async with self._transaction() as tx:
            await self._bound_lock_waits(tx)
            held = list(held)
            agent = await tx.fetchval(OLDEST_QUEUED_AGENT, held=held) if distributed else None
            rows: list[Row] = []
            if agent is not None or not distributed:
                rows = await tx.fetch(POP_RETRIEVAL_QUEUE, limit=limit, agent=agent, held=held)
            yield LtpFlush(tx, self), rows

    async def _bound_lock_waits(self, tx: Transaction) -> None:
        seconds = self.settings.database.maintenance_lock_timeout_seconds
        await tx.fetchval(MAINTENANCE_LOCK_TIMEOUT, timeout=lock_timeout(seconds))

    async def enqueue(
        self, spec: TableSpec, ids: list[uuid.UUID], at: datetime, kind: str,
        group: uuid.UUID | None, agent: str | None, receipt: uuid.UUID,
    ) -> None:  # fmt: skip
        """Events of `agent`'s memories (None: of every memory of each id) into the
        durable queue (committed when this returns), with the receipt of the flush
        `receipt`: a flush of the same events under that id is then applied as done.
        On a Citus cluster the receipt is a statement of its own, in the same
        transaction."""
        values = {"agent": agent, "ids": ids, "at": at, "kind": kind, "grp": group,
                  "call": receipt}  # fmt: skip
        # Where Citus differs: beside the coordinator's write of the receipt it would COPY
        # the events through the coordinator (refused under row security); one server
        # writes both in one statement, one round trip.
        if not await self.distributed():
            await self._fetchval(build_enqueue_query(spec, receipt=True), **values)
            return
        async with self._transaction() as tx:
            await tx.fetchval(CLAIM_LTP_FLUSH, id=receipt)
            await tx.fetchval(build_enqueue_query(spec, receipt=False), **values)

    async def queue_backlog(self) -> int:
        backlog: int = await self._fetchval(RETRIEVAL_QUEUE_BACKLOG)
        return backlog

    async def links(
        self, spec: TableSpec, memory_id: uuid.UUID, agent: str, now: datetime
    ) -> list[Row]:
        return await self._fetch(
            MEMORY_LINKS, table=spec.name, id=memory_id, agent=agent, now=now,
            **self._link_values(),
        )  # fmt: skip

    async def neighbours(
        self, spec: TableSpec, ids: list[uuid.UUID], agent: str, now: datetime
    ) -> list[Row]:
        """The live links of memories `ids` of spec's table: the other end, the memory it
        came through, the link's weight now."""
        return await self._fetch(
            NEIGHBOURS, table=spec.name, ids=ids, agent=agent, now=now,
            **self._link_values(),
        )  # fmt: skip

    async def neighbour_rows(
        self,
        spec: TableSpec,
        ids: list[uuid.UUID],
        agent: str,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            build_neighbour_rows_query(spec), ids=ids, agent=agent, now=now,
            matching=terms(matching),
        )  # fmt: skip

    def _link_values(self) -> dict[str, float]:
        links = self.settings.links
        return {
            "links_tau": links.tau_days,
            "links_prune": links.prune_weight,
            "learning_rate": links.learning_rate,
            "wrong_factor": self.settings.feedback.wrong_factor,
        }

    async def forget_ltp_flushes(self) -> None:
        await self._fetchval(FORGET_LTP_FLUSHES)


@dataclass
class LinkRound:
    """Link updates of one round, as columns: agent, the two ends (smaller first), and
    what happened to the pair at its moment."""

    agents: list[str]
    a_tables: list[str]
    a_ids: list[uuid.UUID]
    b_tables: list[str]
    b_ids: list[uuid.UUID]
    co: list[int]
    useful: list[int]
    wrong: list[int]
    moments: list[datetime]

    def columns(self) -> dict[str, Any]:
        return dict(self.__dict__)


class LtpFlush:
    """What one flush of retrievals may do inside its transaction."""

    def __init__(self, tx: Transaction, store: LtpStore) -> None:
        self._tx = tx
        self._store = store

    async def distribution_changed(self) -> bool:
        """Whether `ethos distribute` ran since this flush grouped its agents (its
        statements, grouped for one server, may be refused on the cluster)."""
        return await self._store.distribution_changed()

    async def agent_groups(self, agents: Iterable[str]) -> list[list[str]]:
        """The agents whose memories one statement of this flush writes together
        (StoreCore.agent_groups). Not the store's agent sessions, one transaction an
        agent on its node: a flush's statements stay in its one transaction through the
        coordinator, where its receipt commits with its writes, exactly once."""
        return await self._store.agent_groups(agents)

    async def lock(
        self, spec: TableSpec, ids: list[uuid.UUID], agents: list[str]
    ) -> list[tuple[uuid.UUID, str]]:
        """Lock the rows of `agents` the flush writes in `spec`, in id order, before it
        writes them; those another transaction holds are not waited for: returned,
        (id, agent)."""
        await self._store.check_table(spec)
        held = await self._tx.fetch(build_lock_query(spec), ids=ids, agents=agents)
        return [(row["id"], row["agent_id"]) for row in held]

    async def strengthen(
        self,
        spec: TableSpec,
        *,
        ids: list[uuid.UUID],
        owners: list[str],
        counts: list[int],
        useful: list[int],
        wrong: list[int],
        surfaced: list[int],
        moments: list[datetime],
        agents: list[str],
    ) -> list[Row]:
        """One round: each memory (ids[i] of owners[i]) at most once, with what happened
        to it at moments[i] (retrievals, useful, wrong, surfaced); the owners among
        `agents`, a group of agent_groups. Returns the rows written (unknown and pruned
        ids are not among them), with their policy before and after."""
        await self._store.check_table(spec)
        settings = self._store.settings
        return await self._tx.fetch(
            build_ltp_query(spec),
            agents=agents,
            boost=settings.ltp.boost(spec),
            tolerance=settings.decay.refresh_tolerance,
            confidence_bonus=settings.ltp.fact_confidence_bonus,
            wrong_factor=settings.feedback.wrong_factor,
            ids=ids,
            owners=owners,
            counts=counts,
            useful=useful,
            wrong=wrong,
            surfaced=surfaced,
            moments=moments,
        )

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """A part of the flush that the database may refuse alone: on an error it is
        rolled back, and what came before it stays."""
        async with self._tx.savepoint():
            yield

    async def set_aside(
        self, spec: TableSpec, agent: str | None, memory_id: uuid.UUID,
        events: Sequence[tuple[datetime, str, int]], reason: str,
    ) -> None:  # fmt: skip
        """Events of one memory (of `agent`, where one is named) that the database
        refused, into retrieval_dead_letters: (moment, kind, how many)."""
        moments, kinds, counts = (list(column) for column in zip(*events, strict=True))
        await self._tx.fetch(
            SET_ASIDE_EVENTS, table=spec.name, agent=agent, id=memory_id, moments=moments,
            kinds=kinds, counts=counts, reason=reason,
        )  # fmt: skip

    async def surface(
        self, spec: TableSpec, ids: list[uuid.UUID], owners: list[str], counts: list[int],
        agents: list[str],
    ) -> list[Row]:  # fmt: skip
        """Search hits that only count: surfaced_count + counts[i] (ids, owners and
        agents as strengthen's)."""
        await self._store.check_table(spec)
        query = build_surfaced_query(spec)
        return await self._tx.fetch(query, ids=ids, owners=owners, counts=counts, agents=agents)

    async def agents(
        self, spec: TableSpec, ids: list[uuid.UUID], agents: list[str] | None = None
    ) -> dict[uuid.UUID, list[str]]:
        """The agents of the live memories among `ids`, by id (an id may be two agents');
        of `agents` alone (a group of agent_groups), where they are named."""
        found: dict[uuid.UUID, list[str]] = defaultdict(list)
        for row in await self._tx.fetch(build_agents_query(spec), ids=ids, agents=agents):
            found[row["id"]].append(row["agent_id"])
        return dict(found)

    async def link(self, pairs: LinkRound, *, learning_rate: float) -> int:
        """One round of link updates (each pair at most once); the count written."""
        values = {
            **pairs.columns(),
            **self._store._link_values(),
            "learning_rate": learning_rate,
        }
        written = 0
        if any(c + u for c, u in zip(pairs.co, pairs.useful, strict=True)):
            strengthen = build_strengthen_links_query(
                values["links_tau"], values["links_prune"], learning_rate, values["wrong_factor"]
            )
            written += len(await self._tx.fetch(strengthen, **values))
        if any(c + u == 0 for c, u in zip(pairs.co, pairs.useful, strict=True)):
            written += len(await self._tx.fetch(WEAKEN_LINKS, **values))
        return written

    async def touch_retrieval_activity(self) -> None:
        await self._tx.fetchval(TOUCH_RETRIEVAL_ACTIVITY)
