"""langgraph-checkpoint-postgres's own AsyncPostgresStore suite
(tests/test_async_store.py, pinned in langgraph_upstream), unchanged, with the store it
constructs (its `store` fixture and _create_vector_store) an ethos AsyncEthosStore on a
fresh database, configured alike.

The suite's `store` fixture opens AsyncPostgresStore three ways (one connection, a
pipeline, a pool); ethos's store has one way (its engine's pool), so each test runs
once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from ethos.adapters.langgraph import AsyncEthosStore
from tests.peers import langgraph_upstream as upstream
from tests.peers.conftest import Stores, running, vector_index

DIST = "langgraph-checkpoint-postgres"
suite = upstream.load(DIST, "test_async_store.py")
# The suite's fixture from its conftest (not the rest: it connects to its own server).
fake_embeddings = upstream.load(DIST, "conftest.py")["fake_embeddings"]

INTERNALS = "AsyncPostgresStore's internals"
LEFT_OUT = {
    "test_abatch_uses_single_pool_checkout": f"{INTERNALS}: its connection module's"
    " get_connection, patched to count pool checkouts",
    "test_store_ttl": "calls start_ttl_sweeper, AsyncPostgresStore's own method (not"
    " BaseStore's): ethos's daemon sweeps what expires",
    **{
        name: f"{INTERNALS}: SQL on its `store` table through store._cursor()"
        for name in (
            "test_omit_expired_filters_read_paths",
            "test_omit_expired_disabled_preserves_expired_rows",
            "test_omit_expired_refresh_ttl_only_refreshes_live_rows",
            "test_omit_expired_search_pagination",
        )
    },
}


@pytest.fixture
async def store(stores: Stores) -> AsyncIterator[AsyncEthosStore]:
    ttl: Any = {"default_ttl": suite["TTL_MINUTES"], "refresh_on_read": True,
                "sweep_interval_minutes": suite["TTL_MINUTES"] / 2}  # fmt: skip
    async with AsyncEthosStore(stores.settings(), ttl=ttl) as opened:
        yield opened


@asynccontextmanager
async def _create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Embeddings,
    text_fields: list[str] | None = None,
) -> AsyncIterator[AsyncEthosStore]:
    index = vector_index(vector_type, distance_type, fake_embeddings, text_fields)
    async with AsyncEthosStore(running().settings(), index=index) as opened:
        yield opened


suite["store"] = store
suite["_create_vector_store"] = _create_vector_store
globals().update(upstream.tests_of(suite, LEFT_OUT))

# 6,000 operations from ten threads, concurrent puts of one key among them, each
# thread's a batch of its own (the 60,000 issued at once run as one: about 5 s): about
# 10 s alone, more beside the rest of the suite.
globals()["test_large_batches"] = pytest.mark.timeout(600)(globals()["test_large_batches"])
