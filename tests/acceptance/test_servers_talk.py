"""The servers as a person runs them, the real `ethos` command in a subprocess: `ethos
serve` and `ethos mcp --http` say where they listen, whether a token is required, and
when they stop; `ethos mcp` over stdio ends on Ctrl-C (SIGINT) and at the end of its
input, its buffered retrievals applied."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest

from tests.servers import ETHOS, TOKEN, free_port

PIPE = asyncio.subprocess.PIPE


@asynccontextmanager
async def ethos(
    database_url: str, *args: str, **env: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`ethos ARGS` running, killed if the test leaves it so."""
    process = await asyncio.create_subprocess_exec(
        ETHOS, *args, stdin=PIPE, stdout=PIPE, stderr=PIPE,
        env={**os.environ, "ETHOS_DATABASE__URL": database_url, **env},
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def ended(process: asyncio.subprocess.Process, within: float = 15) -> tuple[str, str]:
    """Its output and errors once it has exited, within `within` seconds."""
    stdout, stderr = await asyncio.wait_for(process.communicate(), within)
    assert "Traceback" not in stderr.decode(), stderr.decode()
    return stdout.decode(), stderr.decode()


@pytest.mark.parametrize(
    ("command", "what", "env", "tokens"),
    [
        ("serve", "the HTTP API and the dashboard", {}, "no token required"),
        ("serve", "the HTTP API and the dashboard", {"ETHOS_SERVER__TOKEN_ENV": "T"},
         "a bearer token required"),
        ("mcp", "the MCP server", {"ETHOS_MCP__TOKEN_ENV": "T"}, "a bearer token required"),
    ],
)  # fmt: skip
async def test_a_server_says_where_it_listens_its_token_mode_and_when_it_stops(
    database_url: str, command: str, what: str, env: dict[str, str], tokens: str
) -> None:
    port = free_port()
    async with ethos(
        database_url, command, "--http", f"127.0.0.1:{port}", T=TOKEN, **env
    ) as server:
        assert server.stdout is not None
        line = (await asyncio.wait_for(server.stdout.readline(), 60)).decode()
        assert line.startswith(f"ethos: {what}")
        assert f"http://127.0.0.1:{port}/" in line and tokens in line, line
        server.send_signal(signal.SIGINT)
        stdout, _ = await ended(server)
    assert stdout == f"ethos: {what.split(' (')[0]} stopped\n" or stdout.endswith(" stopped\n")
    assert server.returncode in (0, 130)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "a person", "version": "1"}},
}  # fmt: skip
RECALL = {
    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "recall", "arguments": {"query": "tea"}},
}  # fmt: skip


async def send(
    process: asyncio.subprocess.Process, message: dict[str, object]
) -> dict[str, object]:
    """A JSON-RPC request over the server's stdin, and its answer."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()
    answer: dict[str, object] = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
    return answer


@asynccontextmanager
async def mcp_with_a_recall(database_url: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """`ethos mcp` over stdio, initialised, having recalled (and so reinforced) a memory."""
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO episodic_traces (agent_id, content) VALUES ('ada', 'Ada drinks tea')"
        )
    finally:
        await conn.close()
    async with ethos(database_url, "mcp", "--agent", "ada") as server:
        assert "result" in await send(server, INITIALIZE)
        assert server.stdin is not None
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        answer = await send(server, RECALL)
        assert "Ada drinks tea" in json.dumps(answer)
        yield server


async def retrievals(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        count: int = await conn.fetchval("SELECT retrieval_count FROM episodic_traces")
        return count
    finally:
        await conn.close()


async def test_mcp_over_stdio_ends_on_ctrl_c(database_url: str) -> None:
    async with mcp_with_a_recall(database_url) as server:
        server.send_signal(signal.SIGINT)
        await ended(server)
    assert await retrievals(database_url) == 1  # applied on the way out


async def test_mcp_over_stdio_ends_at_the_end_of_its_input(database_url: str) -> None:
    async with mcp_with_a_recall(database_url) as server:
        assert server.stdin is not None
        server.stdin.close()
        await ended(server)
    assert server.returncode == 0
    assert await retrievals(database_url) == 1
