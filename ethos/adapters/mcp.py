"""An MCP server: any agent that speaks the Model Context Protocol remembers, recalls,
corrects and forgets through ethos. Needs the extra: pip install 'ethos[mcp]'.

    ethos mcp [--agent A]                 # stdio, what desktop and IDE clients launch
    ethos mcp --http 127.0.0.1:8765       # streamable HTTP, at /mcp

The server holds one Engine for its lifetime; closing it applies every retrieval the
tools recorded (LTP). With --agent every tool works on that agent's memories only;
without it each tool takes `agent`. Errors reach the model as tool errors with the same
one-line messages as the CLI (refused arguments too), and a failed call writes nothing;
an unknown tool is a JSON-RPC error. Every result is structured content and, beside it,
its JSON as text.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from ethos.adapters import wire
from ethos.adapters.door import Door, guarded
from ethos.domain.errors import EthosError
from ethos.domain.tables import table_spec
from ethos.services.engine import Engine
from ethos.settings import Settings, with_statement_timeout
from ethos.signals import on_stop

Kind = Literal["episode", "fact", "vector"]

INSTRUCTIONS = """\
Long-term memory that forgets the way people do: memories fade unless they are used,
and what is recalled and confirmed useful lives longer. Remember what is worth keeping,
recall before answering from memory, and say which recalled memories were useful or
wrong."""


class Server(MCPServer[Any]):
    """MCPServer with errors where the specification puts them: an unknown tool is a
    JSON-RPC error (invalid params), arguments the schema refuses a tool error of one
    line; and every structured result also as its JSON text, which a client reading
    only `content` sees (an empty recall gave no content at all)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name not in {tool.name for tool in await self.list_tools()}:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")
        try:
            answer = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(one_line(exc.__cause__)) from exc.__cause__
            raise
        if isinstance(answer, CallToolResult) and answer.structured_content is not None:
            text = wire.dumps(answer.structured_content)
            answer.content = [TextContent(type="text", text=text)]
        return answer


