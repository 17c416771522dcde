"""What the daemon reads and writes: idleness, heartbeat, status, dead letters,
row estimates."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ethos.db.store.core import LEADER_LOCK_KEY, Row, StoreCore
from ethos.db.store.sql.daemon import (
    DAEMON_HEARTBEAT,
    DAEMON_STOPPED,
    DEAD_LETTERS,
    IS_IDLE,
    ROW_ESTIMATES,
    STATUS_DAEMONS,
    STATUS_LAST_SWEEP,
)
from ethos.domain.tables import MEMORY_TABLES


class DaemonStore(StoreCore):
    """Store's side of the daemon: idleness, heartbeat, status, dead letters."""

    async def row_estimates(self) -> list[Row]:
        """Live and pruned rows per memory table, from the planner's statistics."""
        return await self._fetch(ROW_ESTIMATES, tables=[spec.name for spec in MEMORY_TABLES])

    async def is_idle(self, idle_seconds: float) -> bool:
        idle: bool = await self._fetchval(IS_IDLE, seconds=idle_seconds)
        return idle

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
    ) -> None:
        await self._fetchval(
            DAEMON_HEARTBEAT,
            id=daemon_id,
            host=host,
            pid=pid,
            role=role,
            lock_backend_pid=self.leader_lock_backend if role == "leader" else None,
            next_sweep_due=next_sweep_due,
            ltp_backlog=ltp_backlog,
            ltp_dropped=ltp_dropped,
        )

    async def daemon_stopped(self, daemon_id: str) -> None:
        await self._fetchval(DAEMON_STOPPED, id=daemon_id)

    async def status(self, alive_seconds: float) -> dict[str, Any]:
        await self.interrupt_orphaned_runs()
        daemons = await self._fetch(
            STATUS_DAEMONS, alive_seconds=alive_seconds, lock_key=LEADER_LOCK_KEY
        )
        last = await self._fetchrow(STATUS_LAST_SWEEP)
        return {
            "daemons": [dict(row) for row in daemons],
            "last_sweep": {**last, "tables": json.loads(last["tables"])} if last else None,
            "retrieval_dead_letters": (await self.dead_letters(0))[0],
        }

    async def dead_letters(self, window_seconds: float) -> tuple[int, int]:
        """Retrievals set aside in retrieval_dead_letters: all, and in the last window."""
        row = await self._fetchrow(DEAD_LETTERS, window=window_seconds)
        assert row is not None
        return row["total"], row["recent"]
