"""Every request within bounds: a body of at most [server] max_body_bytes (read before
the endpoint parses it), an answer within [server] request_timeout_seconds, and no work
left running for a client that went away. Stopping a request cancels its task, and
asyncpg cancels a statement whose task is cancelled: no connection stays busy."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

from ethos.adapters.door import App, Receive, Scope, Send, send_problem
from ethos.settings import ServerSettings

Message = MutableMapping[str, Any]


class Bounds:
    """ASGI middleware: the body read whole first, then the endpoint run as a task that
    a deadline or the client's going cancels."""

    def __init__(self, app: App, server: ServerSettings) -> None:
        self.app = app
        self.max_body_bytes = server.max_body_bytes
        self.timeout_seconds = server.request_timeout_seconds
        self.too_large = (
            f"the request body is over {self.max_body_bytes:,} bytes ([server] max_body_bytes)"
        )
        self.too_long = (
            f"the request ran over {self.timeout_seconds:g} s and was stopped"
            " ([server] request_timeout_seconds)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._body(scope, receive)
        except _Left:
            return
        if body is None:
            await send_problem(send, 413, self.too_large, scope["path"])
            return
        gone = asyncio.Event()
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[Message] = []

        async def endpoint_receive() -> Message:
            if replay:
                return replay.pop()
            await gone.wait()  # as a server says the client left: only when it has
            return {"type": "http.disconnect"}

        async def tracked(message: Message) -> None:
            sent.append({"type": message["type"], "more_body": message.get("more_body")})
            await send(message)

        def answered() -> bool:
            return any(m["type"] == "http.response.body" and not m["more_body"] for m in sent)

        handler = asyncio.ensure_future(self.app(scope, endpoint_receive, tracked))
        watcher = asyncio.ensure_future(_until_gone(receive, gone))
        try:
            await asyncio.wait({handler, watcher}, timeout=self.timeout_seconds,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            if not handler.done() and not answered():  # too long, or its client left
                await _cancelled(handler)
                if not gone.is_set() and not sent:
                    await send_problem(send, 503, self.too_long, scope["path"])
                return
            await handler  # its own error goes on to the server's handler
        finally:
            await _cancelled(watcher)
            await _cancelled(handler)  # this request itself was cancelled (shutdown)

    async def _body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None when it is over max_body_bytes (said or sent)."""
        headers = dict(scope.get("headers") or ())
        declared = headers.get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise _Left
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                return None
            if not message.get("more_body"):
                return b"".join(chunks)


class _Left(Exception):
    """The client went away before it sent the whole body."""


async def _until_gone(receive: Receive, gone: asyncio.Event) -> None:
    """Wait for the client to leave (a server says so once the answer is sent, too)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def _cancelled(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait for it to end (its statement cancelled, its connection
    back in the pool)."""
    if task.done():
        return
    task.cancel()
    await asyncio.wait({task})
