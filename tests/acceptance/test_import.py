"""`ethos import` and `add --content -` / `--content-file` through the real command in a
subprocess (issue 66): JSON lines from a file or stdin, a bad line named by its number
with nothing written, a Ctrl-C that says how far it got and how to finish, and memories
written as add writes them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.acceptance.daemons import wait_for

ETHOS = str(Path(sys.executable).parent / "ethos")
EMBEDDING = [0.01] * 384
TABLES = ("episodic_traces", "semantic_facts", "memory_vectors")


def run(
    env: dict[str, str], *args: str, stdin: str | bytes | None = None
) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    result = subprocess.run(
        [ETHOS, *args], env=env, input=data, capture_output=True, timeout=120, check=False
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    return {**os.environ, "ETHOS_DATABASE__URL": database_url, "ETHOS_LOGGING__FORMAT": "json"}


def jsonl(*lines: dict[str, Any] | str) -> str:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)


async def counts(conn: asyncpg.Connection) -> list[int]:
    return [await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES]


GOOD = [
    {"table": "episode", "agent": "a1", "content": "met Ada at the station",
     "emotional_tone": 0.6, "created_at": "2026-01-02T10:00:00Z"},
    {"table": "fact", "agent": "a1", "content": "Ada lives in Porto", "confidence": 0.9,
     "metadata": {"source": "chat"}, "expires_at": "2030-01-01T00:00:00+00:00"},
    {"table": "vector", "agent": "a2", "content": "a vector", "embedding": EMBEDDING,
     "pinned": True},
]  # fmt: skip


async def test_import_a_file_and_stdin(
    env: dict[str, str], conn: asyncpg.Connection, tmp_path: Path
) -> None:
    path = tmp_path / "memories.jsonl"
    path.write_text(jsonl(GOOD[0], "", GOOD[1], GOOD[2]))  # a blank line is skipped
    result = run(env, "import", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "written": {"episodic_traces": 1, "semantic_facts": 1, "memory_vectors": 1},
        "through_line": 4,
    }
    episode = await conn.fetchrow("SELECT * FROM episodic_traces")
    assert (episode["agent_id"], episode["content"], episode["emotional_tone"]) == (
        "a1", "met Ada at the station", 0.6,
    )  # fmt: skip
    assert episode["created_at"].isoformat() == "2026-01-02T10:00:00+00:00"
    fact = await conn.fetchrow("SELECT * FROM semantic_facts")
    assert json.loads(fact["metadata"]) == {"source": "chat"} and fact["confidence"] == 0.9
    assert fact["expires_at"].year == 2030
    vector = await conn.fetchrow("SELECT agent_id, pinned, embedding::text FROM memory_vectors")
    assert vector["agent_id"] == "a2" and vector["pinned"]
    # The sweep finds them: the write path's hints were made (a trigger, as for any insert).
    hinted = await conn.fetchval("SELECT count(*) FROM episodic_traces_due")
    assert hinted > 0
    # The same lines from stdin, with the closing line a person reads.
    piped = run(env, "import", "-", stdin=jsonl(*GOOD))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.strip().splitlines()[-1] == "imported 3 of 3 memories"
    assert await counts(conn) == [2, 2, 2]


BAD = {
    "bad JSON": ('{"table": "episode", "agent": "a1", "content": "x"', "line 3: not JSON"),
    "unknown table": (
        {"table": "memories", "agent": "a1", "content": "x"}, "line 3: unknown table 'memories'"
    ),
    "wrong dimension": (
        {"table": "vector", "agent": "a1", "content": "x", "embedding": [1, 2, 3]},
        "line 3: embedding has 3 dimensions, expected 384",
    ),
    "bad timestamp": (
        {"table": "episode", "agent": "a1", "content": "x", "created_at": "last tuesday"},
        "line 3: bad created_at 'last tuesday'",
    ),
    "naive timestamp": (
        {"table": "episode", "agent": "a1", "content": "x", "created_at": "2026-01-01T00:00"},
        "line 3: bad created_at '2026-01-01T00:00': add a time zone",
    ),
    "future": (
        {"table": "episode", "agent": "a1", "content": "x", "created_at": "2099-01-01T00:00Z"},
        "line 3: --created-at 2099-01-01T00:00:00+00:00 is",
    ),
    "unknown key": (
        {"table": "episode", "agent": "a1", "content": "x", "salince": 0.5},
        "line 3: unknown key 'salince'",
    ),
    "no agent": ({"table": "fact", "content": "x"}, "line 3: key 'agent' is missing"),
    "a field of another table": (
        {"table": "fact", "agent": "a1", "content": "x", "emotional_tone": 0.5},
        "line 3: emotional_tone applies to episodic_traces only",
    ),
    "NaN": ('{"table": "episode", "agent": "a1", "content": "x", "salience": NaN}',
            "line 3: NaN is no JSON number"),
    "unknown policy": (
        {"table": "episode", "agent": "a1", "content": "x", "policy": "forever"},
        "line 3: unknown policy 'forever'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
async def test_a_bad_line_names_its_number_and_writes_nothing(
    case: str, env: dict[str, str], conn: asyncpg.Connection, tmp_path: Path
) -> None:
    line, message = BAD[case]
    path = tmp_path / "memories.jsonl"
    path.write_text(jsonl(GOOD[0], GOOD[1], line, GOOD[2]))
    result = run(env, "import", str(path))
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert await counts(conn) == [0, 0, 0]


ROWS = 3000
# "ethos: interrupted: imported 1240 of 3000 memories; to finish: tail -n +1241 F | ..."
FAR = re.compile(
    r"ethos: interrupted: imported (\d+) of (\d+) memories; to finish: tail -n \+(\d+) "
)


async def test_an_interrupted_import_says_how_far_and_the_rest_finishes_it(
    env: dict[str, str], conn: asyncpg.Connection, tmp_path: Path
) -> None:
    path = tmp_path / "memories.jsonl"
    lines = [{"table": "episode", "agent": "a", "content": f"memory {i}"} for i in range(ROWS)]
    path.write_text(jsonl(*lines))
    process = await asyncio.create_subprocess_exec(
        ETHOS, "import", str(path), "--batch-size", "20",
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        await wait_for(conn, "SELECT count(*) >= 100 FROM episodic_traces", within=60)
    except BaseException:
        process.kill()
        await process.communicate()
        raise
    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 130, err
    written = await conn.fetchval("SELECT count(*) FROM episodic_traces")
    assert 0 < written < ROWS, "the signal landed after the end: make the import longer"
    far = FAR.search(err.decode())
    assert far is not None, err
    assert (int(far[1]), int(far[2]), int(far[3])) == (written, ROWS, written + 1)
    assert f"imported {written} of {ROWS} memories" in out.decode()
    # The lines it names as left, imported: every line once.
    rest = "".join(path.read_text().splitlines(keepends=True)[int(far[3]) - 1 :])
    second = run(env, "import", "-", stdin=rest)
    assert second.returncode == 0, second.stderr
    assert f"imported {ROWS - written} of {ROWS - written} memories" in second.stdout
    contents = await conn.fetch("SELECT content, count(*) AS n FROM episodic_traces GROUP BY 1")
    assert len(contents) == ROWS and {row["n"] for row in contents} == {1}


# Over 128 KiB, the most one argument may hold on Linux (MAX_ARG_STRLEN): only stdin or a
# file can carry it.
LONG = " ".join(f"word{i}" for i in range(24_000))


async def test_add_reads_content_from_stdin_or_a_file(
    env: dict[str, str], conn: asyncpg.Connection, tmp_path: Path
) -> None:
    assert 128 * 1024 < len(LONG.encode()) < 256 * 1024
    piped = run(env, "add", "episode", "--agent", "a1", "--content", "-", "--json", stdin=LONG)
    assert piped.returncode == 0, piped.stderr
    path = tmp_path / "long.txt"
    path.write_text(LONG + " end")
    filed = run(env, "add", "fact", "--agent", "a1", "--content-file", str(path), "--json")
    assert filed.returncode == 0, filed.stderr
    assert await conn.fetchval("SELECT content FROM episodic_traces") == LONG
    assert await conn.fetchval("SELECT content FROM semantic_facts") == LONG + " end"
    # Over 256 KiB: refused in one line, as an argument would be; so is a text not UTF-8.
    path.write_text(LONG + LONG)
    over = run(env, "add", "fact", "--agent", "a1", "--content-file", str(path))
    assert over.returncode == 1 and "content is over 262,144 bytes" in over.stderr
    latin = run(env, "add", "fact", "--agent", "a1", "--content", "-", stdin=b"caf\xe9")
    assert latin.returncode == 1 and "content is not UTF-8 text" in latin.stderr
    both = run(env, "add", "fact", "--agent", "a1", "--content", "x", "--content-file", "f")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert await counts(conn) == [1, 1, 0]


SAME = ("policy", "importance", "auto_importance", "salience", "strength", "pinned")


@pytest.mark.parametrize(
    "line",
    [
        {"table": "episode", "content": "I am vegetarian and allergic to peanuts",
         "emotional_tone": 0.4},
        {"table": "fact", "content": "My daughter is called Mia", "stated": False},
        {"table": "fact", "content": "haha nice", "importance": 0.9},
        {"table": "vector", "content": "a vector of its own", "embedding": EMBEDDING,
         "salience": 0.7, "policy": "long_term"},
    ],
    ids=["episode", "fact", "importance", "vector"],
)  # fmt: skip
async def test_import_writes_what_add_writes_on_a_new_agent(
    line: dict[str, Any], env: dict[str, str], conn: asyncpg.Connection
) -> None:
    flags = {"content": "--content", "emotional_tone": "--emotional-tone",
             "importance": "--importance", "embedding": "--embedding",
             "salience": "--salience", "policy": "--policy"}  # fmt: skip
    args = [part for key in line if key in flags for part in (flags[key], _flag(line[key]))]
    if "stated" in line:
        return await _stated_fact(line, env, conn)
    added = run(env, "add", line["table"], "--agent", "added", *args)
    assert added.returncode == 0, added.stderr
    imported = run(env, "import", "-", stdin=jsonl({**line, "agent": "imported"}))
    assert imported.returncode == 0, imported.stderr
    await _same(conn, line["table"])


def _flag(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


async def _stated_fact(line: dict[str, Any], env: dict[str, str], conn: asyncpg.Connection) -> None:
    """`stated`, which the CLI's add does not take, through the engine's add: the same."""
    settings = Settings(database=DatabaseSettings(url=env["ETHOS_DATABASE__URL"]))
    async with Engine(settings) as engine:
        await engine.add("fact", agent_id="added", content=line["content"], stated=False)
    imported = run(env, "import", "-", stdin=jsonl({**line, "agent": "imported"}))
    assert imported.returncode == 0, imported.stderr
    await _same(conn, "fact")


async def _same(conn: asyncpg.Connection, table: str) -> None:
    name = {"episode": "episodic_traces", "fact": "semantic_facts", "vector": "memory_vectors"}
    rows = await conn.fetch(
        f"SELECT agent_id, {', '.join(SAME)} FROM {name[table]} ORDER BY agent_id"
    )
    assert [row["agent_id"] for row in rows] == ["added", "imported"]
    assert dict(rows[0]) | {"agent_id": "-"} == dict(rows[1]) | {"agent_id": "-"}
    assert rows[0]["policy"] is not None
