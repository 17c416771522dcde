"""The acceptance tests' daemons: started in a test, killed if it leaves them running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.daemons import DaemonProcess


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[list[DaemonProcess]]:
    started: list[DaemonProcess] = []
    yield started
    for daemon in started:
        if daemon.process.poll() is None:
            daemon.kill()
