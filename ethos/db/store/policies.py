"""Policies: writing the settings (policies, tiers, defaults), assigning and moving."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from ethos.db.store.core import Row, StoreCore, log
from ethos.db.store.sql.policies import (
    ASSIGN_AGENT_POLICY,
    FETCH_POLICY,
    LINK_SETTINGS,
    LIST_POLICIES,
    LOCK_SETTINGS_SYNC,
    POLICY_AGENTS,
    REPLACE_IMPORTANCE_TIERS,
    RESCHEDULE_LINKS,
    SETTINGS_SYNC_LOCK_KEY,
    TEXT_CONFIG,
    TEXT_CONFIG_EXISTS,
    UNASSIGN_AGENT_POLICY,
    UNCONFIGURE_POLICIES,
    UPSERT_ETHOS_SETTINGS,
    UPSERT_POLICIES,
    build_lock_rows_query,
    build_move_query,
    build_reindex_text_query,
    build_unschedule_query,
)
from ethos.domain.decay import DecayParams
from ethos.domain.errors import InputError, NotFoundError
from ethos.domain.policies import Policy, sql_row
from ethos.domain.tables import MEMORY_TABLES, TableSpec


def policy_of(row: Row) -> Policy:
    """A decay_policies row as a Policy."""
    params = DecayParams(**{name: row[name] for name in DecayParams.__dataclass_fields__})
    return Policy(row["name"], params, row["promote_after"], row["promote_to"])


class PolicyStore(StoreCore):
    """Store's policies: the settings written to the database, assignment, moves."""

    async def sync_settings(self) -> None:
        """Write the settings' policies, importance tiers and defaults, which the sweep,
        the insert trigger and the views read. Rows are written only where they differ;
        a policy gone from the settings is kept (memories may still have it), marked as
        no longer configured."""
        settings = self.settings
        policies = settings.policy_table
        rows = [sql_row(policy, policies) for policy in policies.values()]
        async with self._transaction() as tx:
            await tx.fetchval(LOCK_SETTINGS_SYNC, key=SETTINGS_SYNC_LOCK_KEY)
            changed = await tx.fetch(UPSERT_POLICIES, policies=json.dumps(rows))
            names = [row["name"] for row in changed]
            if names:  # their memories' schedules were computed on the old curves
                for spec in MEMORY_TABLES:
                    await tx.fetchval(build_unschedule_query(spec), policies=names)
            await tx.fetchval(UNCONFIGURE_POLICIES, names=sorted(policies))
            links = (settings.links.tau_days, settings.links.prune_weight)
            before = await tx.fetchrow(LINK_SETTINGS)
            text_config = settings.search.text_config
            if not await tx.fetchval(TEXT_CONFIG_EXISTS, config=text_config):
                raise InputError(
                    f"search.text_config: the database has no text search configuration"
                    f" {text_config!r} (the view pg_ts_config lists them)"
                )
            old_config = await tx.fetchval(TEXT_CONFIG)
            await tx.fetchval(
                UPSERT_ETHOS_SETTINGS,
                default_policy=settings.decay.default_policy,
                importance_otherwise=settings.importance.otherwise,
                at_risk_margin=settings.monitoring.at_risk_margin,
                links_tau=links[0],
                links_prune=links[1],
                text_config=text_config,
                auto=settings.importance.auto,
                auto_half=settings.importance.auto_half,
                auto_particularity=settings.importance.auto_particularity,
                auto_answer=settings.importance.auto_answer,
            )
            if old_config not in (None, text_config):  # words are stemmed anew
                log.warning("text_reindex", old=old_config, new=text_config)
                for spec in MEMORY_TABLES:
                    await tx.fetchval(build_reindex_text_query(spec), config=text_config)
            old = (before["links_tau_days"], before["links_prune_weight"]) if before else links
            if old != links:  # links fade on the new curve
                await tx.fetchval(RESCHEDULE_LINKS, links_tau=links[0], links_prune=links[1])
            await tx.fetchval(REPLACE_IMPORTANCE_TIERS, tiers=json.dumps(settings.importance.tiers))
        if changed:
            log.info("policies_written", policies=sorted(row["name"] for row in changed))

    async def policies(self) -> list[Policy]:
        """Every policy the database knows, the ones gone from the settings included."""
        return [policy_of(row) for row in await self._fetch(LIST_POLICIES)]

    async def policy(self, name: str) -> Policy:
        row = await self._fetchrow(FETCH_POLICY, name=name)
        if row is None:
            raise NotFoundError(f"no policy {name!r} in the database")
        return policy_of(row)

    async def policy_agents(self, name: str) -> list[Row]:
        return await self._fetch(POLICY_AGENTS, name=name)

    async def assign_policy(self, agent: str, policy: str) -> None:
        await self._fetchval(ASSIGN_AGENT_POLICY, agent=agent, policy=policy)

    async def unassign_policy(self, agent: str) -> str | None:
        policy: str | None = await self._fetchval(UNASSIGN_AGENT_POLICY, agent=agent)
        return policy

    async def move(self, spec: TableSpec, memory_id: uuid.UUID, policy: str, now: datetime) -> Row:
        """Move a live memory to `policy`, re-anchored at `now`."""
        await self.check_table(spec)
        async with self._transaction() as tx:
            await tx.fetchval(build_lock_rows_query(spec), ids=[memory_id])
            row = await tx.fetchrow(
                build_move_query(spec),
                id=memory_id,
                policy=policy,
                now=now,
                tolerance=self.settings.decay.refresh_tolerance,
            )
        if row is None:
            states = await self.id_states(spec, [memory_id])
            if memory_id in states:
                raise InputError(f"{spec.name} {memory_id} is pruned: recover it first")
            raise NotFoundError(f"no {spec.name} row with id {memory_id}")
        return row
