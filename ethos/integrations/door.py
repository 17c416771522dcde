"""The door of ethos's HTTP servers (`ethos mcp --http`, and any other that serves the
engine over HTTP): who may bind where, and which requests get in.

- A server binds a loopback address, or any other with a bearer token: an address others
  can reach is never served to anyone who asks.
- Every request's Host header names this server (DNS rebinding), and a browser's Origin
  is one allowed, whatever the bind: loopback names, the bound address and
  `allowed_hosts` / `allowed_origins`; "name:*" allows any port.
- With a token, every request carries `Authorization: Bearer <token>`, compared in
  constant time; the token is read from the variable `token_env` names and never logged.

Plain ASGI: no web framework needed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ethos.errors import ConfigError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class Door:
    token: str | None
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...] = field(default=())

    def host_allowed(self, host: str | None) -> bool:
        return host is not None and _matches(host.lower(), self.allowed_hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        return origin is None or _matches(origin.lower(), self.allowed_origins)

    def token_ok(self, authorization: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, given = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        )


def _matches(value: str, allowed: Sequence[str]) -> bool:
    return any(
        value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1]))
        for pattern in allowed
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def door_for(
    host: str,
    *,
    token_env: str,
    allowed_hosts: Sequence[str],
    allowed_origins: Sequence[str],
    flag: str,
) -> Door:
    """The door of a server binding `host`, or ConfigError in one line."""
    token = None
    if token_env:
        token = os.environ.get(token_env) or None
        if token is None:
            raise ConfigError(f"{flag}: the token variable {token_env} is not set or empty")
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"{flag}: {host} is reachable from other machines: set a bearer token"
            " ([mcp] token_env or --token-env NAME), or bind 127.0.0.1"
        )
    wildcard = host in ("0.0.0.0", "::", "")
    if wildcard and not allowed_hosts:
        raise ConfigError(
            f"{flag}: binding {host or 'every address'} needs [mcp] allowed_hosts, the names"
            " clients reach this server by (Host headers are always checked)"
        )
    bound = () if wildcard or is_loopback(host) else (_bracketed(host),)
    names = (*LOOPBACK_HOSTS, *bound)
    hosts = (*(f"{name}:*" for name in names), *names, *allowed_hosts)
    origins = (
        *(f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")),
        *(f"{scheme}://{name}" for name in names for scheme in ("http", "https")),
        *allowed_origins,
    )
    return Door(
        token,
        tuple(h.lower() for h in hosts),
        tuple(o.lower() for o in origins),
    )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def guarded(app: App, door: Door) -> App:
    """`app` behind the door: 421 for a foreign Host, 403 for a foreign Origin, 401
    without the token (HTTP and WebSocket alike; lifespan events pass)."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not door.host_allowed(headers.get("host")):
            return await _refuse(scope, send, 421, "this server does not answer for that Host")
        if not door.origin_allowed(headers.get("origin")):
            return await _refuse(scope, send, 403, "requests from that Origin are not allowed")
        if not door.token_ok(headers.get("authorization")):
            return await _refuse(scope, send, 401, "a valid bearer token is required")
        await app(scope, receive, send)

    return guard


async def _refuse(scope: Scope, send: Send, status: int, detail: str) -> None:
    if scope["type"] == "websocket":  # closed before it is accepted: policy violation
        await send({"type": "websocket.close", "code": 1008, "reason": detail})
        return
    body = json.dumps({"status": status, "detail": detail}).encode()
    headers = [(b"content-type", b"application/problem+json")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="ethos"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
