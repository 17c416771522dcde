"""langgraph-checkpoint's own store suite (tests/test_store.py, pinned in
langgraph_upstream), unchanged, with each InMemoryStore it constructs an ethos
EthosStore on a fresh database of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ethos.adapters.langgraph import EthosStore
from tests.peers import langgraph_upstream as upstream
from tests.peers.conftest import Stores

suite = upstream.load("langgraph-checkpoint", "test_store.py")
_current: list[Stores] = []


class InMemoryStore(EthosStore):
    """What the suite constructs (also inside its batched store, and spies on): an
    EthosStore, open, on a fresh database."""

    def __init__(self, **options: Any) -> None:
        super().__init__(_current[-1].settings(), **options)
        _current[-1].opening(self)


suite["InMemoryStore"] = InMemoryStore

# Left out, and why.
LEFT_OUT: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _stores(stores: Stores) -> Iterator[None]:
    _current.append(stores)
    yield
    _current.pop()


globals().update(upstream.tests_of(suite, LEFT_OUT))
