"""A hostile tenant with psql: an agent role's own connection reaches only its own
agent's memories, whatever SQL it writes (issue 38, migration 0038). Each test is one
way through that a review found, tried again."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from ethos.domain.errors import DatabaseError
from ethos.services.engine import Engine
from ethos.settings import (
    DatabaseSettings,
    LimitsSettings,
    LtpSettings,
    Settings,
    with_statement_timeout,
)
from tests.conftest import template_copy
from tests.integration.test_roles import (
    AGENT,
    AGENT_B,
    APP,
    House,
    Refused,
    as_sql,
    house,
    owner_adds,
)
from tests.vectors import unit

__all__ = ["house"]  # the module's database and roles, shared with test_roles


def owner(house: House, **ltp: object) -> Engine:
    return Engine(
        Settings(database=DatabaseSettings(url=house.owner_url), ltp=LtpSettings(**ltp))  # type: ignore[arg-type]
    )


async def fact_of(house: House, agent: str) -> uuid.UUID:
    async with owner(house) as engine:
        return await engine.add("fact", agent_id=agent, content=f"fact of {agent} {uuid.uuid4()}")


# --- ethos roles converges ------------------------------------------------------------


@pytest.fixture
async def bare(admin_uri: str, template_uri: str) -> AsyncIterator[tuple[str, str]]:
    """A database of its own, for `ethos roles` runs that change who may do what; its
    owner's URL and the prefix of the roles it makes."""
    name = f"converge_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        async with template_copy(admin_uri, name) as url:
            yield url, name
    finally:
        admin = await asyncpg.connect(admin_uri)
        for role in ("agent_a", "agent_b", "app_agents", "eraser", "app"):
            await admin.execute(f"DROP ROLE IF EXISTS {name}_{role}")
        await admin.close()


async def reads_as(url: str, role: str, table: str = "episodic_traces") -> str:
    """What role's own connection gets from reading and writing `table`."""
    conn = await asyncpg.connect(url.replace("postgresql://postgres", f"postgresql://{role}", 1))
    try:
        seen = await conn.fetchval(f"SELECT count(*) FROM {table}")
        await conn.execute(f"UPDATE {table} SET pinned = true")
        return f"read {seen}"
    except asyncpg.InsufficientPrivilegeError:
        return "refused"
    finally:
        await conn.close()


async def test_roles_converge_from_any_state(bare: tuple[str, str]) -> None:
    """Re-run with the same agent roles (refused with a duplicate key before), then
    without one of them, then with row-level security off: a role no longer named keeps
    nothing, where it kept its group's rights on every memory with RLS off."""
    url, p = bare
    await owner_adds(House(url, {}), "a")
    await owner_adds(House(url, {}), "b")
    both = [(f"{p}_agent_a", "a"), (f"{p}_agent_b", "b")]
    async with Engine(Settings(database=DatabaseSettings(url=url))) as engine:
        await engine.make_roles(f"{p}_app", f"{p}_eraser", both)
        await engine.make_roles(f"{p}_app", f"{p}_eraser", both)  # the runbook's re-run
        assert await reads_as(url, f"{p}_agent_b") == "read 1"
        await engine.make_roles(f"{p}_app", f"{p}_eraser", both[:1])
        assert await reads_as(url, f"{p}_agent_b") == "refused"
        assert await reads_as(url, f"{p}_agent_a") == "read 1"
        await engine.make_roles(f"{p}_app", f"{p}_eraser", [])  # row-level security off
        for role in (f"{p}_agent_a", f"{p}_agent_b"):
            assert await reads_as(url, role) == "refused"
            assert await reads_as(url, role, "retrieval_queue") == "refused"
        assert await reads_as(url, f"{p}_app") == "read 2"
    conn = await asyncpg.connect(url)
    try:
        members = await conn.fetchval(
            "SELECT count(*) FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid"
            " WHERE g.rolname = $1",
            f"{p}_app_agents",
        )
    finally:
        await conn.close()
    assert members == 0


# --- the durable queue ----------------------------------------------------------------


