"""Search through the HTTP API against the same search through the Python API, in one run.

    python bench/http_api.py [--rows 100000] [--vectors 10000] [--searches 3000]

Loads the rows bench.py loads into its own database (on bench.py's embedded server),
starts `ethos serve --http 127.0.0.1:PORT` on it as a user would (its own process and
Engine), and times `POST /search` (mem0's shape, one agent, k = 10, through httpx with
keep-alive) against `Engine.recall` in this process, the queries taking turns: the Python
API, HTTP with a bare HTTP/1.1 client (what the server adds), HTTP with httpx (what a
Python client library adds on top). Both reinforce what they
return. Prints p50 / p99 of each and the overhead of HTTP (goal: p50 < 2 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path

import asyncpg
import httpx

from bench import BENCH_DB, T0, fresh_database, load, percentile, vacuum, words
from ethos import logs
from ethos.services.engine import Engine, migrate
from ethos.settings import DatabaseSettings, LoggingSettings, Settings

DATABASE = f"{BENCH_DB}_http"


class RawClient:
    """HTTP/1.1 over one kept-alive connection with nothing else: what the server
    itself adds, apart from any client library's own cost."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def __aenter__(self) -> RawClient:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def __aexit__(self, *_: object) -> None:
        self.writer.close()
        await self.writer.wait_closed()

    async def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )  # fmt: skip
        answer: dict[str, object] = json.loads(await self.reader.readexactly(length))
        return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def main(args: argparse.Namespace) -> None:
    logs.configure(LoggingSettings(level="warning"))
    url = await fresh_database(Path.cwd() / args.data_dir, DATABASE)
    settings = Settings(database=DatabaseSettings(url=url))
    await migrate(settings, url)
    async with Engine(settings):  # writes the policies the rows name
        pass
    conn = await asyncpg.connect(url)
    started = time.perf_counter()
    await load(conn, args.rows, args.vectors, settings.embedding.dimension, args.agents)
    await vacuum(conn)
    await conn.close()
    print(f"loaded {args.rows:,} rows ({args.vectors:,} vectors, {args.agents} agents)"
          f" in {time.perf_counter() - started:.1f} s")  # fmt: skip

    rng = random.Random(7)
    queries = [(f"agent-{rng.randrange(args.agents)}", words(rng, 3))
               for _ in range(args.searches)]  # fmt: skip
    at = T0 + timedelta(days=1)
    port = free_port()
    env = {**os.environ, "ETHOS_DATABASE__URL": url, "ETHOS_LOGGING__LEVEL": "warning"}
    ethos = str(Path(sys.executable).parent / "ethos")
    server = await asyncio.create_subprocess_exec(
        ethos, "serve", "--http", f"127.0.0.1:{port}", env=env
    )
    try:
        async with (
            Engine(settings) as engine,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
        ):
            for _ in range(300):  # until it listens
                try:
                    await http.get("/ethos/whoami")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)

            async def through_httpx(agent: str, query: str) -> int:
                body = {"query": query, "user_id": agent, "top_k": 10}
                response = await http.post("/search", json=body)
                response.raise_for_status()
                return len(response.json()["results"])

            async def through_python(agent: str, query: str) -> int:
                return len(await engine.recall(agent, query, k=10, now=at))

            async with RawClient(port) as raw:

                async def through_raw(agent: str, query: str) -> int:
                    answer = await raw.post("/search", {"query": query, "user_id": agent})
                    return len(answer["results"])  # type: ignore[arg-type]

                sides = {"python": through_python, "http": through_raw, "httpx": through_httpx}
                for agent, query in queries[:100]:  # warm them all
                    for call in sides.values():
                        await call(agent, query)
                times: dict[str, list[float]] = {side: [] for side in sides}
                found = dict.fromkeys(sides, 0)
                for i, (agent, query) in enumerate(queries):
                    # each query once, the sides in turn: none finds another's query cached
                    side = list(sides)[i % len(sides)]
                    began = time.perf_counter()
                    found[side] += await sides[side](agent, query)
                    times[side].append((time.perf_counter() - began) * 1000)
    finally:
        server.terminate()
        await server.wait()

    print(f"\nSearch (recall by text, k = 10, one agent of {args.agents}): {args.searches:,}"
          " queries, the sides in turn (p50 / p99 in ms)")  # fmt: skip
    for side in times:
        values = times[side]
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"  {side:<7} p50 {p50:6.2f}   p99 {p99:6.2f}"
              f"   ({found[side] / len(values):.1f} hits a query)")  # fmt: skip
    python = percentile(times["python"], 0.5)
    print(f"  HTTP adds {percentile(times['http'], 0.5) - python:.2f} ms to p50 (goal < 2 ms);"
          f" through httpx {percentile(times['httpx'], 0.5) - python:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--vectors", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=3000)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    asyncio.run(main(parser.parse_args()))