def one_line(error: ValidationError) -> str:
    """Pydantic's account of refused arguments, one line: each argument and why."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}"
        for e in error.errors()
    )


def build_server(settings: Settings, *, agent: str | None = None) -> MCPServer[Any]:
    """The ethos MCP server over `settings`; with `agent`, fixed to that agent."""
    opened: list[Engine] = []

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        served = with_statement_timeout(settings, settings.mcp.request_timeout_seconds)
        async with Engine(served) as engine:
            opened.append(engine)
            try:
                yield
            finally:
                opened.clear()

    server = Server(
        "ethos", version=version("ethos"), instructions=INSTRUCTIONS, lifespan=lifespan,
        log_level="WARNING",
    )  # fmt: skip

    timeout_seconds = settings.mcp.request_timeout_seconds
    too_long = (
        f"the call ran over {timeout_seconds:g} s and was stopped ([mcp] request_timeout_seconds)"
    )

    def tool(fn: Callable[..., Awaitable[Any]]) -> None:
        """Register `fn(engine, agent, ...)` as a tool: the engine is the server's, and
        `agent` is either fixed (and left out of the schema) or a required argument."""
        signature = inspect.signature(fn, eval_str=True)
        params = list(signature.parameters.values())[2:]  # after engine, agent

        @functools.wraps(fn)
        async def run(**arguments: Any) -> Any:
            who = agent if agent is not None else arguments.pop("agent")
            try:  # the deadline cancels the call's statement with it
                async with asyncio.timeout(timeout_seconds):
                    return await fn(opened[0], who, **arguments)
            except EthosError as exc:
                raise ToolError(str(exc)) from exc
            except TimeoutError:
                raise ToolError(too_long) from None

        if agent is None:
            whose = inspect.Parameter("agent", inspect.Parameter.KEYWORD_ONLY, annotation=str)
            params = [whose, *params]
        run.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
        )
        run.__annotations__ = {p.name: p.annotation for p in params} | {
            "return": signature.return_annotation
        }
        server.tool(description=inspect.getdoc(fn))(run)

    for fn in (remember, recall, feedback, forget, recover, explain, stats):
        tool(fn)
    return server


# One JSON-RPC message a line: far above any request ethos takes (limits.content_bytes).
STDIN_LINE_BYTES = 16 * 1024 * 1024


async def serve_stdio(server: MCPServer[Any]) -> None:
    """MCP over stdin and stdout until the end of the input or SIGINT/SIGTERM (Ctrl-C),
    either closing the session as the other (the engine's buffered retrievals applied).
    The SDK reads stdin in a worker thread, which no signal interrupts: on a terminal
    Ctrl-C did nothing. ethos reads a pipe or terminal on the event loop instead, and a
    stop ends that input (a second stop exits at once)."""
    from mcp.server.stdio import stdio_server

    talk = sys.stdin.isatty()  # a person at a terminal, not a client's pipe
    if talk:
        print("ethos: the MCP server over stdio; Ctrl-C or end of input stops it", file=sys.stderr)
    async with _stdin_lines() as lines, stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        session = server._lowlevel_server  # the SDK runs stdio_server() on it, unchangeable
        with on_stop(lines.end if lines is not None else lambda: None):
            await session.run(read, write, session.create_initialization_options())
    if talk:
        print("ethos: the MCP server stopped", file=sys.stderr)


class _Lines:
    """stdin's lines as the SDK's transport reads them (`async for`), read on the loop."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    def end(self) -> None:
        self.reader.feed_eof()


@asynccontextmanager
async def _stdin_lines() -> AsyncIterator[_Lines | None]:
    """stdin read on the event loop, or None where it cannot be (a regular file, which
    never blocks a read: the SDK's own reading does)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LINE_BYTES)
    was_blocking = os.get_blocking(0)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
    except (ValueError, PermissionError):  # not a pipe, socket or terminal epoll takes
        pipe.close()
        yield None
        return
    try:
        yield _Lines(reader)
    finally:
        transport.close()
        os.set_blocking(0, was_blocking)  # the terminal's mode is shared with the shell


async def serve_http(server: MCPServer[Any], host: str, port: int, door: Door) -> None:
    """Streamable HTTP at /mcp behind `door` (its Host and Origin rules are the SDK's
    DNS-rebinding checks too, for every bind)."""
    import uvicorn

    from ethos.adapters.serving import serve

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(door.allowed_hosts),
        allowed_origins=list(door.allowed_origins),
    )
    app = server.streamable_http_app(host=host, transport_security=security)
    config = uvicorn.Config(guarded(app, door), host=host, port=port, log_level="warning")
    await serve(config, door, "the MCP server (streamable HTTP at /mcp)")


# The tools: each takes the server's engine and the agent first (build_server fixes or
# asks the agent); its docstring is the tool's description, what the client's model reads.


async def remember(
    engine: Engine,
    agent: str,
    content: str,
    kind: Literal["episode", "fact"] = "episode",
    emotional_tone: float | None = None,
    confidence: float | None = None,
    importance: float | None = None,
    policy: str | None = None,
    metadata: dict[str, Any] | None = None,
    recall: int = 0,
) -> dict[str, Any]:
    """Store something worth remembering: an episode (what happened; emotional_tone
    0..1 makes it last longer) or a fact (durable knowledge, with a confidence 0..1).
    importance 0..1 or a named policy choose how long it lasts (without them, how
    informative the text is); metadata is kept with it. recall=k first recalls the k
    memories this text brings back, which are strengthened (what a conversation returns
    to lives longer) and returned as `recalled`. Returns its id, its policy and when it
    will be forgotten unless used (prunes_at, forgotten_in; a warning when that is
    sooner than usual: give a policy or an importance to keep it); a fact the agent
    already holds is not stored twice (created is false, it is reinforced, and `raised`
    names what the repeat gave it: a longer-lived policy, a higher importance)."""
    fields = {"emotional_tone": emotional_tone, "confidence": confidence,
              "importance": importance, "policy": policy, "metadata": metadata}  # fmt: skip
    added = await engine.add_detailed(
        kind, agent_id=agent, content=content, recall=recall,
        **{name: value for name, value in fields.items() if value is not None},
    )  # fmt: skip
    result: dict[str, Any] = {"id": str(added.id), "kind": kind, "created": added.created,
                              **added.answer()}  # fmt: skip
    if recall:
        result["recalled"] = [{"id": str(h.id), "content": h.content} for h in added.recalled]
    return result if added.created else {**result, "raised": list(added.raised)}


async def recall(
    engine: Engine,
    agent: str,
    query: str,
    k: int = 5,
    kinds: list[Kind] | None = None,
    record: bool = True,
) -> list[dict[str, Any]]:
    """Recall memories that answer a question or topic, best first: their content, kind,
    relevance (to the query), salience (how alive the memory is, 0..1) and score. Use
    before answering from memory. Recalling strengthens what its words match (reinforced:
    true); a memory found only beside one is counted, not strengthened; record=false
    only looks."""
    hits = await engine.recall(agent, query, k=k, tables=kinds, record=record)
    reinforced = record and engine.settings.ltp.on_search == "reinforce"
    return [
        {"id": str(h.id), "kind": _kind(h.table), "content": h.content,
         "relevance": None if h.relevance is None else round(h.relevance, 6),
         "salience": round(h.salience, 4), "score": round(h.score, 6),
         "reinforced": reinforced and h.matched}
        for h in hits
    ]  # fmt: skip


def _kind(table: str) -> str:
    return table_spec(table).alias


async def feedback(
    engine: Engine, agent: str, ids: list[str], verdict: Literal["useful", "wrong"]
) -> dict[str, Any]:
    """Say how recalled memories served: "useful" strengthens them (and links them to
    each other), "wrong" weakens them (a fact also loses confidence) until they are
    forgotten."""
    await engine.feedback(None, ids, verdict, agent=agent)
    return {"ids": ids, "verdict": verdict}


async def forget(engine: Engine, agent: str, ids: list[str]) -> dict[str, Any]:
    """Forget memories on request (the user asks, or they are obsolete). Recoverable
    with recover."""
    await engine.forget(None, ids, agent=agent)
    return {"forgotten": ids}


async def recover(engine: Engine, agent: str, ids: list[str]) -> dict[str, Any]:
    """Bring forgotten (or faded) memories back, with their content and history."""
    return {"recovered": [str(i) for i in await engine.recover_ids(ids, agent=agent)]}


async def explain(engine: Engine, agent: str, id: str) -> dict[str, Any]:
    """Why a memory has its salience now, and when it will be forgotten if not used."""
    return (await engine.explain(None, id, agent=agent)).as_dict()


async def stats(engine: Engine, agent: str) -> dict[str, Any]:
    """How many memories the agent has, live and forgotten, per kind."""
    return (await engine.stats(agent)).as_dict()
