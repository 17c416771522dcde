"""A model of the HTTP door: mem0's own MemoryClient against `ethos serve`'s app on
127.0.0.1, checked step by step against a small model of mem0's semantics as ethos
documents them (ethos/adapters/http/owners.py), with what the daemon does meanwhile
(merges, sweeps, the LTP flushes) interleaved:

- a memory keeps the owners it was added with (user_id, agent_id, run_id); the first of
  them names its ethos agent;
- a request's owners combine as an AND: it reaches the live memories of the ethos agent
  its first owner names that hold every owner it names;
- add with infer=False stores the text; one held already for exactly these owners is
  not stored twice (event NONE, the same id);
- update replaces the text, delete forgets (a 404 after), history lists ADD, UPDATE
  (old and new text), DELETE, oldest first.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvicorn
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, rule, run_state_machine_as_test

from ethos.adapters.door import guarded
from ethos.adapters.http import build_app
from ethos.adapters.http.access import framed, server_door
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.machines import TIMEOUT, Counts, Loop, budget
from tests.servers import TOKEN, free_port

T = TypeVar("T")
BUDGET = budget(examples=10, steps=30)
# Read by mem0 when it is imported: no telemetry.
os.environ.setdefault("MEM0_TELEMETRY", "False")

TEXTS = ["My allergy is peanuts", "I am vegetarian", "I work night shifts", "I can't swim"]
# Each example's owners carry its own suffix ("dana_e3"): one server, one database.
OWNERS = st.fixed_dictionaries(
    {},
    optional={
        "user_id": st.sampled_from(["dana", "eli"]),
        "agent_id": st.sampled_from(["nurse_bot", "chef_bot"]),
        "run_id": st.just("r1"),
    },
).filter(bool)
IDS = ("user_id", "agent_id", "run_id")


def _agent(owners: dict[str, str]) -> str:
    return next(owners[key] for key in IDS if key in owners)


def _key(text: str) -> str:
    """The text as ethos compares it (ethos_content_key: folded, spaces collapsed)."""
    return " ".join(text.lower().split())


@dataclass
class Memory:
    id: str
    text: str
    owners: dict[str, str]
    live: bool = True
    events: list[tuple[str, str | None, str | None]] = field(default_factory=list)

    def reached(self, request: dict[str, str]) -> bool:
        """Whether a request naming these owners reaches this memory."""
        return (
            self.live
            and _agent(self.owners) == _agent(request)
            and all(self.owners.get(key) == value for key, value in request.items())
        )


class Mem0Door(RuleBasedStateMachine):
    client: Any
    engine: Engine
    loop: Loop
    counts: Counts
    examples: Iterator[int]
    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        self.tag = f"e{next(self.examples)}"
        self.model: dict[str, Memory] = {}
        self.counts.examples += 1

    def _owners(self, owners: dict[str, str]) -> dict[str, str]:
        return {key: f"{value}_{self.tag}" for key, value in owners.items()}

    def _reached(self, request: dict[str, str]) -> set[str]:
        return {m.id for m in self.model.values() if m.reached(request)}

    def _daemon(self, work: Coroutine[Any, Any, T]) -> T:
        """The daemon's work, on the server's own engine and event loop."""
        self.counts.steps += 1
        return self.loop.run(work)

    @rule(target=memories, text=st.sampled_from(TEXTS), owners=OWNERS)
    def add(self, text: str, owners: dict[str, str]) -> str:
        self.counts.steps += 1
        owners = self._owners(owners)
        [added] = self.client.add(text, infer=False, **owners)["results"]
        held = [
            m for m in self.model.values()
            if m.live and m.owners == owners and _key(m.text) == _key(text)
        ]  # fmt: skip
        if held:
            assert (added["event"], added["id"]) == ("NONE", held[0].id)
        else:
            assert added["event"] == "ADD" and added["id"] not in self.model
            self.model[added["id"]] = Memory(
                added["id"], text, owners, events=[("ADD", None, text)]
            )
        memory_id: str = added["id"]
        return memory_id

    @rule(memory=memories)
    def get(self, memory: str) -> None:
        from mem0.exceptions import MemoryNotFoundError

        self.counts.steps += 1
        known = self.model[memory]
        if not known.live:
            with pytest.raises(MemoryNotFoundError):
                self.client.get(memory)
            return
        got = self.client.get(memory)
        assert got["memory"] == known.text
        assert {key: got[key] for key in IDS if got[key] is not None} == known.owners

    @rule(request=OWNERS)
    def get_all(self, request: dict[str, str]) -> None:
        self.counts.steps += 1
        request = self._owners(request)
        listed = self.client.get_all(filters=request, page_size=100)
        assert {m["id"] for m in listed["results"]} == self._reached(request)
        assert listed["count"] == len(self._reached(request))

    @rule(request=OWNERS, query=st.sampled_from(TEXTS))
    def search(self, request: dict[str, str], query: str) -> None:
        """What a search finds is among what the owners reach, and holds every memory
        they reach whose text is the query."""
        self.counts.steps += 1
        request = self._owners(request)
        found = {h["id"] for h in self.client.search(query, filters=request, top_k=50)["results"]}
        reached = self._reached(request)
        assert found <= reached
        assert {i for i in reached if _key(self.model[i].text) == _key(query)} <= found

    @rule(memory=memories, text=st.sampled_from(TEXTS))
    def update(self, memory: str, text: str) -> None:
        known = self.model[memory]
        # A new text (an update that changes nothing is no revision: ethos's history then
        # shows it only while there is no other), and one text once per owners (as add
        # keeps it): two would be one memory's duplicates.
        if (
            not known.live
            or text == known.text
            or any(
                m.live
                and m.id != memory
                and m.owners == known.owners
                and _key(m.text) == _key(text)
                for m in self.model.values()
            )
        ):
            return
        self.counts.steps += 1
        self.client.update(memory, text=text)
        known.events.append(("UPDATE", known.text, text))
        known.text = text

    @rule(memory=memories)
    def delete(self, memory: str) -> None:
        from mem0.exceptions import MemoryError as Mem0Error

        self.counts.steps += 1
        known = self.model[memory]
        if not known.live:
            with pytest.raises(Mem0Error, match="already pruned"):
                self.client.delete(memory)
            return
        self.client.delete(memory)
        known.live = False
        known.events.append(("DELETE", None, None))

    @rule(request=OWNERS)
    def delete_all(self, request: dict[str, str]) -> None:
        self.counts.steps += 1
        request = self._owners(request)
        self.client.delete_all(**request)
        for memory_id in self._reached(request):
            self.model[memory_id].live = False
            self.model[memory_id].events.append(("DELETE", None, None))

    @rule(memory=memories)
    def history(self, memory: str) -> None:
        self.counts.steps += 1
        events = [
            (e["event"], e["old_memory"], e["new_memory"]) if e["event"] != "DELETE"
            else ("DELETE", None, None)
            for e in self.client.history(memory)
        ]  # fmt: skip
        assert events == self.model[memory].events

    @rule()
    def merge(self) -> None:
        """The daemon's merge step, as it runs every cycle."""
        self._daemon(self.engine.merge(near=self.engine.settings.dedup.near, trigger="daemon"))

    @rule()
    def sweep(self) -> None:
        self._daemon(self.engine.sweep(trigger="daemon"))

    @rule()
    def ltp_flush(self) -> None:
        self._daemon(self.engine.ltp.flush())