async def test_an_agent_role_queues_events_only_of_its_own_memories_at_moments_come(
    house: House,
) -> None:
    """Five plain INSERTs of `wrong` for another agent's fact pruned it; a retrieval
    dated 2199 left a fact's strength at 4.9e-227. Now the queue's row policy asks what
    ethos_record_retrieval asks."""
    mine, theirs = await fact_of(house, "a"), await fact_of(house, "b")
    insert = (
        "INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at, kind)"
        " VALUES ($1, $2, $3, $4, $5)"
    )
    now = datetime.now(UTC)
    for agent, memory, at in (
        ("b", theirs, now), ("a", theirs, now), ("b", mine, now),
        ("a", mine, datetime(2199, 1, 1, tzinfo=UTC)),
    ):  # fmt: skip
        with pytest.raises(Refused, match="row-level security"):
            await as_sql(house, AGENT, insert, agent, "semantic_facts", memory, at, "wrong")
    queued = "SELECT ethos_record_retrieval('fact', ARRAY[$1, $2]::uuid[])"
    assert await as_sql(house, AGENT, queued, mine, theirs) == 1
    await as_sql(house, AGENT, insert, "a", "semantic_facts", mine, now, "useful")  # its own
    assert await as_sql(house, AGENT, "SELECT ethos_memory_is_visible('semantic_facts', $1, 'b')",
                        theirs) is False  # fmt: skip
    await drain(house)
    states = (
        "SELECT retrieval_count, useful_count, wrong_count, pruned FROM semantic_facts"
        " WHERE id = $1"
    )
    assert tuple(await one_row(house, states, theirs)) == (0, 0, 0, False)
    assert tuple(await one_row(house, states, mine)) == (2, 1, 0, False)


async def test_an_agent_role_queues_no_group(house: House) -> None:
    """The memories of a group learn links pair by pair: 50,000 events of one group,
    queued by an agent role, held every tenant's drain on 1.25e9 pairs. An agent role
    writes an event's columns only (migration 0055)."""
    mine = await fact_of(house, "a")
    grouped = (
        "INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at, kind, grp)"
        " VALUES ('a', 'semantic_facts', $1, now(), 'useful', $2)"
    )
    with pytest.raises(Refused, match="permission denied for table retrieval_queue"):
        await as_sql(house, AGENT, grouped, mine, uuid.uuid4())


async def test_a_queued_group_larger_than_any_call_teaches_no_links(house: House) -> None:
    """A group no call of ethos makes (more members than limits.k and limits.ids): its
    events are applied, its pairs learn nothing; a group a call could make learns."""
    facts = [await fact_of(house, "a") for _ in range(5)]
    # a set of events as ethos writes one: read from the memories, each id given (on a
    # cluster a random id would make it a COPY through the coordinator, which row
    # security refuses)
    queued = (
        "INSERT INTO retrieval_queue (agent_id, id, table_name, memory_id, at, kind, grp)"
        " SELECT m.agent_id, md5($2::uuid::text || m.id)::uuid, 'semantic_facts', m.id, now(),"
        " 'useful', $2::uuid FROM semantic_facts AS m WHERE m.agent_id = 'a' AND m.id = ANY ($1)"
    )
    await as_sql(house, APP, queued, facts[:3], uuid.uuid4())
    await as_sql(house, APP, queued, facts[3:], uuid.uuid4())
    settings = Settings(
        database=DatabaseSettings(url=house.owner_url), limits=LimitsSettings(k=2, ids=2)
    )
    async with Engine(settings, drains_queue=True) as engine:
        assert await engine.ltp.drain_queue()
    links = "SELECT count(*) FROM memory_links WHERE a_id = ANY ($1) OR b_id = ANY ($1)"
    assert await as_sql(house, APP, links, facts[:3]) == 0
    assert await as_sql(house, APP, links, facts[3:]) == 1
    useful = "SELECT array_agg(useful_count) FROM semantic_facts WHERE id = ANY ($1)"
    assert await as_sql(house, APP, useful, facts) == [1] * 5


async def test_the_drain_sets_aside_a_moment_ahead_of_the_clock(house: House) -> None:
    """Whoever queued it (here the owner, whom no row policy holds)."""
    memory = await fact_of(house, "a")
    await as_sql(house, APP, "INSERT INTO retrieval_queue (agent_id, table_name, memory_id, at)"
                 " VALUES ('a', 'semantic_facts', $1, now() + interval '1 day')",
                 memory)  # fmt: skip
    await drain(house)
    assert await as_sql(house, APP, "SELECT retrieval_count FROM semantic_facts WHERE id = $1",
                        memory) == 0  # fmt: skip
    reason = await as_sql(house, APP, "SELECT reason FROM retrieval_dead_letters"
                          " WHERE memory_id = $1", memory)  # fmt: skip
    assert reason == "a moment ahead of the database's clock"


async def drain(house: House) -> None:
    async with Engine(
        Settings(database=DatabaseSettings(url=house.owner_url)), drains_queue=True
    ) as engine:
        assert await engine.ltp.drain_queue()


