"""What a request may do behind the door of `ethos serve` (ethos.adapters.door, with
each token's rights and the paths that serve no data), the headers on every answer,
and errors as RFC 9457 problem details whose `detail` is the CLI's one line."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ethos.adapters import door
from ethos.adapters.door import App, Door, Receive, Scope, Send, door_for
from ethos.domain.errors import (
    ConfigError,
    DatabaseError,
    EthosError,
    NotFoundError,
    TransientDatabaseError,
)
from ethos.logs import redact
from ethos.settings import Settings

# No data, no token (Host/Origin still): the dashboard's page and files, the schema.
PUBLIC = ("/", "/static/*", "/openapi.json*")

# On every answer: no other site may frame the dashboard (its buttons could be
# clickjacked), and the page loads and calls nothing but this server.
FRAMING = [
    (b"content-security-policy",
     b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]  # fmt: skip


def server_door(settings: Settings, host: str, token_env: str | None) -> Door:
    """The door of `ethos serve` bound at `host`: the [server] token writes (and reads),
    the read token reads; with [server] read_only, every token only reads."""
    server = settings.server
    return door_for(
        host,
        tokens={token_env or server.token_env: "write", server.read_token_env: "read"},
        allowed_hosts=server.allowed_hosts,
        allowed_origins=server.allowed_origins,
        flag="--http",
        section="server",
        read_only=server.read_only,
        public=PUBLIC,
    )


def framed(app: App) -> App:
    """`app` with FRAMING on every answer, and mem0's ways of sending the token ("Token
    <key>", X-API-Key: the same token, another name) read as a bearer token."""

    async def frame(scope: Scope, receive: Receive, plain: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, plain)
            return

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *FRAMING]
            await plain(message)

        await app({**scope, "headers": _as_bearer(scope["headers"])}, receive, send)

    return frame


def _as_bearer(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    named = {k.lower(): v for k, v in headers}
    scheme, _, key = named.get(b"authorization", b"").partition(b" ")
    if scheme.lower() == b"token":
        bearer = b"Bearer " + key
    elif b"authorization" not in named and b"x-api-key" in named:
        bearer = b"Bearer " + named[b"x-api-key"]
    else:
        return headers
    return [(k, v) for k, v in headers if k.lower() != b"authorization"] + [
        (b"authorization", bearer)
    ]


class Refused(Exception):
    """A request the server will not serve: its status and one line."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def may_write(request: Request) -> bool:
    """Whether this request may change anything: a read (a read-only token, or [server]
    read_only) leaves no trace, not even the retrievals its searches would record."""
    return request.scope.get("ethos.access") == "write"


async def writes(request: Request) -> None:
    """A dependency of every endpoint that changes something."""
    if not may_write(request):
        raise Refused(403, "read-only: this token, or [server] read_only, allows no writes")


def problem(status: int, detail: str, instance: str) -> JSONResponse:
    return JSONResponse(
        door.problem(status, detail, instance),
        status_code=status,
        headers=door.problem_headers(status),
    )


def _status_of(exc: EthosError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, TransientDatabaseError):
        return 503
    return 500 if isinstance(exc, DatabaseError | ConfigError) else 400


def _validation_line(exc: RequestValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"] if part != "body") or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def install_problems(app: FastAPI) -> None:
    async def on_ethos(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, EthosError)
        return problem(_status_of(exc), redact(str(exc)), request.url.path)  # as the CLI

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        # 400, not FastAPI's 422: input refused is one status whichever check refuses it
        # (a day past 9999 fails the schema, one past 2199 ethos's own), as mem0's API says
        return problem(400, _validation_line(exc), request.url.path)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return problem(exc.status_code, str(exc.detail), request.url.path)

    async def on_refused(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Refused)
        return problem(exc.status, str(exc), request.url.path)

    app.add_exception_handler(EthosError, on_ethos)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Refused, on_refused)
