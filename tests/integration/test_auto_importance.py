"""Automatic importance (migration 0023): what a memory says decides how long it lives
when the caller does not; and add-with-recall, the conversation reinforcing what it
returns to."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import asyncpg

from ethos.engine import Engine
from ethos.settings import ImportanceSettings, Settings
from tests.acceptance.test_cli import one_line_error
from tests.conftest import Cli

GREETING = "Hi! How are you doing today?"
NEWS = "My sister Maria moved to Lisbon on 3 May"
HISTORY = ["We talked about the weather today", "How was your day? Good, thanks",
           "I am doing fine today, thanks for asking"]  # fmt: skip
# Eight words, all of them in HISTORY: `standard` if they were new (0.75), `working` as
# they are.
CHATTY = "Talked about the weather today, good day, fine, thanks for asking"


async def auto(conn: asyncpg.Connection, memory: object) -> float:
    value: float = await conn.fetchval(
        "SELECT auto_importance FROM episodic_traces WHERE id = $1", memory
    )
    return value


async def test_a_greeting_counts_less_than_news(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    for i, text in enumerate(HISTORY):
        await engine.add("episode", agent_id="ada", content=text, created_at=t0 + timedelta(i))
    greeting = await engine.add("episode", agent_id="ada", content=GREETING, created_at=t0)
    news = await engine.add("episode", agent_id="ada", content=NEWS, created_at=t0)
    assert await auto(conn, greeting) < 0.3 < 0.6 < await auto(conn, news)
    policies = await conn.fetch(
        "SELECT id, policy FROM episodic_traces WHERE id = ANY($1)", [greeting, news]
    )
    assert {r["id"]: r["policy"] for r in policies} == {greeting: "working", news: "standard"}


async def test_the_callers_importance_or_policy_wins(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    given = await engine.add("episode", agent_id="ada", content=NEWS, importance=0.1)
    named = await engine.add("episode", agent_id="bo", content=GREETING, policy="long_term")
    await engine.assign_policy("cy", "long_term")
    agents = await engine.add("episode", agent_id="cy", content=GREETING)
    rows = await conn.fetch(
        "SELECT id, policy, importance, auto_importance FROM episodic_traces WHERE id = ANY($1)",
        [given, named, agents],
    )
    by_id = {r["id"]: (r["policy"], r["importance"], r["auto_importance"]) for r in rows}
    assert by_id == {
        given: ("working", 0.1, None),
        named: ("long_term", None, None),
        agents: ("long_term", None, None),
    }


async def test_explain_names_the_words_that_made_it(engine: Engine) -> None:
    for text in HISTORY:
        await engine.add("episode", agent_id="ada", content=text)
    news = await engine.add("episode", agent_id="ada", content=NEWS)
    account = await engine.explain("episode", news)
    assert account["importance"] > 0.6
    assert account["importance_from"].startswith("automatic: a number '3', ")
    assert {"'lisbon'", "'maria'"} <= set(account["importance_from"].split(", "))


async def test_plain_sql_gets_the_same_importance_as_the_api(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    for agent in ("api", "sql"):
        for text in HISTORY:
            await engine.add("episode", agent_id=agent, content=text)
    through_api = await engine.add("episode", agent_id="api", content=NEWS)
    in_sql = await conn.fetchval(
        "INSERT INTO episodic_traces (agent_id, content) VALUES ('sql', $1) RETURNING id", NEWS
    )
    assert await auto(conn, in_sql) == await auto(conn, through_api) > 0


async def test_a_statements_rows_are_weighed_as_single_adds_are(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """A statement's rows (an INSERT's, a COPY's) each get what the same memory gets
    alone, against the statistics before the statement (a counted agent, an agent counted
    only by this statement, a named policy, a given importance)."""
    rows = [("counted", NEWS, None, None), ("counted", GREETING, None, None),
            ("counted", NEWS, "long_term", None), ("counted", NEWS, None, 0.1),
            ("new", NEWS, None, None), ("new", GREETING, None, None),
            ("counted", CHATTY, None, None)]  # fmt: skip
    alone = []
    for k, (agent, text, policy, importance) in enumerate(rows):
        if agent == "counted":
            for earlier in HISTORY:
                await engine.add("episode", agent_id=f"alone-{k}", content=earlier)
        memory = await engine.add("episode", agent_id=f"alone-{k}", content=text,
                                  policy=policy, importance=importance)  # fmt: skip
        alone.append(memory)
    state = "SELECT policy, importance, auto_importance FROM episodic_traces WHERE agent_id = $1"
    expected = [tuple(await conn.fetchrow(state + " AND id = $2", f"alone-{k}", memory))
                for k, memory in enumerate(alone)]  # fmt: skip
    for way in ("insert", "copy"):
        for text in HISTORY:
            await engine.add("episode", agent_id=way, content=text)
        # (a client key tells the rows apart; it weighs nothing)
        records = [(way if agent == "counted" else f"{way}-new", text, policy, importance, str(k))
                   for k, (agent, text, policy, importance) in enumerate(rows)]  # fmt: skip
        columns = ["agent_id", "content", "policy", "importance", "client_key"]
        if way == "insert":
            await conn.execute(
                f"""INSERT INTO episodic_traces ({", ".join(columns)}) SELECT * FROM
                    unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[])""",
                *map(list, zip(*records, strict=True)),
            )
        else:
            await conn.copy_records_to_table("episodic_traces", records=records, columns=columns)
        got = [tuple(await conn.fetchrow(state + " AND client_key = $2", agent, key))
               for agent, *_, key in records]  # fmt: skip
        assert got == expected, way
    # the greeting of a counted agent weighs less than of one whose words are all new;
    # the chatter's words, all the agent's already, take it from standard to working
    assert expected[0][0] == "standard" and expected[1][0] == "working"
    assert expected[5][2] > expected[1][2] and expected[6][0] == "working"
    # a row written with an automatic importance of its own (a copy, a restore) keeps it
    kept = await conn.fetchrow(
        """INSERT INTO episodic_traces (agent_id, content, policy, auto_importance)
           VALUES ('insert', $1, 'long_term', 0.75) RETURNING id""",
        CHATTY,
    )
    assert tuple(await conn.fetchrow(state + " AND id = $2", "insert", kept["id"])) == (
        "long_term",
        None,
        0.75,
    )


async def test_on_by_default_and_off_it_leaves_the_default_policy(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    assert settings.importance.auto  # the engine fixture of the tests above: the defaults
    off = settings.model_copy(update={"importance": ImportanceSettings(auto=False)})
    async with Engine(off) as engine:
        news = await engine.add("episode", agent_id="ada", content=NEWS)
    row = await conn.fetchrow(
        "SELECT policy, auto_importance FROM episodic_traces WHERE id = $1", news
    )
    assert (row["policy"], row["auto_importance"]) == ("standard", None)


async def test_add_with_recall_reinforces_what_it_recalls_exactly_once(
    engine: Engine, conn: asyncpg.Connection, t0: datetime
) -> None:
    tea = await engine.add("episode", agent_id="ada", content="Ada drinks green tea", created_at=t0)
    kite = await engine.add(
        "episode", agent_id="ada", content="Ada flies a red kite", created_at=t0
    )
    later = t0 + timedelta(hours=1)  # both still alive on the working policy (8 h)
    added = await engine.add_detailed(
        "episode", agent_id="ada", content="Is the green tea hot?", created_at=later, recall=1
    )
    assert [h.id for h in added.recalled] == [tea]
    await engine.ltp.drain(5)
    counts = await conn.fetch(
        "SELECT id, retrieval_count, last_retrieved_at FROM episodic_traces WHERE id = ANY($1)",
        [tea, kite, added.id],
    )
    by_id = {r["id"]: (r["retrieval_count"], r["last_retrieved_at"]) for r in counts}
    assert by_id == {tea: (1, later), kite: (0, None), added.id: (0, None)}


def test_the_command_adds_with_recall(cli: Cli, database_url: str) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    first = cli("add", "episode", "--agent", "ada", "--content", "Ada drinks green tea",
                "--json", env=env)  # fmt: skip
    tea = json.loads(first.stdout)["id"]
    again = cli("add", "episode", "--agent", "ada", "--content", "green tea again?",
                "--recall", "3", "--json", env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["recalled"] == [{"table": "episodic_traces", "id": tea}]
    bad = cli("add", "episode", "--agent", "ada", "--content", "x", "--recall", "-1", env=env)
    assert "recall must be a whole number from 0 to 100, not -1" in one_line_error(bad)