async def one_row(house: House, query: str, *args: object) -> asyncpg.Record:
    conn = await asyncpg.connect(house.owner_url)
    try:
        row = await conn.fetchrow(query, *args)
    finally:
        await conn.close()
    assert row is not None
    return row


# --- counters and one bad event -------------------------------------------------------


async def test_an_agent_cannot_set_a_counter_that_breaks_arithmetic(house: House) -> None:
    memory = await fact_of(house, "a")
    for column in ("retrieval_count", "surfaced_count", "useful_count", "wrong_count"):
        with pytest.raises(asyncpg.CheckViolationError, match=f"facts_{column}_at_most_1e9"):
            await as_sql(house, AGENT, f"UPDATE semantic_facts SET {column} = 2147483647"
                         " WHERE id = $1", memory)  # fmt: skip
    # at the cap, a retrieval still applies: the count stays there
    await as_sql(house, AGENT, "UPDATE semantic_facts SET retrieval_count = 1000000000"
                 " WHERE id = $1", memory)  # fmt: skip
    await as_sql(house, AGENT, "SELECT ethos_record_retrieval('fact', ARRAY[$1]::uuid[])", memory)
    await drain(house)
    assert await as_sql(house, APP, "SELECT retrieval_count FROM semantic_facts WHERE id = $1",
                        memory) == 1_000_000_000  # fmt: skip


@pytest.fixture
async def one_refused(house: House) -> AsyncIterator[tuple[uuid.UUID, uuid.UUID]]:
    """Two agents' facts, the first of which the database refuses to update (a trigger
    that raises stands for any permanent error of one row)."""
    bad, good = await fact_of(house, "a"), await fact_of(house, "b")
    conn = await asyncpg.connect(house.owner_url)
    await conn.execute("SET citus.enable_unsafe_triggers = on")  # distributed; else a no-op
    await conn.execute("""
        CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'refused for the test'; END $$""")
    await conn.execute(f"""
        CREATE TRIGGER refuse BEFORE UPDATE ON semantic_facts FOR EACH ROW
            WHEN (OLD.id = '{bad}') EXECUTE FUNCTION refuse()""")
    try:
        yield bad, good
    finally:
        await conn.execute("DROP TRIGGER refuse ON semantic_facts")
        await conn.execute("DROP FUNCTION refuse()")
        await conn.close()


async def test_one_refused_event_is_set_aside_and_the_rest_of_the_drain_applies(
    house: House, one_refused: tuple[uuid.UUID, uuid.UUID]
) -> None:
    """Before, every drain batch failed for good and stayed queued: no agent's
    retrievals were applied."""
    bad, good = one_refused
    for memory in (bad, good, good):
        await as_sql(house, APP, "SELECT ethos_record_retrieval('fact', ARRAY[$1]::uuid[])", memory)
    await drain(house)
    count = "SELECT retrieval_count FROM semantic_facts WHERE id = $1"
    assert await as_sql(house, APP, count, good) == 2
    assert await as_sql(house, APP, count, bad) == 0
    dead = await one_row(house, "SELECT kind, n, reason FROM retrieval_dead_letters"
                         " WHERE memory_id = $1", bad)  # fmt: skip
    assert (dead["kind"], dead["n"]) == ("retrieval", 1)
    assert "refused for the test" in dead["reason"]
    assert await as_sql(house, APP, "SELECT count(*) FROM retrieval_queue") == 0


async def test_one_refused_event_does_not_take_another_agents_from_a_flush(
    house: House, one_refused: tuple[uuid.UUID, uuid.UUID]
) -> None:
    """The HTTP server's buffer dropped another agent's retrieval with the bad one."""
    bad, good = one_refused
    async with owner(house, flush_interval_seconds=3600) as engine:
        await engine.record_retrieval("fact", [bad, good])
        await engine.feedback("fact", [bad], "wrong")
        assert await engine.ltp.flush()
        stats = engine.ltp.stats
    assert (stats.applied, stats.set_aside, stats.dropped) == (1, 2, 0)
    count = "SELECT retrieval_count FROM semantic_facts WHERE id = $1"
    assert await as_sql(house, APP, count, good) == 1
    kinds = "SELECT array_agg(kind ORDER BY kind) FROM retrieval_dead_letters WHERE memory_id = $1"
    assert await as_sql(house, APP, kinds, bad) == ["retrieval", "wrong"]


# --- an embedding's memory ------------------------------------------------------------

