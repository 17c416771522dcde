"""The Python API: an Engine opened from settings, used as an async context manager.

async with Engine(load_settings()) as engine:
    memory_id = await engine.add("episode", agent_id="a1", content="met Ada", emotional_tone=0.8)
    report = await engine.sweep()
    print(await engine.explain("episode", memory_id))

Engine is one class made of a mixin per concern on a core, as the store is:

- core: opening and closing (the store, the LTP buffer), the clock, embedding, ids
- memories: add (dedup, add with recall), missing vectors, explain
- retrieval: search, recall, record_retrieval, feedback, links
- policies: the policies, assignment, move
- operations: sweep, recover, merge, forget, purge, erase, roles, status, stats
- items: memories a client names by key (the LangGraph store)
- listing: what front ends list and change by id (the HTTP API, the dashboard)
"""

import asyncio

from ethos import db
from ethos.domain.explain import Account
from ethos.services.engine.items import ItemEngine, ItemPut, StoredItem
from ethos.services.engine.listing import (
    MAX_LIST,
    AgentCounts,
    HistoryEvent,
    ListingEngine,
    MemoryView,
    PrunedCount,
    TableCount,
    describe,
)
from ethos.services.engine.memories import Added, MemoryEngine, VectorsMade
from ethos.services.engine.operations import (
    LtpStatus,
    OperationsEngine,
    PrunedMemory,
    Stats,
    Status,
)
from ethos.services.engine.policies import Moved, PolicyEngine
from ethos.services.engine.retrieval import Link
from ethos.settings import Settings

__all__ = [
    "MAX_LIST",
    "Account",
    "Added",
    "AgentCounts",
    "Engine",
    "HistoryEvent",
    "ItemPut",
    "Link",
    "LtpStatus",
    "MemoryView",
    "Moved",
    "PrunedCount",
    "PrunedMemory",
    "Stats",
    "Status",
    "StoredItem",
    "TableCount",
    "VectorsMade",
    "describe",
    "migrate",
]


class Engine(MemoryEngine, PolicyEngine, OperationsEngine, ItemEngine, ListingEngine):
    """Connects on enter, closes on exit. One engine serves many concurrent tasks.

    `store`: an open Store to work through (the daemon shares its own); the engine then
    leaves closing it to its owner. See the concern modules for what each part does."""


async def migrate(settings: Settings, url: str) -> None:
    """The database at `url` up to the schema, holding these settings' policies, tiers and
    defaults: what `ethos migrate` leaves, ready to use (distributed on a Citus cluster:
    the functions it replaced are made fit for Citus again, as `ethos distribute` did)."""
    # Alembic runs its own event loop: give it a thread.
    await asyncio.to_thread(db.migrate, settings, url)
    async with Engine(settings, url=url, check_settings=False) as engine:
        await engine.apply_settings()
        if await engine.store.distributed():
            await engine.store.plan_functions_each_call()
