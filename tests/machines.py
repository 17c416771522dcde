"""What the state machines of the doors share (tests/integration/test_model_*.py):
hypothesis's rule-based machines are synchronous, ethos is asyncio, so each machine
drives an event loop of its own in a thread; the budget each runs within; the counts
each reports."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings

T = TypeVar("T")

# A machine that fails replays its steps while hypothesis shrinks them to the smallest
# failing run: minutes, which the suite's per-test timeout would cut short (and
# hypothesis would then shrink the timeout's own error).
TIMEOUT = 900


def budget(examples: int, steps: int) -> settings:
    """The time budget of one machine: `examples` runs of `steps` rules each, a rule
    being a round trip or a statement (the merges and sweeps among them). Each machine
    picks its own to take about 10 s alone: runs of 30-40 rules reach the interleavings
    (a merge after a forget, a recover after a sweep) that short ones rarely do, and
    more runs mostly repeat what the first ones tried, at the whole suite's expense.
    Derandomised: the same runs every time (CI compares like with like), no example
    database left behind."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


class Loop:
    """An event loop running in a thread of its own: run(coro) from any other thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="machine", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.submit(coro).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@dataclass
class Counts:
    """What a machine ran: examples (machines started) and steps (rules run)."""

    name: str
    examples: int = 0
    steps: int = 0

    def report(self, seconds: float, record: Callable[[str, object], None]) -> None:
        """Printed (pytest -s) and in the test's report (--junitxml's properties)."""
        print(f"{self.name}: {self.examples} examples, {self.steps} steps, {seconds:.1f} s")
        for name, value in [("examples", self.examples), ("steps", self.steps),
                            ("seconds", round(seconds, 1))]:  # fmt: skip
            record(name, value)
