"""Monitoring views, stats, recovery and the tuning curve, on seeded data with known
answers."""

from __future__ import annotations

import itertools
import math
import string
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain import decay
from ethos.domain.errors import InputError, NotFoundError
from ethos.domain.inputs import MAX_CONTENT_BYTES
from ethos.domain.lifetimes import curve_table, days_until_pruned, plot, policy_curves
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import Settings
from tests.conftest import ConfiguredEngine

if TYPE_CHECKING:
    from tests.conftest import ConfiguredEngine, Days, Psql

# The earlier engine's runbook monitoring queries, copied verbatim.
RUNBOOK = Path(__file__).parent / "runbook"
RUNBOOK_PRUNED_COUNTS = (RUNBOOK / "pruned_counts.sql").read_text()
RUNBOOK_AGE_BUCKETS = (RUNBOOK / "age_buckets.sql").read_text()


async def seed(conn: asyncpg.Connection) -> None:
    """Episodes of two agents at known ages and saliences; one pruned, one pinned. All on
    `standard`, named (automatic importance would tier these one-word texts `working`)."""
    await conn.execute(
        """
        INSERT INTO episodic_traces (agent_id, content, salience, created_at, retrieval_count,
                                     pruned, pruned_at, prune_reason, pinned, policy)
        VALUES ('a', 'fresh', 0.9, now() - interval '2 hours', 3, false, NULL, NULL, false,
                'standard'),
               ('a', 'week', 0.5, now() - interval '3 days', 1, false, NULL, NULL, false,
                'standard'),
               ('a', 'month', 0.07, now() - interval '10 days', 0, false, NULL, NULL, false,
                'standard'),
               ('b', 'old', 0.3, now() - interval '60 days', 7, false, NULL, NULL, true,
                'standard'),
               ('b', 'gone', 0.01, now() - interval '60 days', 0, true, now(), 'decay', false,
                'standard')
        """
    )
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content, confidence, retrieval_count, policy)"
        " VALUES ('a', 'shaky fact', 0.08, 0, 'standard')"
    )


async def test_counts_views(engine: Engine, conn: asyncpg.Connection) -> None:
    await seed(conn)
    counts = {r["table_name"]: dict(r) for r in await conn.fetch("SELECT * FROM ethos_counts")}
    assert (counts["episodic_traces"]["live"], counts["episodic_traces"]["pruned"]) == (4, 1)
    assert counts["episodic_traces"]["pinned"] == 1
    assert counts["semantic_facts"]["live"] == 1
    per_agent = {
        (r["table_name"], r["agent_id"]): (r["live"], r["pruned"])
        for r in await conn.fetch("SELECT * FROM ethos_agent_counts")
    }
    assert per_agent[("episodic_traces", "a")] == (3, 0)
    assert per_agent[("episodic_traces", "b")] == (1, 1)


async def test_salience_by_age_and_the_runbook_queries_verbatim(
    database_url: str, conn: asyncpg.Connection, psql: Psql
) -> None:
    await seed(conn)
    view = {
        r["age_bucket"]: (r["avg_salience"], r["count"])
        for r in await conn.fetch(
            "SELECT * FROM ethos_salience_by_age WHERE table_name = 'episodic_traces'"
        )
    }
    assert view == {
        "<1d": (pytest.approx(0.9), 1),
        "1-7d": (pytest.approx(0.5), 1),
        "7-30d": (pytest.approx(0.07), 1),
        ">30d": (pytest.approx(0.3), 1),
    }
    runbook = {
        row[0]: (float(row[1]), int(row[2])) for row in psql(database_url, RUNBOOK_AGE_BUCKETS)
    }
    assert runbook == {bucket: (pytest.approx(v[0]), v[1]) for bucket, v in view.items()}
    pruned = dict(psql(database_url, RUNBOOK_PRUNED_COUNTS))
    assert pruned == {"memory_vectors": "0", "episodic_traces": "1", "semantic_facts": "0"}


