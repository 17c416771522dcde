"""Automatic importance (migration 0023): what a memory says decides how long it lives
when the caller does not; and add-with-recall, the conversation reinforcing what it
returns to."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timedelta

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import ImportanceSettings, Settings
from tests.acceptance.test_cli import one_line_error
from tests.conftest import Cli, ConfiguredEngine

GREETING = "Hi! How are you doing today?"
NEWS = "My sister Maria moved to Lisbon on 3 May"
HISTORY = ["We talked about the weather today", "How was your day? Good, thanks",
           "I am doing fine today, thanks for asking"]  # fmt: skip
# Eight words, all of them in HISTORY: they count for less than half their number.
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
    # (the news first: after the greeting's question it would be an answer, below)
    news = await engine.add("episode", agent_id="ada", content=NEWS, created_at=t0)
    greeting = await engine.add("episode", agent_id="ada", content=GREETING, created_at=t0)
    # (an agent of three memories is young: the language's prior weighs most of the
    # words, and the news is a plain sentence of it, so `standard`; decision 0023)
    assert await auto(conn, greeting) < 0.5 < 0.6 < await auto(conn, news)
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


async def test_explain_names_the_words_that_made_it(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    for text in HISTORY:
        await engine.add("episode", agent_id="ada", content=text)
    news = await engine.add("episode", agent_id="ada", content=NEWS)
    account = await engine.explain("episode", news)
    assert account.importance > 0.6
    assert account.importance_from.startswith("automatic: a number '3', ")
    # the words as the memory writes them, not their stems ('lisbon', 'move')
    assert {"'Lisbon'", "'Maria'"} <= set(account.importance_from.split(", "))
    assert "'moved'" in account.importance_from and "'move'" not in account.importance_from
    # and the words that make 0.5 for this agent: 4.25 for memories of 10 words, here of
    # fewer than 5 (counted as 5)
    average = await conn.fetchval(
        "SELECT length::float8 / docs FROM agent_text_stats WHERE agent_id = 'ada'"
    )
    assert account.importance_from.endswith(
        f"; 2.1 such words make 0.5 now (the agent's memories hold {average:.1f} words on average)"
    )


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
    # (agents of three memories or none: the language's prior weighs most of the words,
    # decision 0023) the news lives as long as the default, the greeting goes, for both
    assert [expected[k][0] for k in (0, 1, 4, 5)] == ["standard", "working"] * 2
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
    async with ConfiguredEngine(off) as engine:
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


# A conversation: the turns after a question answer it.
CONVERSATION = ["Hey Ada, long time! Where did your sister end up moving?",
                "Maria moved to Lisbon in May, near the old harbour",
                "Lovely city. Do you visit her often?",
                "Twice a year, mostly for the sardine festival in June",
                "Sounds fun, enjoy the summer then",
                "Thanks, talk soon"]  # fmt: skip


async def test_an_answer_counts_its_words_four_times(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Two agents with the same words before: one was asked a question, the other told
    the same thing; the same reply weighs four times the words for the one asked."""
    for agent, last in (("asked", "Where did Maria move?"), ("told", "Where did Maria move.")):
        for text in HISTORY:
            await engine.add("episode", agent_id=agent, content=text)
        await engine.add("episode", agent_id=agent, content=last)
        await engine.add("episode", agent_id="bo", content="Did it rain?")  # another agent's
        await engine.add("episode", agent_id=agent, content="To Lisbon")
    reply = """SELECT id, policy, auto_importance, auto_answer FROM episodic_traces
               WHERE agent_id = $1 AND content = 'To Lisbon'"""
    asked, told = [await conn.fetchrow(reply, agent) for agent in ("asked", "told")]
    assert (asked["auto_answer"], told["auto_answer"]) == (4.0, None)
    # importance = 1 - 2^(-words / half): 4 times the words, whatever the half
    ratio = math.log2(1 - asked["auto_importance"]) / math.log2(1 - told["auto_importance"])
    assert ratio == pytest.approx(4, rel=1e-12)
    # (two words to a young agent, the language's mostly: the answer is four times
    # nearer `standard`, decision 0023)
    assert told["policy"] == "working" and asked["auto_importance"] > 0.5 > told["auto_importance"]
    account = await engine.explain("episode", asked["id"])
    assert "; it answers a question (its words count 4x); " in account.importance_from


