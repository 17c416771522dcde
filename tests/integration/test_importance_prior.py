"""Automatic importance knows the language (word_prior, decision 0023): a new agent's
first words are told apart before it has any statistics of its own; an episode's
emotional tone counts; what the caller states is never shortened."""

from __future__ import annotations

import json

import asyncpg

from ethos.services.engine import Engine
from tests.conftest import Cli

FIRST_FACTS = ("I am vegetarian.", "I am allergic to peanuts.", "My daughter is called Mia.",
               "I work night shifts at the hospital.", "My sister lives in Porto.",
               "I can't swim.")  # fmt: skip
CHATTER = ("hi", "thanks!", "lol", "haha nice", "sounds good")
# A seasoned agent's facts: each word said many times over, so its own statistics find
# little new in the last one.
ROUTINE = [f"Sam had coffee with milk at the cafe on day {i}" for i in range(60)]
STATE = "SELECT policy, auto_importance FROM {table} WHERE agent_id = $1 AND id = $2"


async def state(conn: asyncpg.Connection, table: str, agent: str, memory: object) -> tuple:
    return tuple(await conn.fetchrow(STATE.format(table=table), agent, memory))


async def test_a_new_agents_first_facts_live_at_least_as_long_as_standard(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    for i, text in enumerate(FIRST_FACTS):
        fact = await engine.add("fact", agent_id=f"sam-{i}", content=text)
        policy, importance = await state(conn, "semantic_facts", f"sam-{i}", fact)
        assert policy in ("standard", "long_term") and importance >= 0.6, text


async def test_a_first_statement_outscores_chatter_as_a_first_episode(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """Each text a new agent's first episode: the least of the statements scores above
    the most of the chatter (before, "I am allergic to peanuts." scored as "haha nice":
    two words each, all new)."""
    scores = {}
    for i, text in enumerate(FIRST_FACTS + CHATTER):
        memory = await engine.add("episode", agent_id=f"new-{i}", content=text)
        scores[text] = (await state(conn, "episodic_traces", f"new-{i}", memory))[1]
    assert min(scores[t] for t in FIRST_FACTS) > max(scores[t] for t in CHATTER)
    assert scores["I am allergic to peanuts."] > scores["haha nice"]
    # the prior's words: stop words count a little, everyday words more, rare ones 1
    words = {t: await conn.fetchval("SELECT ethos_prior_words($1)", t) for t in ("lol", "Porto")}
    assert 0.5 < words["lol"] < 1 == words["Porto"]


async def test_the_emotional_tone_lifts_importance(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """The README's own example lands on working no more: the tone is a second reason
    to keep it, 1 - (1 - importance from words) x (1 - tone)."""
    moved = await engine.add("episode", agent_id="ada", content="met Ada", emotional_tone=0.8)
    plain = await engine.add("episode", agent_id="bo", content="met Ada")
    policy, importance = await state(conn, "episodic_traces", "ada", moved)
    plain_policy, plain_importance = await state(conn, "episodic_traces", "bo", plain)
    assert (policy, plain_policy) == ("long_term", "working")
    assert importance == 1 - (1 - plain_importance) * (1 - 0.8)


async def test_a_stated_fact_is_never_shortened(engine: Engine, conn: asyncpg.Connection) -> None:
    """A seasoned agent's routine fact measures little against its own memories: stated,
    it still lives as long as the default; said to be a turn (stated false, as mem0's
    infer does), it takes the full range; an episode of the same words too. Plain SQL
    states a fact by default."""
    for text in ROUTINE:
        await engine.add("fact", agent_id="sam", content=text)
        await engine.add("episode", agent_id="sam", content=text)
    again = "Sam had coffee at the cafe"
    stated = await engine.add("fact", agent_id="sam", content=again)
    turn = await engine.add("fact", agent_id="sam", content=again + " again", stated=False)
    episode = await engine.add("episode", agent_id="sam", content=again)
    assert (await state(conn, "semantic_facts", "sam", stated))[0] == "standard"
    assert (await state(conn, "semantic_facts", "sam", turn))[0] == "working"
    assert (await state(conn, "episodic_traces", "sam", episode))[0] == "working"
    by_sql = await conn.fetchval(
        "INSERT INTO semantic_facts (agent_id, content) VALUES ('sam', $1) RETURNING id",
        again + " too",
    )
    assert (await state(conn, "semantic_facts", "sam", by_sql))[0] == "standard"


async def test_the_callers_importance_or_policy_wins_over_the_floor(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    low = await engine.add("fact", agent_id="ann", content="I am vegetarian", importance=0.1)
    named = await engine.add("fact", agent_id="ann", content="I can't swim", policy="working")
    await engine.assign_policy("cy", "working")
    agents = await engine.add("fact", agent_id="cy", content="I am vegetarian")
    rows = await conn.fetch(
        "SELECT id, policy, auto_importance FROM semantic_facts WHERE id = ANY($1)",
        [low, named, agents],
    )
    assert {r["id"]: (r["policy"], r["auto_importance"]) for r in rows} == {
        low: ("working", None), named: ("working", None), agents: ("working", None)
    }  # fmt: skip


def test_the_command_states_a_fact(cli: Cli, database_url: str) -> None:
    """`ethos add fact` for a new agent: at least standard; the same words as an episode
    are a turn, on working."""
    env = {"ETHOS_DATABASE__URL": database_url}
    for kind, expected in (("fact", "standard"), ("episode", "working")):
        added = cli("add", kind, "--agent", f"sam-{kind}", "--content", "I am vegetarian",
                    "--json", env=env)  # fmt: skip
        assert added.returncode == 0, added.stderr
        memory = json.loads(added.stdout)["id"]
        shown = cli("explain", kind, memory, "--json", env=env)
        assert json.loads(shown.stdout)["policy"] == expected, shown.stdout
