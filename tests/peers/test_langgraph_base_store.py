"""langgraph-checkpoint's own store suite (tests/test_store.py, pinned in
langgraph_upstream), unchanged, with each InMemoryStore it constructs an ethos
EthosStore on a fresh database of its own."""

from __future__ import annotations

from typing import Any

from ethos.adapters.langgraph import EthosStore
from tests.peers import langgraph_upstream as upstream
from tests.peers.conftest import running

suite = upstream.load("langgraph-checkpoint", "test_store.py")


class InMemoryStore(EthosStore):
    """What the suite constructs (also inside its batched store, and spies on): an
    EthosStore, open, on a fresh database."""

    def __init__(self, **options: Any) -> None:
        super().__init__(running().settings(), **options)
        running().opening(self)


suite["InMemoryStore"] = InMemoryStore

# Left out, and why.
LEFT_OUT: dict[str, str] = {}


globals().update(upstream.tests_of(suite, LEFT_OUT))