async def test_a_conversation_inserted_at_once_is_weighed_as_adds_one_at_a_time(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    for text in CONVERSATION:
        await engine.add("episode", agent_id="alone", content=text)
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content) SELECT 'insert', c FROM unnest($1::text[])"
        " WITH ORDINALITY AS t (c, i) ORDER BY i",
        CONVERSATION,
    )
    await conn.copy_records_to_table(
        "episodic_traces",
        records=[("copy", c) for c in CONVERSATION],
        columns=["agent_id", "content"],
    )
    answers = "SELECT auto_answer FROM episodic_traces WHERE agent_id = $1 ORDER BY id"
    for agent in ("alone", "insert", "copy"):  # (their words: against the statistics before)
        got = [r["auto_answer"] for r in await conn.fetch(answers, agent)]
        assert got == [None, 4.0, None, 4.0, None, None], agent


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Where did Maria move?", True),
        ("What?! Since when", True),
        ("She moved (to Lisbon?) in May", True),
        ('He said "yes?" and left', True),
        ("Have you seen https://example.com/lisbon?", True),
        ("Wohin ist sie gezogen？", True),
        ("saved https://youtube.com/watch?v=dQw4w9WgXcQ for later", False),
        ("https://example.com/search?q=lisbon&lang=pt", False),
        ("https://example.com/?utm_source=mail", False),
        ("Maria moved to Lisbon.", False),
    ],
)
async def test_a_question_mark_asks_where_it_ends_a_sentence(
    conn: asyncpg.Connection, text: str, asks: bool
) -> None:
    """Not inside a web address: a kept link would make whatever follows an answer."""
    assert await conn.fetchval("SELECT ethos_asks($1)", text) is asks


async def test_one_turns_answers_off(settings: Settings, conn: asyncpg.Connection) -> None:
    off = settings.model_copy(update={"importance": ImportanceSettings(auto_answer=1)})
    async with ConfiguredEngine(off) as engine:
        for text in CONVERSATION[:2]:
            await engine.add("episode", agent_id="ada", content=text)
    assert await conn.fetchval("SELECT count(auto_answer) FROM episodic_traces") == 0
    assert await conn.fetchval("SELECT count(auto_importance) FROM episodic_traces") == 2


async def test_ids_hold_the_moment_they_were_made_to_the_microsecond(
    conn: asyncpg.Connection,
) -> None:
    """So that the rows of one statement, or adds within a millisecond, are in the order
    written (the previous memory above)."""
    before = await conn.fetchval("SELECT clock_timestamp()")
    made = await conn.fetchval("SELECT array_agg(ethos_uuid_v7()) FROM generate_series(1, 1000)")
    after = await conn.fetchval("SELECT clock_timestamp()")
    assert {(i.version, i.variant) for i in made} == {(7, uuid.RFC_4122)}
    moments = [int.from_bytes(i.bytes[:6]) + (int.from_bytes(i.bytes[6:8]) & 0xFFF) / 4096
               for i in made]  # fmt: skip
    assert before.timestamp() * 1000 - 0.001 <= moments[0] <= moments[-1]
    assert moments[-1] <= after.timestamp() * 1000
    assert moments == sorted(moments)  # (two of one microsecond: in any order)
    assert len(set(moments)) > 100  # not one millisecond's value for all


async def test_the_previous_memory_is_one_probe_whatever_the_table_holds(
    database_url: str, conn: asyncpg.Connection
) -> None:
    """The trigger's plans are made once a session, maybe on an empty table: one could
    sort the agent's rows for each new one (a bulk load quadratic), or walk the (id)
    index back through every other agent's rows to the agent's last (3,001 rows read
    here). The probe reads one row, and the hint trigger the new row."""
    read = """SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
              WHERE relname = 'episodic_traces'"""
    async with conn.transaction():  # into the empty table: planned for one
        await conn.execute("""INSERT INTO episodic_traces (agent_id, content)
                              SELECT 'solo', 'note ' || g || '?' FROM generate_series(1, 2000) g""")
        assert await conn.fetchval(read) <= 2 * 2000
    other = await asyncpg.connect(database_url)  # (its reads are not counted below)
    try:
        await other.execute("INSERT INTO episodic_traces (agent_id, content) VALUES ('rare', '?')")
        await other.execute("""INSERT INTO episodic_traces (agent_id, content, policy)
                               SELECT 'busy', 'note ' || g, 'standard'
                               FROM generate_series(1, 3000) AS g""")
        await other.execute("ANALYZE episodic_traces")
    finally:
        await other.close()
    fresh = await asyncpg.connect(database_url)  # (the load's reads are pending in conn)
    try:
        async with fresh.transaction():
            answer = await fresh.fetchval(
                "INSERT INTO episodic_traces (agent_id, content) VALUES ('rare', 'because')"
                " RETURNING auto_answer"
            )
            assert answer == 4.0 and await fresh.fetchval(read) <= 2
    finally:
        await fresh.close()
