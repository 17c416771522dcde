"""Decay policies: those in the database, agents' assignments, moves."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ethos.db.store import SettingDifference
from ethos.domain.errors import InputError
from ethos.domain.policies import Policy
from ethos.domain.tables import TableSpec
from ethos.services.engine.core import EngineCore


@dataclass(frozen=True)
class Moved:
    """A memory moved to another policy at `now`, with its salience there."""

    table: str
    id: uuid.UUID
    agent: str
    policy: str
    old_policy: str
    salience: float
    now: datetime

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"id": str(self.id), "now": self.now.isoformat()}


class PolicyEngine(EngineCore):
    """Policies, assignment and moving a memory to another."""

    async def apply_settings(self, *, dry_run: bool = False) -> list[SettingDifference]:
        """Write this engine's policies, tiers and defaults to the database, where they
        differ from what it holds (`dry_run`: only say where). Every process then works
        with them: the sweep, the insert trigger and the views read them there."""
        return await self.store.apply_settings(dry_run=dry_run)

    async def move(
        self,
        table: str | TableSpec | None,
        memory_id: str | uuid.UUID,
        policy: str,
        *,
        agent: str | None = None,
        now: datetime | None = None,
    ) -> Moved:
        """Move a live memory (of `agent`: needed where several agents hold the id; of
        `table`, else found) to another policy. Its curve is re-anchored at `now` (its
        strength then on the old curve), so its salience goes on from there."""
        self.settings.policy(policy)
        (spec, owner), found = await self.whose(memory_id, agent=agent, table=table)
        at = await self._moment(now)
        row = await self.store.move(spec, found, policy, at, owner)
        return Moved(spec.name, row["id"], row["agent_id"], row["policy"], row["old_policy"],
                     row["salience"], at)  # fmt: skip

    async def policies(self) -> list[Policy]:
        """The policies in the database: the settings' (as `ethos settings apply` wrote
        them), and any no longer configured that memories may still have."""
        return await self.store.policies()

    async def policy_agents(self, name: str) -> list[str]:
        """The agents whose new memories get this policy."""
        return [row["agent_id"] for row in await self.store.policy_agents(name)]

    async def assign_policy(self, agent_id: str, policy: str) -> None:
        """From now on, memories of this agent that name no policy (nor importance) get
        this one."""
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise InputError("agent is required")
        self.settings.policy(policy)
        await self.store.assign_policy(agent_id, policy)

    async def unassign_policy(self, agent_id: str) -> str | None:
        """Back to the default; returns the policy the agent had (None: it had none)."""
        return await self.store.unassign_policy(agent_id)
