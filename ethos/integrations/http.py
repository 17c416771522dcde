"""The HTTP API and the dashboard: `ethos serve --http HOST:PORT` (pip install
'ethos[server]').

Two sets of endpoints over one Engine (opened on start, drained and closed on shutdown):

- mem0's REST shape, so mem0 clients work unchanged: its open-source server's paths
  (`POST /memories`, `GET /memories`, `GET|PUT|DELETE /memories/{id}`,
  `GET /memories/{id}/history`, `POST /search`, `DELETE /memories`) and the paths its
  `MemoryClient` calls (`/v1/ping/`, `/v3/memories/add/`, `/v3/memories/`,
  `/v3/memories/search/`, `/v1/memories/{id}/`, ...). ethos's semantics where they
  differ: the first of user_id, agent_id, run_id names the ethos agent; messages are
  stored as they are (no LLM extracts facts); delete is forget, recoverable (a hard
  delete is `ethos erase`); every memory carries `ethos`: its table, policy, salience
  now, retrievals and the moment it will be pruned.
- ethos's own under `/ethos/`: agents, memories, recall, feedback, explain, recover,
  forget, policy (pin), links, stats, status, curve.

Searching and reading one memory by id reinforce it, as the Python API's recall and
get do; listings retrieve nothing. Errors are RFC 9457 problem details whose `detail`
is the CLI's one line. The whole app stands behind the door of `ethos mcp --http`: a
bearer token ([server] token_env, reads and writes; read_token_env, reads only),
required off loopback, and Host/Origin checked on every request. The dashboard's files
need no token (they hold no data); its page asks for one when the API does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from ethos.curve import policy_curves
from ethos.engine import MAX_LIST, Engine
from ethos.errors import (
    ConfigError,
    DatabaseError,
    EthosError,
    InputError,
    NotFoundError,
    TransientDatabaseError,
)
from ethos.integrations import calls
from ethos.integrations.door import App, Door, Receive, Scope, Send, door_for
from ethos.logs import redact
from ethos.settings import Settings
from ethos.tables import MEMORY_TABLES, table_spec

DASHBOARD = Path(__file__).with_name("dashboard")
PUBLIC = ("/static/", "/openapi.json")  # and "/": no data, no token (Host/Origin still)
IDS = ("user_id", "agent_id", "run_id")  # mem0's owners; the first given is the ethos agent
OWNERS = "mem0"  # the metadata key that keeps the mem0 identifiers a memory was added with
Kind = Literal["episode", "fact", "vector"]


# --- who may come in, and do what ------------------------------------------------------


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
        async def gated(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
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
                await _send_problem(send, refusal[0], refusal[1], scope["path"])
                return
            scope["ethos.access"] = access
            await app(scope, receive, send)

        return gated


class Refused(Exception):
    """A request the server will not serve: its status and one line."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


async def writes(request: Request) -> None:
    """A dependency of every endpoint that changes something."""
    if request.scope.get("ethos.access") != "write":
        raise Refused(403, "read-only: this token, or [server] read_only, allows no writes")


# --- errors as RFC 9457 problem details ---------------------------------------------------


def problem(status: int, detail: str, instance: str) -> JSONResponse:
    line = detail.splitlines()[0] if detail else HTTPStatus(status).phrase
    return JSONResponse(
        {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
         "detail": line, "instance": instance},
        status_code=status,
        media_type="application/problem+json",
        headers={"www-authenticate": 'Bearer realm="ethos"'} if status == 401 else None,
    )  # fmt: skip


async def _send_problem(send: Send, status: int, detail: str, path: str) -> None:
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


def _install_problems(app: FastAPI) -> None:
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


# --- request bodies -------------------------------------------------------------------------


