"""langgraph-checkpoint-postgres's own PostgresStore suite (tests/test_store.py, pinned
in langgraph_upstream), unchanged, with the store it constructs (its `store` fixture
and _create_vector_store) an ethos EthosStore on a fresh database, configured alike.

The suite's `store` fixture opens PostgresStore three ways (one connection, a pipeline,
a pool); ethos's store has one way (its engine's pool), so each test runs once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from ethos.adapters.langgraph import EthosStore
from tests.peers import langgraph_upstream as upstream
from tests.peers.conftest import Stores, running, vector_index

suite = upstream.load("langgraph-checkpoint-postgres", "test_store.py")
# The suite's fixture from its conftest (not the rest: it connects to its own server).
fake_embeddings = upstream.load("langgraph-checkpoint-postgres", "conftest.py")["fake_embeddings"]

INTERNALS = "PostgresStore's internals"
LEFT_OUT = {
    "test_namespace_labels_with_trailing_newline": "by design, not internals: a label is"
    " part of an ethos agent id, which refuses characters that do not show (a CHECK)",
    "test_escape_like_literal": f"{INTERNALS}: its private _escape_like_literal",
    "test_namespace_match_pattern": f"{INTERNALS}: its private _namespace_match_pattern",
    "test_nonnull_migrations": f"{INTERNALS}: its MIGRATIONS",
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
def store(stores: Stores) -> EthosStore:
    ttl = {"default_ttl": suite["TTL_MINUTES"], "refresh_on_read": True,
           "sweep_interval_minutes": suite["TTL_MINUTES"] / 2}  # fmt: skip
    return stores.opening(EthosStore(stores.settings(), ttl=ttl))  # type: ignore[arg-type]


@contextmanager
def _create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Embeddings,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[EthosStore]:
    index = vector_index(vector_type, distance_type, fake_embeddings, text_fields)
    ttl: Any = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    with EthosStore(running().settings(), index=index, ttl=ttl) as opened:
        yield opened


suite["store"] = store
suite["_create_vector_store"] = _create_vector_store
globals().update(upstream.tests_of(suite, LEFT_OUT))
