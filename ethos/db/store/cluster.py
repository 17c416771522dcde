"""Distributing ethos's tables on a Citus cluster, in place (`ethos distribute`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ethos.db.store.sessions import translated
from ethos.db.store.sql.cluster import (
    ACTIVE_WORKERS,
    CITUS_TABLES,
    CREATE_DISTRIBUTED_TABLE,
    CREATE_REFERENCE_TABLE,
    DISTRIBUTED,
    KEYED_WITHOUT_AGENT,
    MISSING_TABLES,
    PLANNED_ONCE,
    REFERENCE,
    UNSAFE_TRIGGERS,
    forget_hints,
    plan_each_call,
    user_triggers,
    vacuum,
)
from ethos.db.store.sweep import SweepStore
from ethos.domain.errors import InputError
from ethos.domain.tables import MEMORY_TABLES


@dataclass
class Distribution:
    """What `distribute` did: the tables it made reference or distributed now, those
    Citus held already, those it left on the coordinator (a key without the agent:
    `ethos migrate` first), and the rows it hinted again on their shards."""

    nodes: int = 0
    reference: list[str] = field(default_factory=list)
    distributed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    planned_each_call: list[str] = field(default_factory=list)
    hinted: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers": self.nodes,
            "reference": self.reference,
            "distributed": self.distributed,
            "already": self.already,
            "left": self.left,
            "planned_each_call": self.planned_each_call,
            "hinted": self.hinted,
        }


class ClusterStore(SweepStore):
    """Store's Citus cluster: distributing a migrated database by agent."""

    async def distribute(self) -> Distribution:
        """Make the shared tables reference tables and distribute the rest by agent,
        colocated, rows and all; what Citus holds already is left as it is, so a second
        run (or one after an interruption) converges. A table's triggers are off while
        its rows move (they would fire again for rows written already). The due tables
        are emptied before they move and every row hinted again on its shard after; the
        tables moved are vacuumed and analyzed (Citus gives the shards no statistics)."""
        if not self.citus:
            raise InputError("this server has no Citus: `ethos distribute` needs a coordinator")
        done = Distribution(nodes=await self._fetchval(ACTIVE_WORKERS))
        if done.nodes < 1:
            raise InputError("the Citus coordinator has no active worker (citus_add_node)")
        held = {
            r["table_name"]
            for r in await self._fetch(CITUS_TABLES, tables=[*REFERENCE, *DISTRIBUTED])
        }
        # A table a later migration makes is none of these yet (a database not migrated
        # to this ethos): that migration makes it Citus's on a distributed database
        # (decision 0025).
        missing = {
            r["table_name"]
            for r in await self._fetch(MISSING_TABLES, tables=[*REFERENCE, *DISTRIBUTED])
        }
        done.already = sorted(held)
        done.left = sorted(
            r["table_name"] for r in await self._fetch(KEYED_WITHOUT_AGENT, tables=DISTRIBUTED)
        )
        done.planned_each_call = await self.plan_functions_each_call()
        for table in REFERENCE:
            if table not in held | missing:
                await self._fetchval(CREATE_REFERENCE_TABLE, table=table)
                done.reference.append(table)
        for table in DISTRIBUTED:
            if table in held or table in missing or table in done.left:
                continue
            async with self._transaction() as tx:
                await tx.execute_literal(UNSAFE_TRIGGERS)
                if table.endswith("_due"):
                    await tx.execute_literal(forget_hints(table))
                await tx.execute_literal(user_triggers(table, on=False))
                await tx.fetchval(
                    CREATE_DISTRIBUTED_TABLE,
                    table=table,
                    colocate_with="none" if table == DISTRIBUTED[0] else DISTRIBUTED[0],
                )
                await tx.execute_literal(user_triggers(table, on=True))
            done.distributed.append(table)
        for table in done.distributed:
            with translated():
                await self._pool.execute(vacuum(table))
        self._distributed = True
        now = await self.now()
        parts = await self.sweep_parts(None)
        for spec in MEMORY_TABLES:
            done.hinted[spec.name] = sum([await part.rehint(spec, now) for part in parts])
        return done

    async def plan_functions_each_call(self) -> list[str]:
        """The functions that keep one generic plan a session, made to plan each call
        (Citus refuses to plan a generic one): their names. A migration that replaces
        such a function restates its settings, so `ethos migrate` calls this again on a
        distributed database."""
        async with self._transaction() as tx:
            functions = [row["function"] for row in await tx.fetch(PLANNED_ONCE)]
            for function in functions:
                await tx.execute_literal(plan_each_call(function))
        return functions
