"""Policies: writing the settings (policies, tiers, defaults), assigning and moving."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

from ethos.db.store.core import Row, StoreCore, Transaction, log
from ethos.db.store.sql.policies import (
    ASSIGN_AGENT_POLICY,
    ETHOS_SETTINGS,
    FETCH_POLICY,
    IMPORTANCE_TIERS,
    LIST_POLICIES,
    LOCK_SETTINGS_APPLY,
    POLICY_AGENTS,
    REPLACE_IMPORTANCE_TIERS,
    RESCHEDULE_LINKS,
    SETTINGS_APPLY_LOCK_KEY,
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
from ethos.settings import Settings

# The settings the database keeps in ethos_settings: its column, the settings' key.
DATABASE_SETTINGS = {
    "default_policy": "decay.default_policy",
    "importance_otherwise": "importance.otherwise",
    "at_risk_margin": "monitoring.at_risk_margin",
    "links_tau_days": "links.tau_days",
    "links_prune_weight": "links.prune_weight",
    "text_config": "search.text_config",
    "auto_importance": "importance.auto",
    "auto_importance_half": "importance.auto_half",
    "auto_importance_particularity": "importance.auto_particularity",
    "auto_importance_answer": "importance.auto_answer",
}
# What decay_policies keeps of a policy besides its name (lifetime_days follows from them).
POLICY_COLUMNS = (
    *DecayParams.__dataclass_fields__, "promote_after", "promote_to", "promotion_counts",
    "promotion_targets",
)  # fmt: skip


@dataclass(frozen=True)
class SettingDifference:
    """A setting the database holds otherwise than the settings say (None: not there)."""

    key: str  # e.g. decay.default_policy, policies.working, importance.tiers
    database: Any
    settings: Any


def _database_settings(settings: Settings) -> dict[str, Any]:
    return {column: attrgetter(key)(settings) for column, key in DATABASE_SETTINGS.items()}


def _policy_columns(row: Row) -> dict[str, Any]:
    return {column: row[column] for column in POLICY_COLUMNS}


async def _differences(tx: Transaction, settings: Settings) -> list[SettingDifference]:
    """The settings' policies, tiers and ethos_settings against the database's rows."""
    out: list[SettingDifference] = []
    stored = await tx.fetchrow(ETHOS_SETTINGS)
    for column, value in _database_settings(settings).items():
        held = stored[column] if stored else None
        if held != value:
            out.append(SettingDifference(DATABASE_SETTINGS[column], held, value))
    tiers = {row["policy"]: row["min_importance"] for row in await tx.fetch(IMPORTANCE_TIERS)}
    if tiers != settings.importance.tiers:
        out.append(SettingDifference("importance.tiers", tiers, settings.importance.tiers))
    policies = settings.policy_table
    rows = await tx.fetch(LIST_POLICIES)
    held_policies = {row["name"]: _policy_columns(row) for row in rows if row["configured"]}
    given = {name: _policy_columns(sql_row(p, policies)) for name, p in policies.items()}
    for name in sorted(held_policies.keys() | given.keys()):
        held, wanted = held_policies.get(name), given.get(name)
        if held is None or wanted is None:
            out.append(SettingDifference(f"policies.{name}", held, wanted))
        elif held != wanted:
            columns = [column for column in POLICY_COLUMNS if held[column] != wanted[column]]
            held, wanted = {c: held[c] for c in columns}, {c: wanted[c] for c in columns}
            out.append(SettingDifference(f"policies.{name}", held, wanted))
    return out


def policy_of(row: Row) -> Policy:
    """A decay_policies row as a Policy."""
    params = DecayParams(**{name: row[name] for name in DecayParams.__dataclass_fields__})
    return Policy(row["name"], params, row["promote_after"], row["promote_to"])


class PolicyStore(StoreCore):
    """Store's policies: the settings written to the database, assignment, moves."""

    async def settings_differences(self) -> list[SettingDifference]:
        """Where the database's settings differ from this store's (none: they agree)."""
        async with self._transaction() as tx:
            return await _differences(tx, self.settings)

    async def apply_settings(self, *, dry_run: bool = False) -> list[SettingDifference]:
        """Write the settings' policies, importance tiers and defaults, which the sweep,
        the insert trigger and the views read, where they differ from the database's
        (`dry_run`: only say where). A policy gone from the settings is kept (memories
        may still have it), marked as no longer configured."""
        settings = self.settings
        text_config = settings.search.text_config
        async with self._transaction() as tx:
            await tx.fetchval(LOCK_SETTINGS_APPLY, key=SETTINGS_APPLY_LOCK_KEY)
            if not await tx.fetchval(TEXT_CONFIG_EXISTS, config=text_config):
                raise InputError(
                    f"search.text_config: the database has no text search configuration"
                    f" {text_config!r} (the view pg_ts_config lists them)"
                )
            differences = await _differences(tx, settings)
            if dry_run or not differences:
                return differences
            keys = {difference.key for difference in differences}
            policies = settings.policy_table
            rows = [sql_row(policy, policies) for policy in policies.values()]
            changed = await tx.fetch(UPSERT_POLICIES, policies=json.dumps(rows))
            names = [row["name"] for row in changed]
            if names:  # their memories' schedules were computed on the old curves
                for spec in MEMORY_TABLES:
                    await tx.fetchval(build_unschedule_query(spec), policies=names)
            await tx.fetchval(UNCONFIGURE_POLICIES, names=sorted(policies))
            if keys & set(DATABASE_SETTINGS.values()):
                await tx.fetchval(UPSERT_ETHOS_SETTINGS, **_database_settings(settings))
            if "search.text_config" in keys:  # words are stemmed anew
                for spec in MEMORY_TABLES:
                    await tx.fetchval(build_reindex_text_query(spec), config=text_config)
            if keys & {"links.tau_days", "links.prune_weight"}:  # links fade on the new curve
                await tx.fetchval(
                    RESCHEDULE_LINKS,
                    links_tau=settings.links.tau_days,
                    links_prune=settings.links.prune_weight,
                )
            if "importance.tiers" in keys:
                tiers = json.dumps(settings.importance.tiers)
                await tx.fetchval(REPLACE_IMPORTANCE_TIERS, tiers=tiers)
        log.info("settings_applied", keys=sorted(keys))
        return differences

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

    async def move(
        self, spec: TableSpec, memory_id: uuid.UUID, policy: str, now: datetime, agent: str | None
    ) -> Row:
        """Move a live memory (of `agent`; where none is named, of the one agent that
        holds the id) to `policy`, re-anchored at `now`, in the agent's session."""
        await self.check_table(spec)
        owner = await self.live_owner(spec, memory_id, agent)
        row = None
        if owner is not None:
            async with self._transaction_of(owner) as tx:
                await tx.fetchval(build_lock_rows_query(spec), agent=owner, ids=[memory_id])
                row = await tx.fetchrow(
                    build_move_query(spec),
                    agent=owner,
                    id=memory_id,
                    policy=policy,
                    now=now,
                    tolerance=self.settings.decay.refresh_tolerance,
                )
        if row is None:
            raise await self.missing(spec, memory_id, agent)
        return row
