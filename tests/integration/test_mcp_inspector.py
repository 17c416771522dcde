"""`ethos mcp` driven by the MCP Inspector's CLI (Node, the protocol's reference tool):
it lists the tools, remembers and recalls over stdio as any MCP host would.

The Inspector is installed by `make mcp-inspector` (pinned, into .cache, once: `make
test` does not fetch it); without it, or without node, the test is skipped and says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mcp import ETHOS

INSPECTOR = (
    Path(__file__).parents[2] / ".cache" / "mcp-inspector" / "node_modules" / ".bin"
    / "mcp-inspector"
)  # fmt: skip
pytestmark = [
    pytest.mark.skipif(
        shutil.which("node") is None, reason="no node: the MCP Inspector runs on it"
    ),
    pytest.mark.skipif(
        not INSPECTOR.exists(), reason="the MCP Inspector is not installed: make mcp-inspector"
    ),
]


async def inspect(
    database_url: str, catalog: Path, method: str, *args: str, failing: bool = False
) -> Any:
    """The Inspector's answer to one call of `method` on `ethos mcp --agent ada` (a
    server of its own, as the Inspector starts one per call), as JSON. The Inspector
    keeps its catalog of servers in `catalog`, not in ~/.mcp-inspector. `failing`: the
    tool answers an error (the Inspector then exits with 5, the answer on stdout)."""
    # The server's environment, given to the Inspector, which starts it.
    server = {"ETHOS_DATABASE__URL": database_url, "ETHOS_LOGGING__FORMAT": "json"}
    server |= {key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}
    given = [arg for key, value in server.items() for arg in ("-e", f"{key}={value}")]
    inspector = await asyncio.create_subprocess_exec(
        str(INSPECTOR), "--cli", *given, "--method", method, *args, "--", ETHOS, "mcp",
        "--agent", "ada",
        env={**os.environ, "MCP_CATALOG_PATH": str(catalog)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(inspector.communicate(), 20)
    finally:
        if inspector.returncode is None:
            inspector.kill()
            await inspector.wait()
    assert inspector.returncode == (5 if failing else 0), (out.decode(), err.decode())
    return json.loads(out)


def structured(answer: Any) -> Any:
    assert not answer.get("isError"), answer
    data = answer["structuredContent"]
    return data["result"] if set(data) == {"result"} else data


async def test_the_mcp_inspector_lists_remembers_and_recalls(
    database_url: str, tmp_path: Path
) -> None:
    catalog = tmp_path / "mcp.json"
    tools = {
        tool["name"]: tool for tool in (await inspect(database_url, catalog, "tools/list"))["tools"]
    }
    assert set(tools) == {"remember", "recall", "feedback", "forget", "recover", "explain",
                          "stats"}  # fmt: skip
    assert "agent" not in tools["recall"]["inputSchema"]["properties"]  # fixed by --agent
    saved = structured(await inspect(
        database_url, catalog, "tools/call", "--tool-name", "remember",
        "--tool-arg", "content=Ada prefers green tea", "kind=fact",
    ))  # fmt: skip
    assert saved["created"] is True
    hits = structured(await inspect(
        database_url, catalog, "tools/call", "--tool-name", "recall",
        "--tool-arg", "query=which tea does Ada like",
    ))  # fmt: skip
    assert [h["id"] for h in hits] == [saved["id"]]
    wrong = await inspect(
        database_url,
        catalog,
        "tools/call",
        "--tool-name",
        "explain",
        "--tool-arg",
        "id=nope",
        failing=True,
    )
    assert wrong["isError"] and "bad id 'nope': expected a UUID" in wrong["content"][0]["text"]
