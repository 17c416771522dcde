"""Daemons as real processes, for the acceptance tests."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg

FAST = {
    "ETHOS_DAEMON__INTERVAL_SECONDS": "1",
    "ETHOS_DAEMON__JITTER": "0.05",
    "ETHOS_DAEMON__IDLE_SECONDS": "0",
    "ETHOS_DAEMON__HEARTBEAT_SECONDS": "0.2",
    "ETHOS_DAEMON__STANDBY_POLL_SECONDS": "0.3",
    "ETHOS_DAEMON__RETRY_MAX_SECONDS": "1",
    "ETHOS_LOGGING__FORMAT": "json",
}


class DaemonProcess:
    def __init__(self, url: str, log_dir: Path, name: str, **env: str) -> None:
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "ethos"), "daemon"],
            env={**os.environ, **FAST, "ETHOS_DATABASE__URL": url, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, sig: int = signal.SIGTERM, wait_seconds: float = 15) -> tuple[int, float]:
        started = time.monotonic()
        self.process.send_signal(sig)
        code = self.process.wait(wait_seconds)
        self._log.close()
        return code, time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL: no goodbye."""
        self.process.kill()
        self.process.wait()
        self._log.close()


async def wait_for(
    conn: asyncpg.Connection, query: str, *args: object, within: float = 15
) -> object:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = await conn.fetchval(query, *args)
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {query}")
