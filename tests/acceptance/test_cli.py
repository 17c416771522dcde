"""The real `ethos` command in a subprocess, configured through the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from ethos import db
from ethos.settings import Settings

if TYPE_CHECKING:
    from tests.conftest import Cli, Psql

EMBEDDING = json.dumps([0.01] * 384)
FUTURE = "2099-01-01T00:00:00Z"  # a typo's year: decades ahead of the clock


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_embedded_database_from_any_folder(tmp_path: Path, cli: Cli, psql: Psql) -> None:
    """No URL configured: ethos starts its own PostgreSQL in the data dir and migrates it,
    and writes the settings there: a fresh database is ready to use."""
    env = {
        "ETHOS_DATABASE__DATA_DIR": str(tmp_path / "pgdata"),
        "ETHOS_POLICIES__SCRATCH__LIFETIME": "1h",
    }
    try:
        first = cli("migrate", env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        url = cli("db", "url", env=env, cwd=tmp_path).stdout.strip()
        assert psql(url, "SELECT configured FROM decay_policies WHERE name = 'scratch'") == [["t"]]
        held = cli("settings", "apply", "--dry-run", "--json", env=env, cwd=tmp_path)
        assert json.loads(held.stdout)["differences"] == [], held.stderr
        head = ScriptDirectory.from_config(db.alembic_config(Settings())).get_current_head()
        assert psql(url, "SELECT version_num FROM alembic_version") == [[head]]
        second = cli("migrate", env=env, cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert psql(url, "SELECT version_num FROM alembic_version") == [[head]]
        columns = {
            row[0]
            for row in psql(
                url,
                "SELECT table_name || '.' || column_name FROM information_schema.columns"
                " WHERE table_schema = 'public'",
            )
        }
        for table in ("memory_vectors", "episodic_traces", "semantic_facts"):
            for column in [
                "id",
                "agent_id",
                "content",
                "salience",
                "retrieval_count",
                "last_retrieved_at",
                "created_at",
                "pruned",
                "pruned_at",
                "prune_reason",
                "pinned",
                "metadata",
            ]:
                assert f"{table}.{column}" in columns
        for column in (
            "memory_vectors.embedding",
            "memory_vectors.expires_at",
            "memory_embeddings.source_id",
            "memory_embeddings.field",
            "episodic_traces.emotional_tone",
            "semantic_facts.confidence",
        ):
            assert column in columns
        [[version]] = psql(url, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert version.startswith("0.8")
        indexes = psql(url, "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_vectors'")
        assert any("USING hnsw (embedding vector_cosine_ops)" in row[0] for row in indexes)
    finally:
        stop = cli("db", "stop", env=env, cwd=tmp_path)
    assert stop.returncode == 0 and "stopped" in stop.stdout


def test_bad_setting_is_one_line_naming_the_key(tmp_path: Path, cli: Cli) -> None:
    result = cli("migrate", env={"ETHOS_DECAY__BASE_TAU_DAYS": "-1"}, cwd=tmp_path)
    assert "decay.base_tau_days" in one_line_error(result)


def test_bad_config_file_names_the_file(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "custom.toml"
    config.write_text("[decay]\nprune_threshold = 1.5\n")
    line = one_line_error(cli("--config", str(config), "sweep", cwd=tmp_path))
    assert str(config) in line and "decay.prune_threshold" in line


async def test_add_and_bad_input(database_url: str, conn: asyncpg.Connection, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    added = cli(
        "add", "episode", "--agent", "a1", "--content", "met Ada", "--embedding", EMBEDDING,
        env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    vector = cli(
        "add", "vector", "--agent", "a1", "--content", "v", "--embedding", EMBEDDING, env=env
    )
    assert vector.returncode == 0, vector.stderr
    bad = {
        "3 dimensions, expected 384": ["vector", "--embedding", "[1, 2, 3]"],
        "NaN": ["vector", "--embedding", json.dumps([0.0] * 383 + [float("nan")])],
        "salience must be between 0 and 1": ["episode", "--salience", "1.5"],
        "invalid choice: 'memories'": ["memories"],
        "bad created-at": ["episode", "--created-at", "last tuesday"],
        "--created-at 2099-01-01T00:00:00+00:00 is": ["episode", "--created-at", FUTURE],
        "bad created-at '0001-01-01T00:00:00+00:00'": [
            "episode", "--created-at", "0001-01-01T00:00:00Z",
        ],
        "bad created-at '10000-01-01Z'": ["episode", "--created-at", "10000-01-01Z"],
        "bad expires-at '9999-12-31T00:00:00+00:00'": [
            "fact", "--expires-at", "9999-12-31T00:00:00Z",
        ],
        "embedding has 3 dimensions": ["episode", "--embedding", "[1, 2, 3]"],
    }  # fmt: skip
    for message, args in bad.items():
        result = cli("add", *args[:1], "--agent", "a1", "--content", "x", *args[1:], env=env)
        assert message in one_line_error(result)
    assert "--agent" in one_line_error(cli("add", "episode", "--content", "x", env=env))
    counts = [
        await conn.fetchval(f"SELECT count(*) FROM {t}")
        for t in ("episodic_traces", "memory_vectors", "semantic_facts", "memory_embeddings")
    ]
    assert counts == [1, 1, 0, 1]
    meant = cli(
        "add", "fact", "--agent", "a1", "--content", "x", "--created-at", FUTURE,
        "--allow-future", env=env,
    )  # fmt: skip
    assert meant.returncode == 0, meant.stderr


async def test_sweep_and_explain_json(database_url: str, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    added = cli(
        "add", "episode", "--agent", "a", "--content", "x",
        "--created-at", "2026-01-01T00:00:00Z", "--json", env=env,
    )  # fmt: skip
    memory = json.loads(added.stdout)["id"]
    dry = cli("sweep", "--now", "2026-01-22T00:00:00Z", "--dry-run", "--json", env=env)
    assert json.loads(dry.stdout)["tables"]["episodic_traces"] == {
        "scanned": 1,
        "updated": 1,
        "pruned": 1,
        "expired": 0,
        "held": 0,
        "whole": False,  # as the due sweep it previews: its due rows, not the table whole
    }
    dry_prune = cli(
        "sweep", "--now", "2026-01-22T00:00:00Z", "--dry-run", "--prune", "--json", env=env
    )
    assert json.loads(dry_prune.stdout)["mode"] == "prune"
    future = cli("sweep", "--now", "2099-01-01T00:00:00Z", "--json", env=env)
    assert "ahead of the database's clock" in one_line_error(future)
    swept = json.loads(cli("sweep", "--now", "2026-01-22T00:00:00Z", "--json", env=env).stdout)
    assert swept["dry_run"] is False and swept["now"] == "2026-01-22T00:00:00+00:00"
    assert set(swept["tables"]) == {"memory_vectors", "episodic_traces", "semantic_facts"}
    assert swept["tables"]["episodic_traces"]["pruned"] == 1
    explained = cli(
        "explain", "episode", memory, "--now", "2026-01-10T00:00:00Z", "--json", env=env
    )
    info = json.loads(explained.stdout)
    for key in [
        "table",
        "id",
        "salience",
        "t_days",
        "days_alive",
        "tau_days",
        "frequency",
        "decay_factor",
        "frequency_boost",
        "emotional_boost",
        "pinned",
        "pruned",
        "prunes_at",
    ]:
        assert key in info
    assert info["t_days"] == pytest.approx(9.0) and info["pruned"] is True
    # as text, each moment also as its distance from --now, each span in days readably
    text = cli("explain", "episode", memory, "--now", "2026-01-10T00:00:00Z", env=env).stdout
    assert "pruned_at: 2026-01-22T00:00:00+00:00 (in 12 days)" in text
    assert re.search(r"\bt_days: [0-9.]+ \(9 days\)", text), text
    assert re.search(r"\btau_days: [0-9.]+ \(2 h 40 min\)", text), text
    unknown = cli("explain", "episode", "00000000-0000-0000-0000-000000000009", env=env)
    assert "no episodic_traces row" in one_line_error(unknown)


async def test_search_then_exit_applies_ltp(
    database_url: str, conn: asyncpg.Connection, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    added = cli(
        "add", "vector", "--agent", "a", "--content", "v", "--embedding", EMBEDDING, "--json",
        env=env,
    )  # fmt: skip
    memory = json.loads(added.stdout)["id"]
    result = cli("search", "--agent", "a", "--embedding", EMBEDDING, "-k", "3", "--json", env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [hit["id"] for hit in out["hits"]] == [memory]
    assert out["ltp"]["applied"] == 1
    count = await conn.fetchval(
        "SELECT retrieval_count FROM memory_vectors WHERE id = $1::uuid", memory
    )
    assert count == 1
    assert "k must be a positive integer" in one_line_error(
        cli("search", "--agent", "a", "--embedding", EMBEDDING, "-k", "0", env=env)
    )
    assert "expected 384" in one_line_error(
        cli("search", "--agent", "a", "--embedding", "[1, 2]", env=env)
    )


async def test_record_retrieval_counts_repeats_and_unknown_ids(
    database_url: str, conn: asyncpg.Connection, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    fact = json.loads(
        cli("add", "fact", "--agent", "a", "--content", "f", "--json", env=env).stdout
    )["id"]
    unknown = "00000000-0000-0000-0000-0000000000aa"
    ahead = ["--now", "2199-12-01T00:00:00Z"]
    for command in (["record-retrieval", "fact"], ["feedback", "fact", "--useful"]):
        refused = cli(*command, fact, *ahead, "--json", env=env)
        assert "ahead of the database's clock" in one_line_error(refused)
    result = cli(
        "record-retrieval", "fact", fact, fact, *ahead, "--allow-future", "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert (stats["applied"], stats["skipped"], stats["dropped"]) == (2, 0, 0)
    count = await conn.fetchval(
        "SELECT retrieval_count FROM semantic_facts WHERE id = $1::uuid", fact
    )
    assert count == 2
    for command in (["record-retrieval", "fact"], ["feedback", "fact", "--useful"]):
        refused = cli(*command, fact, unknown, "--json", env=env)
        assert refused.returncode == 1
        assert json.loads(refused.stdout)["unknown_ids"] == [unknown]
        assert f"no semantic_facts row with id {unknown}" in one_line_error(refused)
    assert count == await conn.fetchval(
        "SELECT retrieval_count FROM semantic_facts WHERE id = $1::uuid", fact
    )  # nothing recorded for the known one either
    assert "bad id" in one_line_error(cli("record-retrieval", "fact", "nope", env=env))


async def test_operator_commands(database_url: str, tmp_path: Path, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    memory = json.loads(
        cli(
            "add", "episode", "--agent", "a", "--content", "old news",
            "--created-at", "2026-01-01T00:00:00Z", "--json", env=env,
        ).stdout
    )["id"]  # fmt: skip
    cli("sweep", "--now", "2026-03-01T00:00:00Z", env=env)
    stats = cli("stats", "--agent", "a", env=env)
    assert stats.returncode == 0, stats.stderr
    assert "episodic_traces" in stats.stdout and "recent sweeps" in stats.stdout
    counts = json.loads(cli("stats", "--json", env=env).stdout)["counts"]
    assert counts == [{"table_name": "episodic_traces", "live": 0, "pruned": 1, "pinned": 0}]

    dry = json.loads(
        cli("recover", "episode", "--reason", "decay", "--dry-run", "--json", env=env).stdout
    )
    assert [r["id"] for r in dry["rows"]] == [memory] and dry["recovery_id"] is None
    done = cli("recover", "episode", "--id", memory, "--now", "2026-03-01T00:00:00Z", env=env)
    assert done.returncode == 0 and "recovered 1 of 1 episodic_traces rows" in done.stdout
    again = cli("recover", "episode", "--id", memory, env=env)
    assert "not pruned" in one_line_error(again)
    assert "say which rows" in one_line_error(cli("recover", "episode", env=env))

    plot = tmp_path / "curve.png"
    curve = cli("curve", "--plot", str(plot), "--json", env=env)
    assert curve.returncode == 0, curve.stderr
    curves = {c["name"]: c for c in json.loads(curve.stdout)["policies"]}
    assert set(curves) == {"standard", "working", "long_term", "permanent"}
    standard = curves["standard"]["curve"][0]
    assert standard["days_until_pruned_emotion_0"] == pytest.approx(20.97, abs=0.01)
    working = curves["working"]["curve"][0]["days_until_pruned_emotion_0"]
    assert working == pytest.approx(1 / 3, abs=1.5 / 86400)  # the first second past 8 h
    assert curves["permanent"]["curve"][0]["days_until_pruned_emotion_0"] is None
    assert plot.read_bytes()[:4] == b"\x89PNG"


async def test_demo_runs(database_url: str, cli: Cli) -> None:
    result = cli("demo", env={"ETHOS_DATABASE__URL": database_url})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "pruned 'We had pasta for lunch'" in out
    assert "recovered 'We had pasta for lunch'" in out and "pruned: False" in out
    # written with no importance: rated by their words, small talk is gone the next day
    assert "'Hi Alice! How are you doing today?' (automatic importance 0.53" in out
    assert "day  2  pruned 'Hi Alice! How are you doing today?'" in out
    assert 'Lisbon on 3 May" (automatic importance 0.75' in out
    assert "pruned \"Alice's sister Maria" not in out
    # the local model installed (the dev extra) and no provider configured: it is used
    assert (
        "bob was asked 'what does he like to drink?' and recalled 'Bob prefers tea over"
        " coffee' by its meaning" in out
    )
    assert result.stderr == ""


def test_several_processes_share_one_embedded_server(tmp_path: Path, cli: Cli) -> None:
    env = {**os.environ, "ETHOS_DATABASE__DATA_DIR": str(tmp_path / "pgdata")}
    ethos = str(Path(sys.executable).parent / "ethos")
    processes = [
        subprocess.Popen(
            [ethos, "db", "url"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    try:
        urls = {p.communicate(timeout=60)[0].strip() for p in processes}
        assert [p.returncode for p in processes] == [0, 0, 0]
        assert len(urls) == 1 and urls.pop().startswith("postgresql://")
    finally:
        cli("db", "stop", env={"ETHOS_DATABASE__DATA_DIR": str(tmp_path / "pgdata")})


async def test_settings_apply_previews_then_writes(database_url: str, cli: Cli, psql: Psql) -> None:
    env = {"ETHOS_DATABASE__URL": database_url, "ETHOS_IMPORTANCE__AUTO": "false"}
    auto = "SELECT auto_importance FROM ethos_settings"
    preview = cli("settings", "apply", "--dry-run", env=env)
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.splitlines() == [
        "importance.auto: True -> False",
        "(dry run: nothing written)",
    ]
    assert psql(database_url, auto) == [["t"]]
    applied = cli("settings", "apply", "--json", env=env)
    assert json.loads(applied.stdout) == {
        "applied": True,
        "differences": [{"key": "importance.auto", "database": True, "settings": False}],
    }
    assert psql(database_url, auto) == [["f"]]
    again = cli("settings", "apply", env=env)
    assert again.stdout.strip() == "the database holds these settings already"


async def test_policy_commands(database_url: str, conn: asyncpg.Connection, cli: Cli) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    listed = json.loads(cli("policy", "list", "--json", env=env).stdout)["policies"]
    lifetimes = {p["name"]: p["lifetime_days"] for p in listed}
    assert lifetimes["working"] == pytest.approx(1 / 3)
    assert lifetimes["long_term"] == pytest.approx(365)
    assert lifetimes["permanent"] is None
    assert all(p["configured"] for p in listed)
    text = cli("policy", "list", env=env).stdout
    assert "working" in text and "to standard at 3" in text

    assigned = cli("policy", "assign", "goldfish", "working", env=env)
    assert assigned.returncode == 0, assigned.stderr
    shown = json.loads(cli("policy", "show", "working", "--json", env=env).stdout)
    assert shown["agents"] == ["goldfish"] and shown["promote_to"] == "standard"
    memory = json.loads(
        cli("add", "episode", "--agent", "goldfish", "--content", "x", "--json", env=env).stdout
    )["id"]
    info = json.loads(cli("explain", "episode", memory, "--json", env=env).stdout)
    assert (info["policy"], info["curve"], info["importance"]) == ("working", "exponential", None)
    moved = cli("move", "episode", memory, "--policy", "long_term", "--json", env=env)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["old_policy"] == "working"
    important = json.loads(
        cli("add", "fact", "--agent", "a", "--content", "y", "--importance", "0.9", "--json",
            env=env).stdout
    )["id"]  # fmt: skip
    assert (
        await conn.fetchval("SELECT policy FROM semantic_facts WHERE id = $1::uuid", important)
        == "long_term"
    )
    unassigned = cli("policy", "unassign", "goldfish", "--json", env=env)
    assert json.loads(unassigned.stdout) == {"agent": "goldfish", "policy": "working"}

    count = await conn.fetchval("SELECT count(*) FROM episodic_traces")
    bad = {
        "unknown policy 'nope'": ["add", "episode", "--agent", "a", "--content", "x",
                                  "--policy", "nope"],
        "importance must be between 0 and 1": ["add", "episode", "--agent", "a", "--content",
                                               "x", "--importance", "1.5"],
        "unknown policy 'eternal'": ["policy", "show", "eternal"],
        "unknown policy 'never'": ["policy", "assign", "a", "never"],
    }  # fmt: skip
    for message, args in bad.items():
        assert message in one_line_error(cli(*args, env=env))
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == count
    cycle = {
        **env,
        "ETHOS_POLICIES__STANDARD__PROMOTE_AFTER": "5",
        "ETHOS_POLICIES__STANDARD__PROMOTE_TO": "working",
    }
    line = one_line_error(cli("policy", "list", env=cycle))
    assert "promotion cycle" in line and "ETHOS_POLICIES__" in line


async def test_feedback_links_and_recover_from_the_command_line(
    database_url: str, conn: asyncpg.Connection, cli: Cli
) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    at = ["--now", "2026-03-01T00:00:00Z"]

    def add(*args: str) -> str:
        out = cli("add", *args, "--agent", "a", "--created-at", "2026-03-01T00:00:00Z", "--json",
                  env=env)  # fmt: skip
        return str(json.loads(out.stdout)["id"])

    memory = add("episode", "--content", "the wrong one", "--salience", "0.15")
    for expected_pruned in (0, 1):
        result = cli("feedback", "episode", memory, "--wrong", *at, "--json", env=env)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["pruned"] == expected_pruned
    info = json.loads(cli("explain", "episode", memory, "--json", env=env).stdout)
    assert (info["pruned"], info["prune_reason"], info["wrong_count"]) == (True, "feedback", 2)
    recovered = cli("recover", "episode", "--reason", "feedback", "--json", env=env)
    assert json.loads(recovered.stdout)["count"] == 1
    a, b = (add("vector", "--content", c, "--embedding", EMBEDDING) for c in ("a", "b"))
    useful = cli("feedback", "vector", a, b, "--useful", *at, "--json", env=env)
    assert json.loads(useful.stdout)["links"] == 1
    links = json.loads(cli("links", "vector", a, *at, "--json", env=env).stdout)["links"]
    assert [(link["id"], round(link["weight"], 6)) for link in links] == [(b, 0.1)]
    expanded = cli("search", "--agent", "a", "--embedding", EMBEDDING, "-k", "1", "--expand",
                   *at, "--json", env=env)  # fmt: skip
    hits = json.loads(expanded.stdout)["hits"]
    assert len(hits) == 2 and hits[1]["via"] == hits[0]["id"]
    assert "one of the arguments --useful --wrong is required" in one_line_error(
        cli("feedback", "vector", a, env=env)
    )
    assert await conn.fetchval("SELECT count(*) FROM memory_links") == 1


def test_bad_environment_and_flags_are_one_line_and_touch_nothing(tmp_path: Path, cli: Cli) -> None:
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"not a database")
    before = [(p.name, p.stat().st_uid, p.stat().st_mode) for p in [foreign, *foreign.iterdir()]]
    refused = cli("migrate", env={"ETHOS_DATABASE__DATA_DIR": str(foreign)}, cwd=tmp_path)
    assert "holds files but no PostgreSQL data" in one_line_error(refused)
    assert [(p.name, p.stat().st_uid, p.stat().st_mode) for p in [foreign, *foreign.iterdir()]] == (
        before
    )  # no initdb, no change of owner
    curve = cli("curve", env={"ETHOS_DEDUP__TABLES": "episode"}, cwd=tmp_path)
    assert "ETHOS_DEDUP__TABLES: a list or table value must be JSON" in one_line_error(curve)
    metrics = cli("daemon", "--metrics", "nohost", cwd=tmp_path)
    assert "--metrics takes HOST:PORT (got 'nohost')" in one_line_error(metrics)
