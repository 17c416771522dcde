"""The door of ethos's HTTP servers (`ethos mcp --http`, and any other that serves the
engine over HTTP): who may bind where, and which requests get in.

- A server binds a loopback address, or any other with a bearer token: an address others
  can reach is never served to anyone who asks.
- Every request's Host header names this server (DNS rebinding): loopback names, the
  bound address and `allowed_hosts`; "name:*" allows any port. Host and port are parsed,
  so "localhost:evil.com" is no localhost.
- A browser's Origin is this server's own (the origin of the Host it asked for: a page
  the server served) or one of `allowed_origins`; another page, even on another port of
  localhost, is refused.
- With a token, every request carries `Authorization: Bearer <token>`, compared in
  constant time; the token is read from the variable `token_env` names and never logged.
  What the request may then do ("read" or "write") is in its scope, `ethos.access`.
- A refusal is an RFC 9457 problem detail, as every other error of the HTTP API.

Plain ASGI: no web framework needed.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from ethos.adapters import wire
from ethos.domain.errors import ConfigError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class Door:
    """Who gets in: the Host and Origin values accepted, and the tokens with what each
    may do ("write", which reads too, or "read"); no tokens: anyone may write.
    `read_only`: every token only reads. `public`: paths that serve no data, open with
    the Host and Origin checks alone ("/static/*": every path under it)."""

    tokens: tuple[tuple[str, str], ...] = field(repr=False)
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...] = field(default=())
    read_only: bool = False
    public: tuple[str, ...] = ()

    def host_allowed(self, host: str | None) -> bool:
        where = _host_port(host or "")
        return where is not None and any(_matches(where, p) for p in self.allowed_hosts)

    def origin_allowed(self, origin: str | None, host: str | None = None) -> bool:
        """No Origin (not a browser's cross-origin request), the server's own origin
        (scheme://Host of this request), or one allowed."""
        if origin is None:
            return True
        scheme, sep, rest = origin.lower().partition("://")
        where = _host_port(rest)
        if not sep or scheme not in ("http", "https") or where is None:
            return False
        own = host is not None and where == _host_port(host.lower())
        return own or any(
            _matches(where, pattern.partition("://")[2])
            for pattern in self.allowed_origins
            if pattern.partition("://")[0] == scheme
        )

    def access(self, authorization: str | None) -> str | None:
        """What the request's bearer token may do, or None for no valid token. Every
        token is compared, in constant time, so timing tells nothing of which matched."""
        if not self.tokens:
            return "write"
        scheme, _, given = (authorization or "").partition(" ")
        offered = given.strip().encode()
        matched = [level for token, level in self.tokens
                   if hmac.compare_digest(offered, token.encode())]  # fmt: skip
        return matched[0] if scheme.lower() == "bearer" and matched else None

    def admit(
        self, headers: Mapping[str, str], path: str
    ) -> tuple[str | None, tuple[int, str] | None]:
        """(what the request with these lower-cased headers may do, None), or (None,
        (status, one line)) to refuse it; "none" for a public path without a valid token."""
        if not self.host_allowed(headers.get("host")):
            return None, (421, "this server does not answer for that Host")
        if not self.origin_allowed(headers.get("origin"), headers.get("host")):
            return None, (403, "requests from that Origin are not allowed")
        access = self.access(headers.get("authorization"))
        if access is None and self._public(path):
            return "none", None
        if access is None:
            return None, (401, "a valid bearer token is required")
        return ("read" if self.read_only else access), None

    def _public(self, path: str) -> bool:
        return any(path.startswith(p[:-1]) if p.endswith("*") else path == p for p in self.public)


def _host_port(value: str, *, pattern: bool = False) -> tuple[str, str] | None:
    """(name, port or "") of "name", "name:port", "[v6]" or "[v6]:port" (a pattern's
    port may be "*"), lower-cased; None for anything else (a path, credentials, a port
    that is not a number)."""
    value = value.lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        name, _, port = value.partition(":")
    if not name or any(c in name for c in "/@?#\\ ") or ":" in port:
        return None
    if port == "*":
        return (name, port) if pattern else None
    if port and not (port.isascii() and port.isdigit() and len(port) <= 5):
        return None
    return name, port


def _matches(where: tuple[str, str], pattern: str) -> bool:
    """`where` (from _host_port) is what `pattern` ("name", "name:port", "name:*") allows."""
    allowed = _host_port(pattern, pattern=True)
    return allowed is not None and where[0] == allowed[0] and allowed[1] in (where[1], "*")


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
    tokens: Mapping[str, str],
    allowed_hosts: Sequence[str],
    allowed_origins: Sequence[str],
    flag: str,
    section: str,
    read_only: bool = False,
    public: tuple[str, ...] = (),
) -> Door:
    """The door of a server binding `host`, or ConfigError in one line. `tokens` maps
    the names of the variables holding tokens to what each token may do (an empty name
    is no token); `section` is the settings section named in errors; `read_only` and
    `public` as Door has them."""
    held = []
    for env, level in tokens.items():
        if env:
            token = os.environ.get(env) or None
            if token is None:
                raise ConfigError(f"{flag}: the token variable {env} is not set or empty")
            if not all("!" <= c <= "~" for c in token):  # what a header carries whole
                raise ConfigError(
                    f"{flag}: the token in {env} must be printable ASCII without spaces"
                    " (no client can send it otherwise)"
                )
            held.append((token, level))
    if not held and not is_loopback(host):
        raise ConfigError(
            f"{flag}: {host} is reachable from other machines: set a bearer token"
            f" ([{section}] token_env or --token-env NAME), or bind 127.0.0.1"
        )
    wildcard = host in ("0.0.0.0", "::", "")
    if wildcard and not allowed_hosts:
        raise ConfigError(
            f"{flag}: binding {host or 'every address'} needs [{section}] allowed_hosts, the"
            " names clients reach this server by (Host headers are always checked)"
        )
    bound = () if wildcard or is_loopback(host) else (_bracketed(host),)
    hosts = (*(f"{name}:*" for name in (*LOOPBACK_HOSTS, *bound)), *allowed_hosts)
    # A page served by this server calls it from its own origin (Door.origin_allowed).
    return Door(
        tuple(held),
        tuple(h.lower() for h in hosts),
        tuple(o.lower() for o in allowed_origins),
        read_only,
        public,
    )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def guarded(app: App, door: Door) -> App:
    """`app` behind the door: 421 for a foreign Host, 403 for a foreign Origin, 401
    without the token (HTTP and WebSocket alike; lifespan events pass); what an admitted
    request may do is its scope's `ethos.access`."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        access, refused = door.admit(headers, scope["path"])
        if refused is None:
            scope["ethos.access"] = access
            return await app(scope, receive, send)
        if scope["type"] == "websocket":  # closed before it is accepted: policy violation
            return await send({"type": "websocket.close", "code": 1008, "reason": refused[1]})
        await send_problem(send, *refused, scope["path"])

    return guard


# A detail longer than this is cut: no message echoes megabytes of what a client sent.
MAX_DETAIL = 1000


def problem(status: int, detail: str, instance: str) -> dict[str, Any]:
    """An RFC 9457 problem detail; its `detail` is one line (the CLI's)."""
    line = detail.splitlines()[0][:MAX_DETAIL] if detail else HTTPStatus(status).phrase
    return {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
            "detail": line, "instance": instance}  # fmt: skip


def problem_headers(status: int) -> dict[str, str]:
    headers = {"content-type": "application/problem+json"}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="ethos"'
    return headers


async def send_problem(send: Send, status: int, detail: str, path: str) -> None:
    """Answer with a problem detail, from ASGI code (outside the web framework)."""
    body = wire.dumps(problem(status, detail, path), compact=True).encode()
    headers = [(k.encode(), v.encode()) for k, v in problem_headers(status).items()]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