async def test_sweep_history_most_retrieved_at_risk_and_ltp(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    await seed(conn)
    assert await conn.fetchval("SELECT count(*) FROM ethos_at_risk") == 2  # default 0.05 + 0.05
    report = await engine.sweep()
    history = await conn.fetchrow("SELECT * FROM ethos_sweep_history")
    assert history["id"] == report.run_id and history["scanned"] == 5
    assert history["rows_per_second"] == pytest.approx(
        history["scanned"] / (history["duration_ms"] / 1000)
    )
    # (ordered again here: Citus merges the shards' rows of a view as they come)
    most = "SELECT * FROM ethos_most_retrieved ORDER BY retrieval_count DESC"
    top = [r["content"] for r in await conn.fetch(most)]
    assert top == ["old", "fresh", "week"]
    # the sweep recorded the threshold and margin the views compare against
    at_risk = {r["content"]: r["value"] for r in await conn.fetch("SELECT * FROM ethos_at_risk")}
    assert set(at_risk) == {"shaky fact"}  # 'month' was pruned by the sweep
    await conn.execute("UPDATE ethos_settings SET at_risk_margin = 0")
    assert await conn.fetchval("SELECT count(*) FROM ethos_at_risk") == 0
    await conn.execute(
        "INSERT INTO daemons (id, host, pid, role, ltp_backlog, ltp_dropped)"
        " VALUES ('d1', 'h', 1, 'leader', 12, 3)"
    )
    assert await conn.fetchrow("SELECT ltp_backlog, ltp_dropped FROM ethos_ltp") == (12, 3)
    stats = await engine.stats("a")
    assert {r["table_name"]: r["live"] for r in stats.counts} == {
        "episodic_traces": 2,  # 'month' was pruned
        "semantic_facts": 1,
    }


async def test_recovery_round_trip(engine: Engine, conn: asyncpg.Connection, t0: datetime) -> None:
    memory = await engine.add(
        "episode", agent_id="a", content="the lake", created_at=t0, emotional_tone=0.3,
        metadata={"where": "Annecy"},
    )  # fmt: skip
    await engine.record_retrieval("episode", [memory, memory], now=t0 + timedelta(days=1))
    await engine.ltp.drain(5)
    before = dict(await conn.fetchrow("SELECT * FROM episodic_traces WHERE id = $1", memory))
    now = t0 + timedelta(days=90)
    await engine.sweep(now=now)
    assert await conn.fetchval("SELECT pruned FROM episodic_traces WHERE id = $1", memory)

    dry = await engine.recover("episode", Selector(reason="decay"), now=now, dry_run=True)
    assert [r["id"] for r in dry.rows] == [str(memory)] and dry.recovery_id is None
    assert await conn.fetchval("SELECT pruned FROM episodic_traces WHERE id = $1", memory)
    assert await conn.fetchval("SELECT count(*) FROM recoveries") == 0

    report = await engine.recover("episode", Selector(ids=(memory,)), now=now, command="test")
    assert len(report.rows) == 1
    after = dict(await conn.fetchrow("SELECT * FROM episodic_traces WHERE id = $1", memory))
    lifecycle = {"pruned", "pruned_at", "prune_reason", "strength", "anchor_at", "salience",
                 "due_at", "prune_at"}  # fmt: skip
    assert {k: v for k, v in after.items() if k not in lifecycle} == {
        k: v for k, v in before.items() if k not in lifecycle
    }
    assert (after["pruned"], after["strength"], after["anchor_at"]) == (False, 0.1, now)
    await engine.sweep(now=now)
    assert not await conn.fetchval("SELECT pruned FROM episodic_traces WHERE id = $1", memory)
    audit = await conn.fetchrow("SELECT * FROM recoveries")
    assert (audit["recovered"], audit["command"], audit["table_name"]) == (
        1,
        "test",
        "episodic_traces",
    )


async def test_recovering_live_or_unknown_ids_changes_nothing(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    live = await engine.add("episode", agent_id="a", content="x")
    gone = await engine.add("episode", agent_id="a", content="y", created_at=t0)
    await engine.sweep(now=t0 + timedelta(days=60))
    with pytest.raises(InputError, match="not pruned"):
        await engine.recover("episode", Selector(ids=(live, gone)))
    with pytest.raises(NotFoundError, match="no episodic_traces row"):
        await engine.recover("episode", Selector(ids=(gone, uuid.UUID(int=5))))
    # another agent's memory is not one of the agent named: said, not skipped
    with pytest.raises(NotFoundError, match=f"no episodic_traces row of agent b with id {gone}"):
        await engine.recover("episode", Selector(ids=(gone,), agent="b"))
    with pytest.raises(InputError, match="say which rows"):
        await engine.recover("episode", Selector())
    assert await conn.fetchval("SELECT pruned FROM episodic_traces WHERE id = $1", gone)
    assert await conn.fetchval("SELECT count(*) FROM recoveries") == 0


async def test_large_recoveries_run_in_batches(
    database_url: str, conn: asyncpg.Connection, t0: datetime
) -> None:
    from ethos.settings import DatabaseSettings, DecaySettings, Settings

    await conn.execute(
        """INSERT INTO memory_vectors (agent_id, content, embedding, expires_at, pruned,
                                       pruned_at, prune_reason)
           SELECT 'a', 'v' || g, array_fill(0.1::real, ARRAY[384])::vector, $1, true, $1,
                  'expired'
           FROM generate_series(1, 23) g""",
        t0,
    )
    settings = Settings(
        database=DatabaseSettings(url=database_url), decay=DecaySettings(batch_size=5)
    )
    async with ConfiguredEngine(settings) as engine:
        now = t0 + timedelta(days=1)
        report = await engine.recover("vector", Selector(agent="a"), now=now)
        assert len(report.rows) == 23
        # expired vectors lose their expiry: otherwise the next sweep prunes them again
        assert (
            await conn.fetchval("SELECT count(*) FROM memory_vectors WHERE expires_at IS NULL")
            == 23
        )
        swept = await engine.sweep(now=now)
        assert swept.tables["memory_vectors"].pruned == 0


def test_curve_matches_the_decay_math(tmp_path: Path) -> None:
    p = decay.DecayParams()
    table = curve_table(p)
    assert [row["retrievals"] for row in table] == list(range(11))
    assert table[0]["days_until_pruned_emotion_0"] == pytest.approx(7 * math.log(20), abs=1 / 86400)
    assert table[3]["tau_days"] == pytest.approx(7 * 1.5**3)
    for row in table:
        assert row["days_until_pruned_emotion_1"] > row["days_until_pruned_emotion_0"]
        assert row["half_life_days"] == pytest.approx(row["tau_days"] * math.log(2))
    assert days_until_pruned(5, 0, p) > days_until_pruned(4, 0, p)
    curves = {c["name"]: c["curve"] for c in policy_curves(Settings().policy_table.values())}
    # working is promoted to standard at its 3rd retrieval: no row past that
    assert [row["retrievals"] for row in curves["working"]] == [0, 1, 2]
    assert len(curves["standard"]) == 11
    path = tmp_path / "curve.png"
    plot(Settings().policy_table.values(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_content_at_the_size_limit_is_stored_and_indexed(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """The content limit keeps the worst case, every word distinct and short (each
    lexeme costs its entry and position beside its letters), under PostgreSQL's tsvector
    limit of 1 MiB."""
    words = ("".join(w) for w in itertools.product(string.ascii_lowercase, repeat=4))
    content = " ".join(itertools.islice(words, MAX_CONTENT_BYTES // 5))
    memory = await engine.add("fact", agent_id="a", content=content)
    lexemes = await conn.fetchval(
        "SELECT length(content_tsv) FROM semantic_facts WHERE id = $1", memory
    )
    assert lexemes > 50_000


async def test_one_agents_stats_show_no_other_agents_sweeps_nor_daemons(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    await conn.execute(
        "INSERT INTO daemons (id, host, pid, role) VALUES ('secret-host:1:x', 'secret-host', 1,"
        " 'leader')"
    )
    await engine.add("fact", agent_id="ada", content="tea")
    await engine.sweep(now=days(1))
    await engine.sweep(now=days(1), agent="bo")
    everyone = await engine.stats()
    assert len(everyone.recent_sweeps) == 2 and everyone.ltp
    ada = await engine.stats("ada")
    assert ada.recent_sweeps == [] and ada.ltp == []
    assert "secret-host" not in str(ada)
