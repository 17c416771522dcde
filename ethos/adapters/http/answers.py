"""How an endpoint gets the engine and answers: JSON written by ethos.adapters.wire, at
its path and at mem0's client aliases."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ethos.adapters import wire
from ethos.adapters.http.access import writes
from ethos.services.engine import Engine


async def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(_engine)]


Writes = Depends(writes)


class Problem(BaseModel):
    """An RFC 9457 problem detail: every error, its `detail` one line."""

    type: str
    title: str
    status: int
    detail: str
    instance: str


_PROBLEM = {"content": {"application/problem+json": {"schema": Problem.model_json_schema()}}}
# What the schema says of every endpoint's errors (FastAPI's own 422 shape is not sent).
PROBLEMS: dict[int | str, dict[str, Any]] = {
    "4XX": {"description": "Refused: the request, its token or its ids", **_PROBLEM},
    "5XX": {"description": "The database is away, or the request ran too long", **_PROBLEM},
}


class Json(JSONResponse):
    """JSON written by the front ends' one encoder: the engine's answers are plain data
    already (FastAPI's own encoder, walking every value, cost more than the search it
    returned)."""

    def render(self, content: Any) -> bytes:
        return wire.dumps(content, compact=True).encode()


def route(
    app: FastAPI,
    method: str,
    paths: tuple[str, ...],
    fn: Callable[..., Awaitable[Any]],
    *,
    schema: bool = True,
    **kw: Any,
) -> None:
    """`fn` at the first path (in the schema) and at mem0 client aliases (not); what it
    returns is sent as JSON."""

    @functools.wraps(fn)
    async def answer(*args: Any, **kwargs: Any) -> Json:
        return Json(await fn(*args, **kwargs))

    for i, path in enumerate(paths):
        app.add_api_route(
            path,
            answer,
            methods=[method],
            include_in_schema=schema and i == 0,
            response_model=None,
            responses=PROBLEMS,
            **kw,
        )
