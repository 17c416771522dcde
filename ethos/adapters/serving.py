"""An HTTP server as a person runs it (`ethos serve`, `ethos mcp --http`): uvicorn until
stopped, with a line on stdout saying where it listens and whether a request needs a
token, and one when it has stopped (its engine closed, buffered retrievals applied).
Logs stay on stderr."""

from __future__ import annotations

import socket
import sys

import uvicorn

from ethos.adapters.door import Door


def token_mode(door: Door) -> str:
    """Whether requests need a bearer token, and what one may do."""
    if not door.tokens:
        return "no token required (loopback only)"
    if door.read_only:
        return "a bearer token required; every token only reads"
    levels = {level for _, level in door.tokens}
    return "a bearer token required" + (
        " (the read token only reads)" if levels == {"read", "write"} else ""
    )


def url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


class _Talking(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, what: str, door: Door) -> None:
        super().__init__(config)
        self.what, self.door = what, door

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1] if self.servers else 0
            say(
                f"ethos: {self.what} at {url(self.config.host, port or self.config.port)},"
                f" {token_mode(self.door)}; Ctrl-C stops it"
            )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        say(f"ethos: {self.what} stopped")


def say(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


async def serve(config: uvicorn.Config, door: Door, what: str) -> None:
    """Serve `config`'s app (behind `door`) until SIGINT or SIGTERM; `what` names it."""
    await _Talking(config, what, door).serve()