@pytest.mark.timeout(TIMEOUT)
def test_mem0_client_through_ethos_follows_a_model_of_mem0(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    record_property: Callable[[str, object], None],
) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path))
    monkeypatch.setenv("MEMORY_TOKEN", TOKEN)
    from mem0 import MemoryClient

    counts = Counts("HTTP door (mem0's MemoryClient vs a model of mem0)")
    settings = Settings(database=DatabaseSettings(url=database_url))
    app = build_app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        framed(guarded(app, server_door(settings, "127.0.0.1", "MEMORY_TOKEN"))),
        host="127.0.0.1", port=port, log_level="warning", lifespan="on",
    ))  # fmt: skip
    loop = Loop()
    serving = loop.submit(server.serve())
    try:
        while not server.started:
            assert not serving.done(), serving.result()
            time.sleep(0.05)
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        started = time.monotonic()
        try:
            machine = type(
                "Mem0Machine",
                (Mem0Door,),
                {"client": client, "engine": app.state.engine, "loop": loop, "counts": counts,
                 "examples": itertools.count()},
            )  # fmt: skip
            run_state_machine_as_test(machine, settings=BUDGET)
        finally:
            client.client.close()
        counts.report(time.monotonic() - started, record_property)
    finally:
        server.should_exit = True
        serving.result()
        loop.close()
    assert counts.steps >= BUDGET.max_examples * 5  # the machine ran, not just started
