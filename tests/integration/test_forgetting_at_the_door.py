"""Forgetting is visible at the door: every add answers with the memory's policy and
when it will be forgotten if unused (prunes_at, forgotten_in), and warns when that is
sooner than under the default policy. Through the engine, the CLI, mem0's own client and
the MCP SDK's own client (issue 63)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from mcp import Client

from ethos.adapters.mcp import build_server
from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.servers import TOKEN, serving

if TYPE_CHECKING:
    from tests.conftest import Cli, Days

# Read by mem0 when it is imported (in the test): no telemetry, no ~/.mem0.
os.environ.setdefault("MEM0_TELEMETRY", "False")

WORKING = "forgotten in 8 h unless used"


async def test_the_engine_answers_policy_and_forgetting(engine: Engine, days: Days) -> None:
    scratch = await engine.add_detailed(
        "episode", agent_id="sam", content="haha nice", policy="working", created_at=days(0)
    )
    assert (scratch.policy, scratch.short_lived, scratch.at) == ("working", True, days(0))
    assert scratch.prunes_at is not None  # the first whole second below the threshold
    assert timedelta(0) < scratch.prunes_at - days(0) - timedelta(hours=8) <= timedelta(seconds=1)
    assert scratch.lifetime() == {
        "policy": "working", "prunes_at": scratch.prunes_at.isoformat(), "forgotten_in": "8 h",
    }  # fmt: skip
    assert scratch.warning("give --policy standard") == f"{WORKING}; give --policy standard"
    # Automatic importance picks the policy: the answer is what the row got, and when
    # explain says it goes.
    fact = await engine.add_detailed(
        "fact", agent_id="sam", content="I am allergic to peanuts", created_at=days(0)
    )
    why = await engine.explain("fact", fact.id, now=days(0))
    assert (fact.policy, fact.prunes_at) == (why.policy, why.prunes_at)
    kept = await engine.add_detailed("fact", agent_id="sam", content="my name is Sam",
                                     policy="permanent", created_at=days(0))  # fmt: skip
    assert (kept.prunes_at, kept.lifetime()["forgotten_in"], kept.warning("x")) == (
        None, "never", None
    )  # fmt: skip
    # A repeat answers for the memory it found, as it stands after the repeat's raise.
    again = await engine.add_detailed(
        "fact", agent_id="sam", content="I am allergic to peanuts", policy="permanent",
        created_at=days(0) + timedelta(minutes=1),
    )  # fmt: skip
    assert (again.id, again.created, again.policy, again.prunes_at) == (
        fact.id, False, "permanent", None
    )  # fmt: skip
    assert again.at == days(0) + timedelta(minutes=1)


def test_the_cli_prints_policy_and_warns_on_working(database_url: str, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    added = cli("add", "fact", "--agent", "sam", "--content", "I am vegetarian",
                "--policy", "working", env=env)  # fmt: skip
    assert added.returncode == 0, added.stderr
    memory_id, lifetime = added.stdout.splitlines()[:2]
    assert lifetime.startswith("  policy working: forgotten in 8 h (")
    assert lifetime.endswith(") unless used")
    assert (
        f"ethos: warning: {WORKING}; give --policy standard or --importance to keep it"
        in added.stderr
    )
    shown = cli("add", "fact", "--agent", "sam", "--content", "I can't swim", "--policy",
                "standard", "--json", env=env)  # fmt: skip
    data = json.loads(shown.stdout)
    assert (data["policy"], data["forgotten_in"], "warning" in data) == (
        "standard",
        "21 days",
        False,
    )
    assert data["prunes_at"] is not None and "warning" not in shown.stderr
    assert memory_id


async def test_mem0_add_answers_policy_and_forgetting(database_url: str, tmp_path: Path) -> None:
    os.environ.setdefault("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient

    async with serving("serve", database_url, "127.0.0.1", "--token-env", "MEMORY_TOKEN",
                       env={"MEMORY_TOKEN": TOKEN}) as port:  # fmt: skip
        client = MemoryClient(api_key=TOKEN, host=f"http://127.0.0.1:{port}")
        try:
            scratch = client.add("lol", user_id="sam", policy="working", infer=False)
            kept = client.add("I am vegetarian", user_id="sam", policy="standard", infer=False)
        finally:
            client.client.close()
    [memory] = scratch["results"]
    assert memory["event"] == "ADD"
    told = memory["ethos"]
    assert (told["policy"], told["forgotten_in"]) == ("working", "8 h")
    assert told["warning"] == f"{WORKING}; give policy='standard' or an importance to keep it"
    [memory] = kept["results"]
    assert (memory["ethos"]["policy"], memory["ethos"]["forgotten_in"]) == ("standard", "21 days")
    assert "warning" not in memory["ethos"]


async def test_mcp_remember_answers_policy_and_forgetting(database_url: str) -> None:
    server = build_server(Settings(database=DatabaseSettings(url=database_url)), agent="sam")
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "forgotten" in (tools["remember"].description or "")
        scratch = await client.call_tool("remember", {"content": "ok thanks", "policy": "working"})
        kept = await client.call_tool(
            "remember", {"content": "I work night shifts", "kind": "fact", "policy": "standard"}
        )
    told = scratch.structured_content
    assert (told["policy"], told["forgotten_in"]) == ("working", "8 h")
    assert told["warning"] == f"{WORKING}; give policy='standard' or an importance to keep it"
    said = kept.structured_content
    assert (said["policy"], said["forgotten_in"], "warning" in said) == (
        "standard",
        "21 days",
        False,
    )
    assert datetime.fromisoformat(said["prunes_at"]) > datetime.fromisoformat(told["prunes_at"])