class Owners(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class Message(BaseModel):
    role: str = Field(description="user, assistant or system (system messages are not stored)")
    content: str


class MemoryCreate(Owners):
    messages: list[Message] | None = Field(None, description="each stored as one memory")
    text: str | None = Field(None, description="one memory, instead of messages")
    metadata: dict[str, Any] | None = None
    infer: bool | None = Field(None, description="ignored: ethos stores what it is given")
    filters: dict[str, Any] | None = Field(None, description="the owners, as search takes them")
    kind: Literal["episode", "fact"] = Field("fact", description="ethos: the table")
    policy: str | None = Field(None, description="ethos: the decay policy")
    importance: float | None = Field(None, description="ethos: 0..1, picks a policy")


class MemoryUpdate(BaseModel):
    text: str | None = None
    metadata: dict[str, Any] | None = None


class SearchRequest(Owners):
    query: str
    filters: dict[str, Any] | None = None
    top_k: int = Field(10, ge=1, le=MAX_LIST)
    threshold: float | None = Field(None, description="results scoring less are left out")
    kinds: list[Kind] | None = Field(None, description="ethos: the tables searched")


class ListRequest(Owners):
    filters: dict[str, Any] | None = None


class Ids(BaseModel):
    ids: list[str] = Field(min_length=1)
    agent: str | None = Field(None, description="the ids must be this agent's")


class Feedback(Ids):
    verdict: Literal["useful", "wrong"]


class Recall(BaseModel):
    agent: str
    query: str
    k: int = Field(10, ge=1, le=MAX_LIST)
    kinds: list[Kind] | None = None
    record: bool = Field(True, description="false: an operator's look, nothing reinforced")


class Move(BaseModel):
    policy: str


# --- mem0's shapes --------------------------------------------------------------------------


def owners(given: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """(the ethos agent, the mem0 identifiers given) from top-level ids and filters (an
    equality on user_id, agent_id or run_id, or an AND of them)."""
    found = {key: given[key] for key in IDS if given.get(key)}
    found |= _filter_ids(given.get("filters") or {})
    for key in IDS:
        if key in found:
            return found[key], found
    raise InputError("give user_id, agent_id or run_id (or filters): whose memories")


def _filter_ids(filters: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in filters.items():
        if key == "AND" and isinstance(value, list):
            for part in value:
                found |= _filter_ids(part if isinstance(part, Mapping) else {"?": part})
        elif key in IDS and isinstance(value, str):
            found[key] = value
        else:
            raise InputError(
                f"filter {key!r} is not supported: user_id, agent_id, run_id or an AND of them"
            )
    return found


def mem0_item(memory: Mapping[str, Any]) -> dict[str, Any]:
    """A memory (as Engine.memories describes it) in mem0's shape, with ethos's account."""
    metadata = dict(memory["metadata"] or {})
    ids = metadata.pop(OWNERS, None) or {"user_id": memory["agent_id"]}
    return {
        "id": memory["id"],
        "memory": memory["content"],
        "hash": hashlib.md5(memory["content"].encode()).hexdigest(),
        "metadata": metadata or None,
        "created_at": memory["created_at"],
        "updated_at": memory["updated_at"],
        **{key: ids.get(key) for key in IDS},
        "ethos": _account(memory),
    }


def _account(memory: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("table", "agent_id", "policy", "salience", "retrieval_count", "pinned", "pruned",
            "pruned_at", "prune_reason", "prunes_at", "expires_at")  # fmt: skip
    return {key: memory.get(key) for key in keys} | {"kind": table_spec(memory["table"]).alias}


def mem0_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    metadata = dict(hit["metadata"] or {})
    ids = metadata.pop(OWNERS, None) or {}
    parts = ("table", "score", "salience", "similarity", "text_rank", "via", "link_weight")
    return {
        "id": hit["id"],
        "memory": hit["content"],
        "hash": hashlib.md5(hit["content"].encode()).hexdigest(),
        "score": hit["score"],
        "metadata": metadata or None,
        **{key: ids.get(key) for key in IDS},
        "ethos": {key: hit.get(key) for key in parts} | {"source": hit.get("source")},
    }


HISTORY_EVENTS = {"add": "ADD", "update": "UPDATE", "prune": "DELETE", "recover": "RECOVER"}


# --- the app ------------------------------------------------------------------------------


async def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(_engine)]
Writes = Depends(writes)


def build_app(settings: Settings) -> FastAPI:
    """The API and the dashboard over one Engine, opened for the app's lifetime."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with Engine(settings) as engine:  # closing it applies the buffered LTP
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
    _install_problems(app)
    _mem0_routes(app)
    _ethos_routes(app, settings)
    app.mount("/static", StaticFiles(directory=DASHBOARD), name="static")

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(DASHBOARD / "index.html")

    return app


class Json(JSONResponse):
    """JSON written by json.dumps: the engine's answers are plain data already (FastAPI's
    own encoder, walking every value, cost more than the search it returned)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=_plain, separators=(",", ":")).encode()


def _plain(value: Any) -> str | float:
    """What json.dumps does not know of the engine's answers: moments, ids, numerics."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


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
            **kw,
        )


def _mem0_routes(app: FastAPI) -> None:
    async def ping() -> dict[str, Any]:
        """What mem0's MemoryClient asks on start (it wants an organisation and project)."""
        return {"status": "ok", "org_id": "ethos", "project_id": "ethos", "user_email": None}

    async def add(body: MemoryCreate, engine: EngineDep) -> dict[str, Any]:
        """Store messages (each one a memory; system messages are not) or a text, for the
        agent named by user_id (else agent_id, else run_id). A fact the agent holds
        already is not stored twice: its event is NONE and it is reinforced."""
        agent, ids = owners(body.model_dump())
        if body.messages is None and body.text is None:
            raise InputError("give messages or text")
        texts = [m.content for m in body.messages or [] if m.role != "system"]
        texts += [body.text] if body.text is not None else []
        metadata = {**(body.metadata or {}), OWNERS: ids}
        results = []
        for text in texts:
            saved = await calls.remember(
                engine, agent, text, kind=body.kind, importance=body.importance,
                policy=body.policy, metadata=metadata,
            )  # fmt: skip
            results.append({"id": saved["id"], "memory": text,
                            "event": "ADD" if saved["created"] else "NONE",
                            "ethos": {"kind": saved["kind"], "agent_id": agent}})  # fmt: skip
        return {"results": results}

    async def listing(
        engine: EngineDep,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
        offset: Annotated[int, Query(ge=0)] = 0,
        kinds: Annotated[list[Kind] | None, Query()] = None,
        pruned: bool = False,
    ) -> dict[str, Any]:
        """An agent's memories, newest first (every agent's without an identifier);
        pruned=true: the forgotten ones, most recent first. Nothing is reinforced."""
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        agent = owners(given)[0] if any(given.values()) else None
        memories = await engine.memories(
            agent, tables=kinds, pruned=pruned, limit=top_k, offset=offset
        )
        return {"results": [mem0_item(m) for m in memories]}

    async def listing_v3(
        body: ListRequest,
        engine: EngineDep,
        page: Annotated[int, Query(ge=1)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
    ) -> dict[str, Any]:
        """MemoryClient.get_all: the owners in filters; a page of the listing."""
        agent, _ = owners(body.model_dump())
        memories = await engine.memories(agent, limit=page_size, offset=(page - 1) * page_size)
        results = [mem0_item(m) for m in memories]
        return {"count": len(results), "next": None, "previous": None, "results": results}

    async def get(memory_id: str, engine: EngineDep, record: bool = True) -> dict[str, Any]:
        """One memory; reading it is a retrieval (record=false: an operator's look)."""
        return mem0_item(await engine.memory(memory_id, record=record))

    async def update(memory_id: str, body: MemoryUpdate, engine: EngineDep) -> dict[str, Any]:
        """A new text and/or metadata; the memory keeps its curve and retrievals."""
        memory = await engine.memory(memory_id)
        metadata = None
        if body.metadata is not None:  # the mem0 identifiers it was added with stay
            kept = {k: v for k, v in (memory["metadata"] or {}).items() if k == OWNERS}
            metadata = {**body.metadata, **kept}
        await engine.update(memory["table"], memory_id, content=body.text, metadata=metadata)
        return {"message": "Memory updated successfully!", "id": memory["id"]}

    async def delete(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """Forget the memory: pruned (reason manual), recoverable; not a hard delete."""
        await calls.forget(engine, None, [memory_id])
        return {"message": "Memory deleted successfully", "ethos": {"recoverable": True}}

    async def delete_all(
        engine: EngineDep,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """Forget every memory of one agent, recoverably (`ethos recover TABLE --agent A`);
        a hard delete is `ethos erase`."""
        agent, _ = owners({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        report = await engine.forget_agent(agent)
        return {"message": "All relevant memories deleted",
                "ethos": {"forgotten": report.counts, "recoverable": True}}  # fmt: skip

    async def history(memory_id: str, engine: EngineDep) -> list[dict[str, Any]]:
        """What happened to it, oldest first: each UPDATE with the text it replaced
        (old_memory); RECOVER is ethos's own event."""
        memory = await engine.memory(memory_id)
        events = await engine.history(memory["table"], memory_id)
        mem0 = ("event", "at", "old", "content")
        return [
            {"id": f"{memory['id']}:{i}", "memory_id": memory["id"], "old_memory": e.get("old"),
             "new_memory": e.get("content"),
             "event": HISTORY_EVENTS[e["event"]], "created_at": e["at"].isoformat(),
             "updated_at": None, "is_deleted": e["event"] == "prune", "actor_id": None,
             "role": None, "ethos": {k: v for k, v in e.items() if k not in mem0}}
            for i, e in enumerate(events)
        ]  # fmt: skip

    async def search(body: SearchRequest, engine: EngineDep) -> dict[str, Any]:
        """The agent's memories that best answer the query, by words (hybrid with an
        embedding provider) × salience; what is returned is reinforced."""
        agent, _ = owners(body.model_dump())
        hits = await engine.recall(agent, body.query, k=body.top_k, tables=body.kinds)
        results = [mem0_hit(hit.as_dict()) for hit in hits]
        if body.threshold is not None:
            results = [r for r in results if r["score"] >= body.threshold]
        return {"results": results}

    route(app, "GET", ("/v1/ping/",), ping, schema=False)
    route(app, "POST", ("/memories", "/v1/memories/", "/v3/memories/add/"), add,
          dependencies=[Writes])  # fmt: skip
    route(app, "GET", ("/memories",), listing)
    route(app, "POST", ("/v3/memories/",), listing_v3)
    route(app, "GET", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), get)
    route(app, "PUT", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), update,
          dependencies=[Writes])  # fmt: skip
    route(app, "DELETE", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), delete,
          dependencies=[Writes])  # fmt: skip
    route(app, "DELETE", ("/memories", "/v1/memories/"), delete_all, dependencies=[Writes])
    route(app, "GET", ("/memories/{memory_id}/history", "/v1/memories/{memory_id}/history/"),
          history)  # fmt: skip
    route(app, "POST", ("/search", "/v3/memories/search/", "/v2/memories/search/"), search)


def _ethos_routes(app: FastAPI, settings: Settings) -> None:
    async def whoami(request: Request) -> dict[str, Any]:
        """What this request's token may do: read, or write (which reads too)."""
        return {"access": request.scope.get("ethos.access")}

    async def agents(engine: EngineDep) -> list[dict[str, Any]]:
        """Every agent with its memories counted per table."""
        return await engine.agents()

    async def memories(
        engine: EngineDep,
        agent: str | None = None,
        pruned: bool = False,
        kinds: Annotated[list[Kind] | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> list[dict[str, Any]]:
        """Memories as `ethos explain` describes them (salience now, policy, when each
        will be pruned, its forecast), with text and metadata. Nothing is reinforced."""
        return await engine.memories(agent, tables=kinds, pruned=pruned, limit=limit, offset=offset)

    async def recall(body: Recall, engine: EngineDep) -> list[dict[str, Any]]:
        """Recall, every part of each score shown: text rank and/or similarity, salience."""
        hits = await engine.recall(
            body.agent, body.query, k=body.k, tables=body.kinds, record=body.record
        )
        return [hit.as_dict() for hit in hits]

    async def feedback(body: Feedback, engine: EngineDep) -> dict[str, Any]:
        """useful: reinforced (and linked); wrong: weakened, pruned below the threshold."""
        return await calls.feedback(engine, body.agent, body.ids, body.verdict)

    async def forget(body: Ids, engine: EngineDep) -> dict[str, Any]:
        """Pruned on request (reason manual), recoverable."""
        return await calls.forget(engine, body.agent, body.ids)

    async def recover(body: Ids, engine: EngineDep) -> dict[str, Any]:
        """Pruned memories back, with their content and history, and a fresh start."""
        return await calls.recover(engine, body.agent, body.ids)

    async def explain(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """Why it has its salience now, and when it will be pruned if not used."""
        return await calls.explain(engine, None, memory_id)

    async def move(memory_id: str, body: Move, engine: EngineDep) -> dict[str, Any]:
        """Another policy, re-anchored now (the dashboard's pin: permanent)."""
        memory = await engine.memory(memory_id)
        return await engine.move(memory["table"], memory_id, body.policy)

    async def links(memory_id: str, engine: EngineDep) -> list[dict[str, Any]]:
        """Its associations, strongest first."""
        memory = await engine.memory(memory_id)
        return await engine.links(memory["table"], memory_id)

    async def stats(engine: EngineDep, agent: str | None = None) -> dict[str, Any]:
        """The monitoring views, for one agent or all."""
        return await engine.stats(agent)

    async def status(engine: EngineDep) -> dict[str, Any]:
        """Daemons, the sweep lock, recent sweeps, pruned per reason (last day and ever),
        and the backlog: rows due per table, retrievals waiting."""
        now = await engine.now()
        state = await engine.status(settings.consolidation.alive_seconds)
        return {
            **state,
            "now": now,
            "recent_sweeps": (await engine.stats())["recent_sweeps"],
            "pruned_last_day": await engine.pruned_by_reason(since=now - timedelta(days=1)),
            "pruned": await engine.pruned_by_reason(),
            "due": {spec.name: await engine.count_due(spec, now) for spec in MEMORY_TABLES},
        }

    async def curve() -> list[dict[str, Any]]:
        """Every policy's lifetimes, as `ethos curve` prints them."""
        return policy_curves(settings.policy_table.values())

    route(app, "GET", ("/ethos/whoami",), whoami)
    route(app, "GET", ("/ethos/agents",), agents)
    route(app, "GET", ("/ethos/memories",), memories)
    route(app, "POST", ("/ethos/recall",), recall)
    route(app, "POST", ("/ethos/feedback",), feedback, dependencies=[Writes])
    route(app, "POST", ("/ethos/forget",), forget, dependencies=[Writes])
    route(app, "POST", ("/ethos/recover",), recover, dependencies=[Writes])
    route(app, "GET", ("/ethos/memories/{memory_id}/explain",), explain)
    route(app, "GET", ("/ethos/memories/{memory_id}/links",), links)
    route(app, "POST", ("/ethos/memories/{memory_id}/policy",), move,
                      dependencies=[Writes])  # fmt: skip
    route(app, "GET", ("/ethos/stats",), stats)
    route(app, "GET", ("/ethos/status",), status)
    route(app, "GET", ("/ethos/curve",), curve)


def http_app(settings: Settings, host: str, *, token_env: str | None) -> App:
    """build_app behind the gate for a server bound at `host`."""
    return Gate.for_bind(settings, host, token_env).wrap(build_app(settings))


async def serve_http(settings: Settings, host: str, port: int, *, token_env: str | None) -> None:
    """Serve http_app on host:port until stopped (SIGINT/SIGTERM: requests in flight
    finish, then the engine applies its buffered retrievals and closes)."""
    import uvicorn

    app = http_app(settings, host, token_env=token_env)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
