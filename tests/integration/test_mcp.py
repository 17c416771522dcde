"""The MCP server, driven by the MCP SDK's own client: over stdio against the real
`ethos mcp` process, and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import asyncpg
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from ethos.adapters.mcp import build_server
from ethos.settings import DatabaseSettings, Settings
from tests.acceptance.test_cli import one_line_error
from tests.conftest import Cli
from tests.integration.test_http_bounds import blocked, tables_locked
from tests.servers import TOKEN, free_port, serving

ETHOS = str(Path(sys.executable).parent / "ethos")


def result(call: Any) -> Any:
    """A tool call's structured result (lists come wrapped in {"result": ...})."""
    assert not call.is_error, call.content
    data = call.structured_content
    return data["result"] if set(data) == {"result"} else data


def error(call: Any) -> str:
    assert call.is_error
    text: str = call.content[0].text
    return text


def stdio(database_url: str, *args: str) -> StdioServerParameters:
    env = {**os.environ, "ETHOS_DATABASE__URL": database_url, "ETHOS_LOGGING__FORMAT": "json"}
    return StdioServerParameters(command=ETHOS, args=["mcp", *args], env=env)


async def test_a_client_over_stdio_remembers_recalls_and_reinforces(
    database_url: str, conn: asyncpg.Connection
) -> None:
    async with Client(stdio(database_url, "--agent", "ada"), read_timeout_seconds=60) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"remember", "recall", "feedback", "forget", "recover", "explain",
                              "stats"}  # fmt: skip
        assert "agent" not in tools["recall"].input_schema["properties"]  # fixed by --agent
        assert tools["remember"].description.startswith("Store something worth remembering")
        saved = result(await client.call_tool(
            "remember", {"content": "Ada prefers green tea", "kind": "fact"}
        ))  # fmt: skip
        assert saved["created"] is True
        again = result(await client.call_tool(
            "remember", {"content": "ada prefers GREEN tea", "kind": "fact"}
        ))  # fmt: skip
        assert (again["id"], again["created"]) == (saved["id"], False)
        other = result(await client.call_tool("remember", {"content": "took the train"}))
        hits = result(await client.call_tool("recall", {"query": "which tea does Ada like"}))
        assert [h["id"] for h in hits] == [saved["id"]]
        assert hits[0]["kind"] == "fact" and hits[0]["salience"] > 0
        why = result(await client.call_tool("explain", {"id": other["id"]}))
        assert why["table"] == "episodic_traces"
        assert "bad id 'nope': expected a UUID" in error(
            await client.call_tool("forget", {"ids": ["nope"]})
        )
        unknown = "01000000-0000-7000-8000-000000000000"
        assert f"no memory of agent ada with id {unknown}" in error(
            await client.call_tool("feedback", {"ids": [unknown], "verdict": "useful"})
        )
        result(await client.call_tool("forget", {"ids": [other["id"]]}))
        assert result(await client.call_tool("recall", {"query": "train"})) == []
        result(await client.call_tool("recover", {"ids": [other["id"]]}))
        counts = result(await client.call_tool("stats", {}))["counts"]
        assert {c["table_name"]: c["live"] for c in counts} == {
            "episodic_traces": 1, "semantic_facts": 1
        }  # fmt: skip
    # The server has exited: the retrievals it recorded were applied on the way out.
    fact = await conn.fetchrow("SELECT retrieval_count FROM semantic_facts")
    assert fact["retrieval_count"] == 2  # the duplicate remember, and the recall


def http_server(
    database_url: str, *args: str, env: dict[str, str] | None = None
) -> contextlib.AbstractAsyncContextManager[int]:
    """`ethos mcp --http 127.0.0.1:PORT args...` running; yields the port once it listens."""
    return serving("mcp", database_url, "127.0.0.1", *args, env=env)


