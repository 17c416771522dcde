"""Signal handling, installed at the edge (the CLI) only; tests run the loop without it."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import structlog

log = structlog.get_logger("ethos.signals")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def on_stop(callback: Callable[[], None]) -> Iterator[list[int]]:
    """The first SIGTERM or SIGINT calls `callback` (a graceful stop); a second one
    exits at once. Yields the signals received (a command's exit code: 128 + the
    first). The previous handlers are restored on exit."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def handle(signum: int) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        if len(received) > 1:
            log.warning("stop_forced", signal=name)
            os._exit(128 + signum)
        callback()  # first: a command's progress line ends before the log line
        log.info("stop_requested", signal=name)

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, handle, sig)
    try:
        yield received
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
