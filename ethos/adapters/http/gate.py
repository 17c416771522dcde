"""Who may come in, and do what (the door of `ethos mcp --http` with a token's
rights), and errors as RFC 9457 problem details whose `detail` is the CLI's one line."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

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

PUBLIC = ("/static/", "/openapi.json")  # and "/": no data, no token (Host/Origin still)

# On every answer: no other site may frame the dashboard (its buttons could be
# clickjacked), and the page loads and calls nothing but this server.
FRAMING = [
    (b"content-security-policy",
     b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]  # fmt: skip


@dataclass(frozen=True)
class Gate:
    """The door of `ethos mcp --http` with what each token may do ("write" also reads);
    paths that serve no data pass with the Host and Origin checks alone."""

    door: Door
    read_only: bool

    @classmethod
    def for_bind(cls, settings: Settings, host: str, token_env: str | None) -> Gate:
        server = settings.server
        door = door_for(
            host,
            tokens={token_env or server.token_env: "write", server.read_token_env: "read"},
            allowed_hosts=server.allowed_hosts,
            allowed_origins=server.allowed_origins,
            flag="--http",
            section="server",
        )
        return cls(door, server.read_only)

    def admit(
        self, headers: dict[str, str], path: str
    ) -> tuple[str | None, tuple[int, str] | None]:
        """(what the request may do, None), or (None, (status, reason)) to refuse it."""
        refusal = self.door.refusal(headers)
        if refusal is None:
            access = self.door.access(headers.get("authorization"))
            return ("read" if self.read_only else access), None
        if refusal[0] == 401 and (path == "/" or path.startswith(PUBLIC)):
            return "none", None
        return None, refusal

    def wrap(self, app: App) -> App:
        async def gated(scope: Scope, receive: Receive, plain: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, plain)
                return

            async def send(message: MutableMapping[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", ()), *FRAMING]
                await plain(message)

            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            # mem0's clients send "Token <key>" or X-API-Key: the same token, another name.
            scheme, _, key = headers.get("authorization", "").partition(" ")
            if scheme.lower() == "token":
                headers["authorization"] = f"Bearer {key}"
            elif "authorization" not in headers and "x-api-key" in headers:
                headers["authorization"] = f"Bearer {headers['x-api-key']}"
            access, refusal = self.admit(headers, scope["path"])
            if refusal is not None:
                await send_problem(send, refusal[0], refusal[1], scope["path"])
                return
            scope["ethos.access"] = access
            await app(scope, receive, send)

        return gated


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


# A detail longer than this is cut: no message echoes megabytes of what a client sent.
MAX_DETAIL = 1000


def problem(status: int, detail: str, instance: str) -> JSONResponse:
    line = detail.splitlines()[0][:MAX_DETAIL] if detail else HTTPStatus(status).phrase
    return JSONResponse(
        {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
         "detail": line, "instance": instance},
        status_code=status,
        media_type="application/problem+json",
        headers={"www-authenticate": 'Bearer realm="ethos"'} if status == 401 else None,
    )  # fmt: skip


async def send_problem(send: Send, status: int, detail: str, path: str) -> None:
    response = problem(status, detail, path)
    await send({"type": "http.response.start", "status": status,
                "headers": response.raw_headers})  # fmt: skip
    await send({"type": "http.response.body", "body": response.body})


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
        return problem(422, _validation_line(exc), request.url.path)

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