# An embedding of memory $2 (an episode) of agent $3, in plain SQL.
EMBED = """SELECT ethos_embed('episodic_traces', ARRAY[$3], ARRAY[$2::uuid], ARRAY['$'],
                             ARRAY[$1::text::vector], NULL, NULL)"""


async def test_an_embedding_is_of_a_memory_of_its_own_agent(house: House) -> None:
    """An embedding of b naming a's episode would re-tier it, return its text in b's
    search, and b's retrievals would reinforce it: none is written."""
    theirs = uuid.UUID(await owner_adds(house, "a"))
    episode = "SELECT policy, auto_importance FROM episodic_traces WHERE id = $1"
    before = tuple(await one_row(house, episode, theirs))
    for role in (AGENT_B, APP):
        assert await as_sql(house, role, EMBED, str(unit(3)), theirs, "b") == 0
    assert tuple(await one_row(house, episode, theirs)) == before
    count = "SELECT count(*) FROM memory_embeddings WHERE source_id = $1"
    assert await as_sql(house, APP, count, theirs) == 0


async def test_an_embedding_does_not_tell_an_agent_what_another_holds(house: House) -> None:
    """a's role embedding memories of agent b writes none, whether b holds the id or
    not: it sees no memory of b's (row security), and the answer is the same."""
    held, not_held = await owner_adds(house, "b"), await owner_adds(house, "a")
    for source in (held, not_held, str(uuid.uuid4())):
        assert await as_sql(house, AGENT, EMBED, str(unit(3)), uuid.UUID(source), "b") == 0
    with pytest.raises(Refused, match="row-level security"):  # nor by hand
        await as_sql(house, AGENT, "INSERT INTO memory_embeddings (agent_id, source_id,"
                     " source_table, embedding) VALUES ('b', $1, 'episodic_traces', $2::vector)",
                     uuid.UUID(held), str(unit(3)))  # fmt: skip
    # its own agent's: b's id is no memory of a, and gets none
    assert await as_sql(house, AGENT, EMBED, str(unit(3)), uuid.UUID(held), "a") == 0
    assert await as_sql(house, AGENT, EMBED, str(unit(3)), uuid.UUID(not_held), "a") == 1


async def test_an_embedding_left_pointing_at_another_agent_shows_nothing_of_it(
    house: House,
) -> None:
    """An embedding of b written by hand naming a's episode is read as having no live
    memory: b's search shows neither a's text nor its salience."""
    theirs = await owner_adds(house, "a")
    conn = await asyncpg.connect(house.owner_url)
    try:
        await conn.execute(
            "INSERT INTO memory_embeddings (agent_id, source_id, source_table, embedding)"
            " VALUES ('b', $1, 'episodic_traces', $2::vector)",
            uuid.UUID(theirs), str(unit(5)),
        )  # fmt: skip
    finally:
        await conn.close()
    async with owner(house) as engine:
        hits = await engine.nearest("b", unit(5), k=5)
    assert all(theirs not in repr(hit) for hit in hits)


# --- what an agent role may call and write ---------------------------------------------


async def test_an_agent_role_learns_only_its_own_agents(house: House) -> None:
    assert await as_sql(house, AGENT, "SELECT ethos_own_agents()") == ["a"]
    assert await as_sql(house, AGENT_B, "SELECT ethos_own_agents()") == ["b"]
    assert await as_sql(house, AGENT, "SELECT count(*) FROM ethos_agent_roles") == 1
    with pytest.raises(asyncpg.UndefinedFunctionError):  # it answered for any role
        await as_sql(house, AGENT, "SELECT ethos_agents_of($1)", house.names[AGENT_B])


async def test_an_agent_role_cannot_write_the_sweeps_schedule(house: House) -> None:
    """It could list any ids there for the sweep to visit."""
    with pytest.raises(Refused):
        await as_sql(house, AGENT, "INSERT INTO semantic_facts_due (prune, at, slice, n, ids,"
                     " places) VALUES (false, now(), 0, 1, ARRAY[gen_random_uuid()],"
                     " ARRAY['(0,1)'::tid])")  # fmt: skip
    # its own inserts still write their hints (the trigger runs as the owner)
    await as_sql(house, AGENT, "INSERT INTO semantic_facts (agent_id, content) VALUES ('a', 'y')")


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ("'a', '   '", "content must not be empty"),
        ("'a', E'\\u200b\\u200b'", "content must not be empty"),
        ("'a', repeat('x', 300000)", "at most 262,144"),
    ],
)
async def test_plain_sql_gets_the_content_checks(house: House, values: str, refusal: str) -> None:
    """Whoever writes it: an agent role, or the app."""
    for role in (AGENT, APP):
        with pytest.raises(asyncpg.CheckViolationError, match=refusal):
            await as_sql(
                house, role, f"INSERT INTO semantic_facts (agent_id, content) VALUES ({values})"
            )


