"""A model of the LangGraph door: ethos's EthosStore run side by side with LangGraph's
own InMemoryStore, the oracle, through random puts, gets, searches, deletes and
list_namespaces, with what the daemon does meanwhile (merges, sweeps, a year later too)
and the LTP flushes interleaved. An item put without a ttl reads back exactly as the
oracle's does, whatever ran in between: its value, under its key, in its namespace."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

from ethos.adapters.langgraph import EthosStore
from ethos.settings import DatabaseSettings, Settings
from tests.machines import TIMEOUT, Counts, budget

T = TypeVar("T")
BUDGET = budget(examples=15, steps=40)

# Each example's namespaces under a root of its own ("e3", ...): one database, one store
# for the run, and an example sees only what it wrote.
SUFFIXES = [("users", "ada"), ("users", "bob"), ("users", "ada", "notes"), ("team",)]
# Identical values under different keys are everyday LangGraph data (flags, statuses).
KEYS = ["monday", "tuesday", "wednesday", "pref"]
# Few values, so that one often lands under several keys; "n" in every one of them:
# InMemoryStore's range filters raise on an item without the field.
VALUES = st.sampled_from(
    [
        {"answer": "yes", "n": 0},
        {"answer": "no", "n": 1},
        {"answer": "yes", "n": 2, "text": "green tea"},
        {"answer": "yes", "n": 2, "text": "Green  tea"},
    ]
)
FILTERS = st.sampled_from(
    [None, {"answer": "yes"}, {"n": 1}, {"n": {"$gte": 2}}, {"text": "green tea"}]
)
PREFIXES = st.sampled_from([(), ("users",), ("users", "ada"), ("team",), ("nobody",)])


def _seen(item: Item | None) -> tuple[tuple[str, ...], str, dict[str, Any]] | None:
    return None if item is None else (item.namespace, item.key, item.value)


class LangGraphDoor(RuleBasedStateMachine):
    store: EthosStore
    counts: Counts
    examples: itertools.count[int]

    def __init__(self) -> None:
        super().__init__()
        self.root = f"e{next(self.examples)}"
        self.oracle = InMemoryStore()
        self.created: dict[tuple[tuple[str, ...], str], datetime] = {}
        self.counts.examples += 1

    def _ns(self, suffix: tuple[str, ...]) -> tuple[str, ...]:
        return (self.root, *suffix)

    def _daemon(self, work: Coroutine[Any, Any, T]) -> T:
        """The daemon's work, on the store's own engine and event loop."""
        self.counts.steps += 1
        loop = self.store._loop
        assert loop is not None
        return asyncio.run_coroutine_threadsafe(work, loop).result()

    @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS), value=VALUES)
    def put(self, suffix: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        self.counts.steps += 1
        self.store.put(self._ns(suffix), key, value)
        self.oracle.put(self._ns(suffix), key, value)

    @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS), refresh=st.booleans())
    def get(self, suffix: tuple[str, ...], key: str, refresh: bool) -> None:
        self.counts.steps += 1
        ours = self.store.get(self._ns(suffix), key, refresh_ttl=refresh)
        assert _seen(ours) == _seen(self.oracle.get(self._ns(suffix), key))
        if ours is not None:  # one memory all along: its creation stays, its update follows
            created = self.created.setdefault((ours.namespace, key), ours.created_at)
            assert ours.created_at == created <= ours.updated_at

    @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS))
    def delete(self, suffix: tuple[str, ...], key: str) -> None:
        self.counts.steps += 1
        self.store.delete(self._ns(suffix), key)
        self.oracle.delete(self._ns(suffix), key)
        self.created.pop((self._ns(suffix), key), None)

    @rule(prefix=PREFIXES, filter=FILTERS, query=st.sampled_from([None, "green tea", "yes"]))
    def search(
        self, prefix: tuple[str, ...], filter: dict[str, Any] | None, query: str | None
    ) -> None:
        """The items found: the same set (ranking by meaning is ethos's own)."""
        self.counts.steps += 1
        ours = self.store.search(self._ns(prefix), filter=filter, query=query, limit=100)
        theirs = self.oracle.search(self._ns(prefix), filter=filter, query=query, limit=100)
        assert sorted(map(_seen, ours)) == sorted(map(_seen, theirs))  # type: ignore[type-var]

    @rule(
        prefix=PREFIXES,
        suffix=st.sampled_from([None, ("ada",), ("*", "ada"), ("notes",)]),
        depth=st.sampled_from([None, 1, 2, 3]),
    )
    def list_namespaces(
        self, prefix: tuple[str, ...], suffix: tuple[str, ...] | None, depth: int | None
    ) -> None:
        self.counts.steps += 1
        given = {"prefix": self._ns(prefix), "suffix": suffix, "max_depth": depth, "limit": 100}
        ours = self.store.list_namespaces(**given)  # type: ignore[arg-type]
        assert sorted(ours) == sorted(self._held().list_namespaces(**given))  # type: ignore[arg-type]

    def _held(self) -> InMemoryStore:
        """The oracle's items alone: InMemoryStore keeps listing a namespace after its
        last item is deleted (even one a delete of a missing key named), where LangGraph's
        PostgresStore, as ethos, lists the namespaces that hold items."""
        held = InMemoryStore()
        for item in self.oracle.search((self.root,), limit=1000):
            held.put(item.namespace, item.key, item.value)
        return held

    @rule()
    def merge(self) -> None:
        """The daemon's merge step, as it runs every cycle."""
        engine = self.store.engine
        self._daemon(engine.merge(near=engine.settings.dedup.near, trigger="daemon"))

    @rule(later=st.sampled_from([0, 400]))
    def sweep(self, later: int) -> None:
        """The daemon's sweep now, or a year on: an item without a ttl is kept."""
        engine = self.store.engine
        moment = datetime.now(UTC) + timedelta(days=later) if later else None
        self._daemon(engine.sweep(now=moment, trigger="daemon"))

    @rule()
    def ltp_flush(self) -> None:
        self._daemon(self.store.engine.ltp.flush())

    @invariant()
    def same_items(self) -> None:
        """Every item of this example, as the oracle holds it."""
        ours = self.store.search((self.root,), limit=1000, refresh_ttl=False)
        theirs = self.oracle.search((self.root,), limit=1000)
        assert sorted(map(_seen, ours)) == sorted(map(_seen, theirs))  # type: ignore[type-var]


@pytest.mark.timeout(TIMEOUT)
def test_ethos_store_reads_back_as_langgraphs_in_memory_store(
    database_url: str, record_property: Callable[[str, object], None]
) -> None:
    counts = Counts("LangGraph door (EthosStore vs InMemoryStore)")
    settings = Settings(database=DatabaseSettings(url=database_url))
    started = time.monotonic()
    with EthosStore(settings) as store:
        machine = type(
            "LangGraphMachine",
            (LangGraphDoor,),
            {"store": store, "counts": counts, "examples": itertools.count()},
        )
        run_state_machine_as_test(machine, settings=BUDGET)
    counts.report(time.monotonic() - started, record_property)
    assert counts.steps >= BUDGET.max_examples * 5  # the machine ran, not just started
