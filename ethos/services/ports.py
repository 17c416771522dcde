"""Where each service meets the store: one Protocol per concern, holding exactly the
store methods that service calls (pgqueuer's ports). A service names what it needs
here, not the whole Store; `ethos.db.store.Store` is the one implementation, and
`_store_conforms` below fails to type-check the day it stops being one."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ethos.db.store import BatchResult, LtpFlush, Row, SweepWorker
from ethos.domain.moments import Moment
from ethos.domain.tables import TableSpec
from ethos.settings import Settings

if TYPE_CHECKING:
    from ethos.db.store import Store


class Clock(Protocol):
    async def now(self) -> datetime: ...


class SweepPart(Protocol):
    """What a sweep runs on: the database, or one shard group of a Citus cluster on its
    node (`node` names it; "" the database's own server)."""

    @property
    def node(self) -> str: ...
    async def anything_due(self, now: datetime, *, prune: bool) -> bool: ...
    async def count_due(self, spec: TableSpec, now: datetime, *, prune: bool) -> int: ...
    async def due_share(self, spec: TableSpec, now: datetime) -> float | None: ...
    async def hint_horizon(self) -> str: ...
    async def drop_hints_before(self, spec: TableSpec, horizon: str) -> int: ...
    async def split_ids(self, spec: TableSpec, parts: int) -> list[uuid.UUID]: ...
    async def sweep_batch(
        self,
        spec: TableSpec,
        *,
        now: datetime,
        tolerance: float,
        after: uuid.UUID | None,
        upto: uuid.UUID | None = None,
        limit: int,
        agent: str | None,
        dry_run: bool,
    ) -> BatchResult: ...
    def sweep_worker(
        self, slices: Sequence[int], *, prune: bool
    ) -> AbstractAsyncContextManager[SweepWorker]: ...
    async def remove_faded_links(self, now: datetime, limit: int) -> int: ...


class SweepPort(Clock, Protocol):
    """What a sweep does: its audit row, and the parts it sweeps."""

    async def check_table(self, spec: TableSpec) -> None: ...
    async def start_sweep_run(
        self, trigger: str, mode: str, now: datetime, agent: str | None, daemon_id: str | None
    ) -> int: ...
    async def finish_sweep_run(
        self,
        run_id: int,
        *,
        status: str,
        totals: tuple[int, int, int],
        tables: dict[str, Any],
        error: str | None,
    ) -> None: ...
    async def sweep_parts(self, agent: str | None) -> Sequence[SweepPart]: ...


class LtpFlushPort(Protocol):
    """What applying retrievals takes: a flush's transaction, or the durable queue's."""

    @property
    def settings(self) -> Settings: ...
    def ltp_flush(self, flush_id: uuid.UUID) -> AbstractAsyncContextManager[LtpFlush | None]: ...
    def ltp_queue(
        self, limit: int, held: Sequence[str] = ()
    ) -> AbstractAsyncContextManager[tuple[LtpFlush, list[Row]]]: ...


class LtpPort(LtpFlushPort, Protocol):
    """The LTP buffer: the tables it records for, the durable queue, and its flushes."""

    async def check_table(self, spec: TableSpec) -> None: ...
    async def enqueue(
        self,
        spec: TableSpec,
        ids: list[uuid.UUID],
        at: datetime,
        kind: str,
        group: uuid.UUID | None,
        agent: str | None,
        receipt: uuid.UUID,
    ) -> None: ...


class RetrievalPort(Protocol):
    """Search and recall: the ranked candidates, and the memories linked to them."""

    async def nearest(
        self,
        *,
        agent: str,
        embedding: list[float],
        k: int,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]: ...
    async def recall(
        self,
        *,
        agent: str,
        query: str,
        tables: tuple[TableSpec, ...],
        k: int,
        now: datetime,
        moment: Moment | None = None,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]: ...
    async def neighbours(
        self, spec: TableSpec, ids: list[uuid.UUID], agent: str, now: datetime
    ) -> list[Row]: ...
    async def neighbour_rows(
        self,
        spec: TableSpec,
        ids: list[uuid.UUID],
        agent: str,
        now: datetime,
        matching: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Row]: ...


class IdStates(Protocol):
    async def id_states(
        self, spec: TableSpec, ids: Sequence[uuid.UUID], agent: str | None = None
    ) -> dict[uuid.UUID, bool]: ...


class LifecyclePort(IdStates, Protocol):
    """Merging duplicates, forgetting, purging and erasing, each with its audit row."""

    async def start_lifecycle_run(
        self, kind: str, trigger: str, now: datetime, selector: Mapping[str, Any]
    ) -> int: ...
    async def finish_lifecycle_run(
        self, run_id: int, *, status: str, counts: Mapping[str, Any], error: str | None
    ) -> None: ...
    async def duplicate_groups(
        self, spec: TableSpec, agent: str | None, after: tuple[str, uuid.UUID, str], limit: int
    ) -> list[Row]: ...
    async def near_duplicates(
        self, spec: TableSpec, agent: str | None, after: uuid.UUID, limit: int, threshold: float
    ) -> list[Row]: ...
    async def merge(
        self, spec: TableSpec, groups: Sequence[tuple[str, Sequence[uuid.UUID]]], now: datetime
    ) -> Row: ...
    async def live_owners(
        self, spec: TableSpec, ids: Sequence[uuid.UUID]
    ) -> dict[str, list[uuid.UUID]]: ...
    async def forget(
        self, spec: TableSpec, ids: list[uuid.UUID], now: datetime, agent: str
    ) -> list[uuid.UUID]: ...
    async def forget_agent(self, spec: TableSpec, agent: str, now: datetime) -> int: ...
    async def purge(
        self, spec: TableSpec, selector: Mapping[str, Any], *, limit: int, dry_run: bool
    ) -> dict[str, int]: ...
    async def undeletable(self, tables: Sequence[str]) -> list[str]: ...
    async def erase_count(self, spec: TableSpec, agent: str) -> int: ...
    async def erase_batch(
        self, spec: TableSpec, agent: str, after: uuid.UUID, limit: int, run_id: int
    ) -> tuple[int, uuid.UUID | None]: ...
    async def erase_agent_rest(self, agent: str, run_id: int | None) -> dict[str, int]: ...
    async def erase_agent_hints(self, agent: str, now: datetime) -> None: ...


class RecoveryPort(IdStates, Protocol):
    """Bringing pruned memories back, and the recovery's audit row."""

    async def recovery_count(self, spec: TableSpec, selector: Mapping[str, Any]) -> int: ...
    async def recovery_candidates(
        self, spec: TableSpec, selector: Mapping[str, Any], after: uuid.UUID | None, limit: int
    ) -> list[Row]: ...
    async def recover_batch(
        self, spec: TableSpec, rows: Sequence[Row], *, strength: float, now: datetime
    ) -> list[uuid.UUID]: ...
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
    ) -> int: ...


class DaemonPort(Clock, Protocol):
    """The daemon: the leader lock, heartbeats, idleness, and its housekeeping."""

    async def try_leader_lock(self) -> bool: ...
    async def release_leader_lock(self) -> None: ...
    async def heartbeat(
        self,
        daemon_id: str,
        *,
        host: str,
        pid: int,
        role: str,
        next_sweep_due: datetime | None,
        ltp_backlog: int,
        ltp_dropped: int,
    ) -> None: ...
    async def daemon_stopped(self, daemon_id: str) -> None: ...
    async def is_idle(self, idle_seconds: float) -> bool: ...
    async def last_sweep_finished(self) -> datetime | None: ...
    async def dead_letters(self, window_seconds: float) -> tuple[int, int]: ...
    async def forget_ltp_flushes(self) -> None: ...


if TYPE_CHECKING:  # a static proof, never run: mypy checks Store against every port

    def _store_conforms(
        store: Store,
    ) -> tuple[SweepPort, LtpPort, RetrievalPort, LifecyclePort, RecoveryPort, DaemonPort]:
        return store, store, store, store, store, store