async def test_over_http_each_tool_takes_the_agent(database_url: str) -> None:
    async with (
        http_server(database_url) as port,
        Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "agent" in tools["recall"].input_schema["required"]
        saved = result(await client.call_tool(
                "remember", {"agent": "bo", "content": "bo owns a red bicycle", "kind": "fact"}
            ))  # fmt: skip
        mine = result(await client.call_tool("recall", {"agent": "bo", "query": "bicycle"}))
        theirs = result(await client.call_tool("recall", {"agent": "cy", "query": "bicycle"}))
        assert ([h["id"] for h in mine], theirs) == ([saved["id"]], [])
        refused = error(await client.call_tool("forget", {"agent": "cy", "ids": [saved["id"]]}))
        assert "no memory of agent cy" in refused
        assert json.dumps(saved)


def test_a_reachable_bind_without_a_token_is_refused(database_url: str, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    line = one_line_error(cli("mcp", "--http", f"0.0.0.0:{free_port()}", env=env))
    assert "0.0.0.0 is reachable from other machines: set a bearer token" in line
    unset = cli("mcp", "--http", f"127.0.0.1:{free_port()}", "--token-env", "NOPE", env=env)
    assert "the token variable NOPE is not set" in one_line_error(unset)


async def test_over_http_the_door_wants_the_token_and_our_own_host(database_url: str) -> None:
    token = TOKEN
    async with http_server(database_url, "--token-env", "MCP_T", env={"MCP_T": token}) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        good = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        async with httpx2.AsyncClient() as http:
            assert (await http.post(url, json=hello)).status_code == 401
            wrong = {**good, "Authorization": "Bearer nope"}
            assert (await http.post(url, json=hello, headers=wrong)).status_code == 401
            foreign_host = {**good, "Host": "evil.example.com"}
            assert (await http.post(url, json=hello, headers=foreign_host)).status_code == 421
            foreign_origin = {**good, "Origin": "http://evil.example.com"}
            assert (await http.post(url, json=hello, headers=foreign_origin)).status_code == 403
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed:
            transport = streamable_http_client(url, http_client=authed)
            async with Client(transport, read_timeout_seconds=60) as client:
                assert "recall" in {tool.name for tool in (await client.list_tools()).tools}


async def test_recall_k_is_capped_and_a_call_over_its_deadline_is_stopped(
    database_url: str,
) -> None:
    """k = 10^9 was accepted (HTTP capped it at 1000); a call's statement ends with its
    deadline, not minutes later."""
    async with (
        http_server(database_url, env={"ETHOS_MCP__REQUEST_TIMEOUT_SECONDS": "1"}) as port,
        Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client,
    ):
        recall = {"agent": "bo", "query": "bicycle", "record": False}
        assert "(limits.k)" in error(await client.call_tool("recall", {**recall, "k": 10**9}))
        async with tables_locked(database_url, "bo") as watcher:
            stopped = error(await client.call_tool("recall", recall))
            assert "[mcp] request_timeout_seconds" in stopped
            assert await blocked(watcher, 0)


async def test_errors_where_the_specification_puts_them_and_text_beside_structure(
    database_url: str,
) -> None:
    """Issue 41, with the SDK's own client: an unknown tool is a JSON-RPC error (invalid
    params), not a tool result; refused arguments are one line; a structured result is
    also its JSON text (an empty recall gave no content at all); the server says its
    version."""
    server = build_server(Settings(database=DatabaseSettings(url=database_url)), agent="ada")
    async with Client(server) as client:
        assert client.server_info.version == version("ethos") != ""
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("forget_everything", {})
        assert unknown.value.code == INVALID_PARAMS
        assert unknown.value.message == "unknown tool 'forget_everything'"
        refused = error(await client.call_tool("recall", {"query": "tea", "k": "many"}))
        assert refused == "k: Input should be a valid integer, unable to parse string as an integer"
        empty = await client.call_tool("recall", {"query": "nothing remembered yet"})
        assert [json.loads(block.text) for block in empty.content] == [{"result": []}]
        saved = result(await client.call_tool("remember", {"content": "Ada likes tea"}))
        found = await client.call_tool("recall", {"query": "tea"})
        assert json.loads(found.content[0].text) == found.structured_content
        assert result(found)[0]["id"] == saved["id"]
