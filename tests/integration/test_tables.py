"""A memory table ethos does not ship, described by its TableSpec alone: it sweeps,
explains and takes LTP; a table that is not fit for ethos fails by name."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos import decay
from ethos.engine import Engine
from ethos.errors import ConfigError, InputError
from ethos.settings import DatabaseSettings, Settings
from ethos.tables import TableSpec
from tests.conftest import WORDS_IGNORED

if TYPE_CHECKING:
    from tests.conftest import Days


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Plain memories on the standard curve: their words do not tier them."""
    return Settings(database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED)


SKILLS = TableSpec(
    "procedural_skills", "skill", "skills", "episode_boost", emotion_column="emotional_tone"
)


@pytest.fixture
async def skills_table(conn: asyncpg.Connection) -> None:
    """Created here, the way a migration would: the memory columns, the decay-state
    and content (key, words) triggers, the schedule's hints and their trigger, and a
    check of new rows (its condition the trigger's argument)."""
    await conn.execute(
        """
        CREATE TABLE procedural_skills (LIKE episodic_traces INCLUDING ALL);
        CREATE TRIGGER procedural_skills_init_decay_state BEFORE INSERT ON procedural_skills
            FOR EACH ROW EXECUTE FUNCTION ethos_init_decay_state();
        CREATE TRIGGER procedural_skills_content_derived
            BEFORE INSERT OR UPDATE OF content, agent_id ON procedural_skills
            FOR EACH ROW EXECUTE FUNCTION ethos_content_derived();
        CREATE TABLE procedural_skills_due (LIKE episodic_traces_due INCLUDING ALL);
        CREATE TRIGGER procedural_skills_hint_new_rows AFTER INSERT ON procedural_skills
            REFERENCING NEW TABLE AS added FOR EACH STATEMENT
            EXECUTE FUNCTION ethos_hint_new_rows();
        CREATE TRIGGER procedural_skills_check_new_rows AFTER INSERT ON procedural_skills
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
            EXECUTE FUNCTION ethos_check_new_rows('created_at >= ''1900-01-01 00:00+00''');
        """
    )


@pytest.mark.usefixtures("skills_table")
async def test_a_fourth_table_sweeps_explains_and_takes_ltp(
    engine: Engine, conn: asyncpg.Connection, t0: datetime, days: Days
) -> None:
    p = engine.settings.decay_params
    kept = await engine.add(
        SKILLS, agent_id="a", content="tie a bowline", created_at=t0, salience=0.5
    )
    faded = await engine.add(
        SKILLS, agent_id="a", content="juggle", created_at=t0, emotional_tone=0.5
    )
    await engine.record_retrieval(SKILLS, [kept, kept], now=days(1))
    await engine.ltp.drain(5)
    assert engine.ltp.stats.applied == 2
    row = await conn.fetchrow("SELECT * FROM procedural_skills WHERE id = $1", kept)
    assert row["retrieval_count"] == 2
    # the first retrieval gives back what it lost since its creation (spaced_gain 1)
    assert row["strength"] == pytest.approx(0.5 * 1.1**2, rel=1e-9)

    report = await engine.sweep(now=days(25), tables=[SKILLS])
    assert report.tables == {"procedural_skills": report.counts[SKILLS]}
    assert (report.counts[SKILLS].scanned, report.counts[SKILLS].pruned) == (2, 1)
    assert report.summary().startswith("2 skills (1 pruned)")

    info = await engine.explain(SKILLS, kept, now=days(25))
    state = decay.MemoryState(
        strength=row["strength"],
        anchor_at=days(1),
        created_at=t0,
        reinforcement=1 + decay.MIN_GAIN,  # the first, then one at once
    )
    assert info["salience"] == pytest.approx(decay.salience(state, days(25), p), rel=1e-12)
    assert not info["pruned"]
    gone = await engine.explain(SKILLS, faded, now=days(25))
    assert (gone["pruned"], gone["prune_reason"], gone["emotional_boost"]) == (True, "decay", 1.1)


async def test_a_table_without_the_memory_columns_fails_by_name(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    await conn.execute("CREATE TABLE half_memories (id uuid PRIMARY KEY, agent_id text)")
    half = TableSpec("half_memories", "half", "halves", "episode_boost")
    with pytest.raises(
        InputError,
        match=r"half_memories lacks the columns anchor_at, auto_answer, auto_importance,"
        r" auto_particularity, client_key, content",
    ):
        await engine.sweep(tables=[half])
    missing = TableSpec("no_such_memories", "none", "nones", "episode_boost")
    with pytest.raises(InputError, match="table no_such_memories does not exist"):
        await engine.record_retrieval(missing, [])
    assert await conn.fetchval("SELECT count(*) FROM sweep_runs") == 0


@pytest.mark.usefixtures("skills_table")
async def test_a_fourth_tables_rows_are_checked_and_weighed(
    conn: asyncpg.Connection,
) -> None:
    with pytest.raises(
        asyncpg.CheckViolationError, match=r"procedural_skills.*(outside|_1900_to_2199)"
    ):
        await conn.execute(
            "INSERT INTO procedural_skills (agent_id, content, created_at)"
            " VALUES ('a', 'x', '1850-01-01')"
        )
    assert await conn.fetchval("SELECT count(*) FROM procedural_skills") == 0
    # and its memories are weighed like ethos's own: this one answers the one before
    await conn.execute(
        "INSERT INTO procedural_skills (agent_id, content) VALUES ('a', 'how do I tie it?'),"
        " ('a', 'a bowline, left over right')"
    )
    answers = await conn.fetch("SELECT auto_answer FROM procedural_skills ORDER BY id")
    assert [r["auto_answer"] for r in answers] == [None, 4.0]


@pytest.mark.usefixtures("skills_table")
async def test_a_table_whose_boost_is_not_a_setting_fails_before_buffering(
    engine: Engine, t0: datetime
) -> None:
    unboosted = TableSpec("procedural_skills", "skill", "skills", "skill_boost")
    memory = await engine.add(unboosted, agent_id="a", content="x", created_at=t0)
    with pytest.raises(ConfigError, match=r"procedural_skills: ltp.skill_boost is not a setting"):
        await engine.record_retrieval(unboosted, [memory])
    assert engine.ltp.backlog == 0
