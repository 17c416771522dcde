"""The HTTP API and the dashboard: `ethos serve --http HOST:PORT` (pip install
'ethos[server]').

Two sets of endpoints over one Engine (opened on start, drained and closed on shutdown):

- mem0's REST shape, so mem0 clients work unchanged: its open-source server's paths
  (`POST /memories`, `GET /memories`, `GET|PUT|DELETE /memories/{id}`,
  `GET /memories/{id}/history`, `POST /search`, `DELETE /memories`) and the paths its
  `MemoryClient` calls (`/v1/ping/`, `/v3/memories/add/`, `/v3/memories/`,
  `/v3/memories/search/`, `/v1/memories/{id}/`, ...). ethos's semantics where they
  differ: the owners a request names (user_id, agent_id, run_id) combine as an AND, and
  the first of them names the ethos agent (owners.py); messages are stored as they are
  (no LLM extracts facts), all of an add or none; delete is forget, recoverable (a hard
  delete is `ethos erase`); every memory carries `ethos`: its table, policy, salience
  now, retrievals and the moment it will be pruned.
- ethos's own under `/ethos/`: agents, memories, recall, feedback, explain, recover,
  forget, policy (pin), links, stats, status, curve.

Searching reinforces what it returns, as the Python API's recall does; a GET never
writes (reading one memory by id, listings), since any page can make a browser send one,
and a read-only token or server writes nothing at all, not even a search's retrievals.
Errors are RFC 9457 problem details whose `detail` is the CLI's one line. The whole app
stands behind the door of `ethos mcp --http`: a bearer token ([server] token_env, reads
and writes; read_token_env, reads only), required off loopback, and Host/Origin checked
on every request (a browser's Origin must be the server's own or allowed, so writes
come only from the dashboard or allowed pages); no page may frame it. The dashboard's
files need no token (they hold no data); its page asks for one when the API does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from ethos.adapters.door import App, Door, guarded
from ethos.adapters.http.access import framed, install_problems, server_door
from ethos.adapters.http.bounds import Bounds
from ethos.adapters.http.mem0 import mem0_routes
from ethos.adapters.http.own import ethos_routes
from ethos.adapters.http.owners import named
from ethos.services.engine import Engine
from ethos.settings import Settings, with_statement_timeout

__all__ = ["DASHBOARD", "build_app", "http_app", "named", "serve_http"]


DASHBOARD = Path(__file__).parent.parent / "dashboard"


def build_app(settings: Settings) -> FastAPI:
    """The API and the dashboard over one Engine, opened for the app's lifetime."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        served = with_statement_timeout(settings, settings.server.request_timeout_seconds)
        async with Engine(served) as engine:  # closing it applies the buffered LTP
            app.state.engine = engine
            yield

    app = FastAPI(
        title="ethos",
        summary="Agent memory that forgets: mem0's REST shape and ethos's own endpoints",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads from a CDN; the schema is at /openapi.json
        redoc_url=None,
        redirect_slashes=False,
    )
    install_problems(app)
    app.add_middleware(Bounds, server=settings.server)
    mem0_routes(app)
    ethos_routes(app, settings)
    app.mount("/static", StaticFiles(directory=DASHBOARD), name="static")

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(DASHBOARD / "index.html")

    return app


def http_app(settings: Settings, door: Door) -> App:
    """build_app behind `door`."""
    return framed(guarded(build_app(settings), door))


async def serve_http(settings: Settings, host: str, port: int, *, token_env: str | None) -> None:
    """Serve http_app on host:port until stopped (SIGINT/SIGTERM: requests in flight
    finish, then the engine applies its buffered retrievals and closes), saying where,
    whether a token is needed, and when it stopped."""
    import uvicorn

    from ethos.adapters.serving import serve

    door = server_door(settings, host, token_env)
    app = http_app(settings, door)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await serve(config, door, "the HTTP API and the dashboard")
