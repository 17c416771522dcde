"""The CLI finds things for the user (issue 66): an id finds its table (a table given is
checked, and a wrong one says where the id is), `ethos history`, a mistyped agent is
said to have no memories, and a reader that goes away is not an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from tests.acceptance.test_cli import one_line_error

if TYPE_CHECKING:
    from tests.conftest import Cli

ETHOS = str(Path(sys.executable).parent / "ethos")
UNKNOWN = "00000000-0000-0000-0000-0000000000ee"


async def two(engine: Engine, agent: str = "ann") -> tuple[str, str]:
    """A fact and an episode of `agent`."""
    fact = await engine.add("fact", agent_id=agent, content=f"{agent} keeps bees")
    episode = await engine.add("episode", agent_id=agent, content=f"{agent} opened the hive")
    return str(fact), str(episode)


async def test_an_id_finds_its_table_and_a_wrong_table_says_where(
    database_url: str, engine: Engine, cli: Cli
) -> None:
    """Issue 66: explain, forget and feedback needed the table although ids are UUIDs,
    and `explain episode <a fact's id>` said "no episodic_traces row" alone."""
    env = {"ETHOS_DATABASE__URL": database_url}
    fact, episode = await two(engine)
    explained = cli("explain", fact, "--json", env=env)
    assert explained.returncode == 0, explained.stderr
    assert json.loads(explained.stdout)["table"] == "semantic_facts"
    wrong = cli("explain", "episode", fact, env=env)
    assert wrong.returncode == 1
    assert one_line_error(wrong).endswith(
        f"{fact} is not in episodic_traces: it is a fact (semantic_facts) of agent ann"
    )
    assert "it is an episode (episodic_traces) of agent ann" in one_line_error(
        cli("forget", "fact", episode, env=env)
    )
    assert cli("links", "fact", fact, env=env).returncode == 0  # a right table: accepted


async def test_ids_of_two_tables_in_one_command(
    database_url: str, engine: Engine, conn: asyncpg.Connection, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    fact, episode = await two(engine)
    forgot = cli("forget", fact, episode, "--json", env=env)
    assert forgot.returncode == 0, forgot.stderr
    assert json.loads(forgot.stdout)["counts"] == {
        "semantic_facts": {"manual": 1},
        "episodic_traces": {"manual": 1},
    }
    recovered = cli("recover", "--id", fact, "--id", episode, env=env)
    assert recovered.returncode == 0, recovered.stderr
    assert "recovered 1 of 1 semantic_facts rows" in recovered.stdout
    assert "recovered 1 of 1 episodic_traces rows" in recovered.stdout
    useful = cli("feedback", fact, episode, "--useful", "--json", env=env)
    assert useful.returncode == 0, useful.stderr
    assert json.loads(useful.stdout)["applied"] == 2
    moved = cli("move", episode, "--policy", "long_term", env=env)
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(f"moved ann's {episode} from")
    rows = await conn.fetch(
        "SELECT pruned, retrieval_count, policy FROM semantic_facts WHERE id = $1::uuid"
        " UNION ALL"
        " SELECT pruned, retrieval_count, policy FROM episodic_traces WHERE id = $2::uuid",
        fact,
        episode,
    )
    assert [(r["pruned"], r["retrieval_count"]) for r in rows] == [(False, 1), (False, 1)]
    assert rows[1]["policy"] == "long_term"


async def test_an_unknown_id_is_one_line(database_url: str, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    for command in (["explain"], ["history"], ["record-retrieval"]):
        unknown = cli(*command, UNKNOWN, env=env)
        assert f"no memory with id {UNKNOWN}" in one_line_error(unknown)
    assert "give the table" in one_line_error(cli("recover", env=env))


async def test_the_agent_is_asked_for_only_where_an_id_is_several_agents(
    database_url: str, engine: Engine, conn: asyncpg.Connection, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    fact = str(await engine.add("fact", agent_id="uma", content="Uma keeps bees"))
    # plain SQL can give another agent's memory the same id (the keys lead with the agent)
    await conn.execute(
        """INSERT INTO semantic_facts (id, agent_id, content)
           SELECT id, 'vic', 'Vic keeps bees' FROM semantic_facts WHERE id = $1::uuid""",
        fact,
    )
    refused = cli("explain", fact, env=env)
    assert one_line_error(refused).endswith(
        f"semantic_facts {fact} is a memory of 2 agents (uma, vic): name the agent (--agent)"
    )
    forgot = cli("forget", "fact", "--agent", "vic", fact, env=env)  # the table among flags
    assert forgot.returncode == 0, forgot.stderr
    rows = await conn.fetch("SELECT agent_id, pruned FROM semantic_facts ORDER BY agent_id")
    assert [tuple(r) for r in rows] == [("uma", False), ("vic", True)]


async def test_history_of_a_memory_by_its_id(database_url: str, engine: Engine, cli: Cli) -> None:
    """Issue 66: the history was the HTTP API's alone."""
    env = {"ETHOS_DATABASE__URL": database_url}
    _, episode = await two(engine)
    await engine.forget("episode", [episode], agent="ann")
    await engine.recover("episode", Selector(ids=(uuid.UUID(episode),), agent="ann"))
    shown = cli("history", episode, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"episode {episode} of agent ann"
    assert [line.split()[2] for line in lines[1:]] == ["add", "prune", "recover"]
    assert "ann opened the hive" in lines[1] and "(reason: manual)" in lines[2]
    data = json.loads(cli("history", "episode", episode, "--json", env=env).stdout)
    assert (data["table"], data["agent"]) == ("episodic_traces", "ann")
    assert [e["event"] for e in data["events"]] == ["add", "prune", "recover"]
    assert data["events"][1]["reason"] == "manual"


WARNING = "ethos: warning: agent 'alcie' has no memories (agents named like it: alice)"


@pytest.mark.parametrize(
    "command", [["search", "--query", "bees"], ["stats"], ["recover", "fact", "--dry-run"]]
)
async def test_a_mistyped_agent_is_said_to_have_no_memories(
    database_url: str, engine: Engine, cli: Cli, command: list[str]
) -> None:
    """Issue 66: a mistyped agent gave "no hits" and nothing else. The exit code stays 0
    (an agent with nothing stored yet is not an error); stderr says so."""
    env = {"ETHOS_DATABASE__URL": database_url}
    await two(engine, "alice")
    await two(engine, "bob")
    result = cli(*command, "--agent", "alcie", env=env)
    assert result.returncode == 0, result.stderr
    assert WARNING in result.stderr.splitlines()


async def test_no_warning_for_an_agent_with_memories_and_no_names_like_none(
    database_url: str, engine: Engine, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    await two(engine, "alice")
    nothing = cli("search", "--query", "bees", "--agent", "zed", env=env)
    assert nothing.stdout.strip() == "no hits"
    assert "ethos: warning: agent 'zed' has no memories\n" in nothing.stderr
    quiet = cli("search", "--query", "volcanoes", "--agent", "alice", env=env)
    assert quiet.stdout.strip() == "no hits" and "warning" not in quiet.stderr


@pytest.mark.parametrize(
    "command", [["curve"], ["policy", "list"], ["stats"], ["add", "episode", "--help"]]
)
def test_a_reader_that_goes_away_is_not_an_error(database_url: str, command: list[str]) -> None:
    """Issue 66: `ethos curve | head` ended with "ethos: error: [Errno 32] Broken pipe".
    A real pipe whose reader is gone before ethos writes: quiet, and the exit code of a
    process a closed pipe stops (141, as `seq 1000000 | head` gives its writer)."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [ETHOS, *command],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ETHOS_DATABASE__URL": database_url},
            timeout=60,
        )
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == (0 if "--help" in command else 141)