async def test_an_agent_role_cannot_place_a_memory_out_of_time(house: House) -> None:
    """Anchored in 2150, a working memory stayed at full strength until then; an anchor
    at 'infinity' set by UPDATE broke every listing of the agent."""
    for column in ("anchor_at", "created_at"):
        with pytest.raises(Refused, match="row-level security"):
            await as_sql(house, AGENT, f"INSERT INTO semantic_facts (agent_id, content, {column})"
                         " VALUES ('a', 'later', '2150-01-01')")  # fmt: skip
    memory = await fact_of(house, "a")
    for moment in ("infinity", "-infinity", "2500-01-01"):
        with pytest.raises(asyncpg.CheckViolationError, match="anchor_at_1900_to_2199"):
            await as_sql(house, AGENT, f"UPDATE semantic_facts SET anchor_at = '{moment}'"
                         " WHERE id = $1", memory)  # fmt: skip
    # the owner may still place memories in simulated time
    later = datetime.now(UTC) + timedelta(days=30)
    async with owner(house) as engine:
        assert await engine.add(
            "fact", agent_id="a", content="simulated", created_at=later, allow_future=True
        )


# --- every request bounded, also in PostgreSQL ------------------------------------------


async def test_a_statement_over_the_timeout_is_stopped_by_postgresql(
    database_url: str, conn: asyncpg.Connection
) -> None:
    """Behind the servers' own cancel (a deadline, a client gone): should one be lost,
    PostgreSQL stops the statement itself."""
    settings = Settings(database=DatabaseSettings(url=database_url))
    served = with_statement_timeout(settings, request_timeout_seconds=0.5)
    assert served.database.statement_timeout_seconds == 5.5
    assert with_statement_timeout(served, 100).database.statement_timeout_seconds == 5.5
    timed = Settings(database=DatabaseSettings(url=database_url, statement_timeout_seconds=0.3))
    async with Engine(timed) as engine:
        memory = await engine.add("fact", agent_id="a", content="locked")
        async with conn.transaction():
            await conn.execute(
                "SELECT 1 FROM semantic_facts WHERE id = $1 AND agent_id = 'a' FOR UPDATE", memory
            )
            with pytest.raises(DatabaseError, match="statement timeout"):
                await engine.forget("fact", [memory])


# --- one text, one memory; one agent, one name ---------------------------------------------

VARIANTS = [
    "Straße café déjà",
    "STRASSE CAFÉ DÉJÀ",
    "strasse cafe\u0301 déjà",  # NFD
    "Stra\u00dfe\u00a0caf\u00e9 d\u00e9j\u00e0",  # a no-break space
    "  strasse\u200b caf\u00e9\u3000d\u00e9j\u00e0\u2029",  # zero-width, ideographic space
    "stra\ufeffsse\u202f café déjà",
]


async def test_a_text_in_another_form_or_case_is_the_same_memory(engine: Engine) -> None:
    """Dedup missed NFC/NFD, ß/SS, no-break-space and zero-width variants."""
    ids = {await engine.add("fact", agent_id="a", content=text) for text in VARIANTS}
    assert len(ids) == 1
    assert len({await engine.add("fact", agent_id="a", content=t) for t in ("tea", "Tee")}) == 2


@pytest.mark.parametrize("agent", ["cafe\u0301", "ada\u202e", "ada\u200b", "ada\x1b", "ada\u2028"])
async def test_plain_sql_refuses_an_agent_id_that_looks_like_another(
    conn: asyncpg.Connection, agent: str
) -> None:
    with pytest.raises(asyncpg.CheckViolationError, match="agent_id must be in Unicode NFC"):
        await conn.execute("INSERT INTO semantic_facts (agent_id, content) VALUES ($1, 'x')", agent)


@pytest.mark.parametrize("value", ["1e-30", "1e20"])
async def test_plain_sql_refuses_a_vector_with_no_direction(
    conn: asyncpg.Connection, value: str
) -> None:
    """vector_norm sums in double and let 1e-30s through; pgvector's cosine is NaN."""
    with pytest.raises(asyncpg.CheckViolationError, match="embedding has no direction"):
        await conn.execute(
            "INSERT INTO memory_vectors (agent_id, content, embedding)"
            f" VALUES ('a', 'x', array_fill({value}::real, ARRAY[384])::vector)"
        )
