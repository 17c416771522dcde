"""ethos's HTTP servers started as a user starts them: the real `ethos` command on
127.0.0.1 (or another bind), in a subprocess, for a test's database."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

ETHOS = str(Path(sys.executable).parent / "ethos")
TOKEN = "s3cret-token-for-the-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def serving(
    command: str, database_url: str, bind: str, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[int]:
    """`ethos COMMAND --http bind:PORT args...` running; yields the port once it listens.
    On the way out it is stopped (SIGTERM) and must not have logged the test token."""
    port = free_port()
    env = {**os.environ, "ETHOS_DATABASE__URL": database_url, "ETHOS_LOGGING__FORMAT": "json",
           **(env or {})}  # fmt: skip
    server = await asyncio.create_subprocess_exec(
        ETHOS, command, "--http", f"{bind}:{port}", *args, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(300):  # until it listens
            if server.returncode is not None:
                break
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                await writer.wait_closed()
                break
            except OSError:
                await asyncio.sleep(0.05)
        yield port
    finally:
        if server.returncode is None:
            server.terminate()
        _, stderr = await server.communicate()
        assert TOKEN.encode() not in stderr  # never logged
