"""Commands that serve: the MCP tools, the HTTP API and the demo."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from ethos import logs
from ethos.adapters.demo import demo_embedder, run_demo
from ethos.domain.errors import InputError
from ethos.domain.inputs import host_port
from ethos.services.engine import Engine
from ethos.settings import Settings


@contextmanager
def _extra(name: str, command: str) -> Iterator[None]:
    """The imports inside come with an optional extra: without it, one line says which."""
    try:
        yield
    except ImportError as exc:
        raise InputError(
            f"ethos {command} needs the {name} extra: pip install 'ethos[{name}]' ({exc})"
        ) from None


async def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    with _extra("mcp", "mcp"):
        from ethos.adapters.door import door_for
        from ethos.adapters.mcp import build_server, serve_http, serve_stdio
    if args.http is None:
        await serve_stdio(build_server(settings, agent=args.agent))
        return 0
    host, port = host_port(args.http, "--http")
    door = door_for(
        host,
        tokens={args.token_env or settings.mcp.token_env: "write"},
        allowed_hosts=settings.mcp.allowed_hosts,
        allowed_origins=settings.mcp.allowed_origins,
        flag="--http",
        section="mcp",
    )  # before anything is opened: a refused bind changes nothing
    await serve_http(build_server(settings, agent=args.agent), host, port, door)
    return 0


async def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    with _extra("server", "serve"):
        from ethos.adapters.http import serve_http
    host, port = host_port(args.http, "--http")
    await serve_http(settings, host, port, token_env=args.token_env)
    return 0


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    # The demo tells its own story: per-sweep log events would drown it.
    if settings.logging.level == "info":
        logs.configure(settings.logging.model_copy(update={"level": "warning"}))
    async with Engine(settings, embedder=demo_embedder(settings)) as engine:
        await run_demo(engine)
    return 0
