"""The roles `ethos roles` makes, each operation tried as each role: the app runs
everything but hard deletes and cannot rewrite identity or audit; the eraser adds purge
and erase; an agent role, under row-level security, sees and changes only its agent's
rows, even in hand-written SQL. One test per cell of the table."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count

import asyncpg
import pytest

from ethos.domain.errors import DatabaseError, EthosError
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.acceptance.test_cli import one_line_error
from tests.conftest import Cli, Psql, template_copy
from tests.vectors import unit

APP, ERASER, AGENT, AGENT_B = "app", "eraser", "agent", "agent_b"
_unique = count()


class Refused(Exception):
    """The operation did not happen: a permission error, or rows it could not see."""


@dataclass(frozen=True)
class House:
    """A database with the three roles made by `Engine.make_roles` as its owner; the
    agent role speaks for agent "a" (and "b" exists beside it)."""

    owner_url: str
    names: dict[str, str]  # APP/ERASER/AGENT -> role name

    def url(self, role: str) -> str:
        return self.owner_url.replace(
            "postgresql://postgres", f"postgresql://{self.names[role]}", 1
        )

    def settings(self, role: str) -> Settings:
        return Settings(database=DatabaseSettings(url=self.url(role)))


@pytest.fixture(scope="module")
async def house(admin_uri: str, template_uri: str) -> AsyncIterator[House]:
    name = f"roles_{os.getpid()}"
    names = {APP: f"{name}_app", ERASER: f"{name}_eraser", AGENT: f"{name}_agent_a",
             AGENT_B: f"{name}_agent_b"}  # fmt: skip
    try:
        async with template_copy(admin_uri, name) as url:
            house = House(url, names)
            async with Engine(Settings(database=DatabaseSettings(url=house.owner_url))) as owner:
                agents = [(names[AGENT], "a"), (names[AGENT_B], "b")]
                await owner.make_roles(names[APP], names[ERASER], agents)
            yield house
    finally:
        admin = await asyncpg.connect(admin_uri)
        for role in (names[AGENT], names[AGENT_B], f"{names[APP]}_agents", names[ERASER],
                     names[APP]):  # fmt: skip
            await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()


async def owner_adds(house: House, agent: str, *, pruned: bool = False) -> str:
    """A new episode of `agent` written by the owner: its id."""
    async with Engine(Settings(database=DatabaseSettings(url=house.owner_url))) as owner:
        memory = await owner.add("episode", agent_id=agent, content=f"note {next(_unique)}")
        if pruned:
            await owner.forget("episode", [memory])
    return str(memory)


async def as_sql(house: House, role: str, statement: str, *args: object) -> object:
    conn = await asyncpg.connect(house.url(role))
    try:
        return await conn.fetchval(statement, *args)
    except asyncpg.InsufficientPrivilegeError as exc:
        raise Refused(str(exc)) from exc
    finally:
        await conn.close()


async def as_engine(house: House, role: str, use: Callable[[Engine], Awaitable[object]]) -> None:
    try:
        async with Engine(house.settings(role)) as engine:
            await use(engine)
    except (DatabaseError, EthosError) as exc:
        if "permission denied" not in str(exc) and "needs DELETE" not in str(exc):
            raise
        raise Refused(str(exc)) from exc


# --- the operations ----------------------------------------------------------------------
Operation = Callable[[House, str], Awaitable[None]]


async def add(house: House, role: str) -> None:
    await as_engine(house, role, lambda e: e.add("fact", agent_id="a", content="tea at five"))


async def recall(house: House, role: str) -> None:
    await owner_adds(house, "a")
    await as_engine(house, role, lambda e: e.recall("a", "note"))


async def reinforce(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")

    async def use(engine: Engine) -> None:
        await engine.record_retrieval("episode", [memory])
        await engine.ltp.drain(5)
        assert engine.ltp.stats.applied == 1

    await as_engine(house, role, use)


async def sweep(house: House, role: str) -> None:
    await owner_adds(house, "a")
    await as_engine(house, role, lambda e: e.sweep(now=datetime.now(UTC) + timedelta(days=400)))


async def merge(house: House, role: str) -> None:
    await as_engine(house, role, lambda e: e.merge(agent="a"))


async def feedback(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")
    await as_engine(house, role, lambda e: e.feedback("episode", [memory], "useful"))


async def forget(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")
    await as_engine(house, role, lambda e: e.forget("episode", [memory]))


async def recover(house: House, role: str) -> None:
    memory = await owner_adds(house, "a", pruned=True)
    await as_engine(house, role, lambda e: e.recover("episode", Selector(ids=(uuid.UUID(memory),))))


async def drain_sql_retrievals(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")
    await as_sql(house, APP, "SELECT ethos_record_retrieval('episode', ARRAY[$1::uuid])", memory)

    async def use(engine: Engine) -> None:
        if not await engine.ltp.drain_queue():  # refused (logged): the events stay queued
            raise Refused("the durable queue was not drained")

    await as_engine(house, role, use)


async def purge(house: House, role: str) -> None:
    await owner_adds(house, "purged", pruned=True)
    await as_engine(house, role, lambda e: e.purge(datetime.now(UTC), agent="purged"))


async def erase(house: House, role: str) -> None:
    agent = f"erased{next(_unique)}"
    await owner_adds(house, agent)
    await as_engine(house, role, lambda e: e.erase(agent, dry_run=False))


READ = "SELECT count(*) FROM episodic_traces WHERE id = $1"
UPDATE_SALIENCE = """
WITH changed AS (UPDATE episodic_traces SET salience = 0.5 WHERE id = $1 RETURNING 1)
SELECT count(*) FROM changed"""
RECORD = "SELECT ethos_record_retrieval('episode', ARRAY[$1::uuid])"


async def reaches_one(house: House, role: str, statement: str, agent: str) -> None:
    """`statement` ($1: a new memory of `agent`) as `role` reads, changes or queues it."""
    if await as_sql(house, role, statement, await owner_adds(house, agent)) != 1:
        raise Refused("no row reached")


async def read_own_rows(house: House, role: str) -> None:
    await reaches_one(house, role, READ, "a")


async def read_another_agents_rows(house: House, role: str) -> None:
    await reaches_one(house, role, READ, "b")


async def insert_own(house: House, role: str) -> None:
    await as_sql(house, role, "INSERT INTO semantic_facts (agent_id, content) VALUES ('a', 'x')")


async def insert_for_another_agent(house: House, role: str) -> None:
    await as_sql(house, role, "INSERT INTO semantic_facts (agent_id, content) VALUES ('b', 'x')")


async def take_another_agents_id(house: House, role: str) -> None:
    """A memory of "a" under the id of one of "b"'s: were it written, an event or a
    command that names the id would reach both."""
    taken = await owner_adds(house, "b")
    await as_sql(house, role, "INSERT INTO episodic_traces (agent_id, id, content)"
                 " VALUES ('a', $1, 'mine')", taken)  # fmt: skip


async def update_own(house: House, role: str) -> None:
    await reaches_one(house, role, UPDATE_SALIENCE, "a")


async def update_another_agents(house: House, role: str) -> None:
    await reaches_one(house, role, UPDATE_SALIENCE, "b")


async def change_agent_or_creation(house: House, role: str) -> None:
    """Refused when neither change goes through: each is tried."""
    memory = await owner_adds(house, "a")
    refusals = []
    for change in ("agent_id = 'a'", "created_at = now()"):
        try:
            await as_sql(house, role, f"UPDATE episodic_traces SET {change} WHERE id = $1", memory)
        # (FeatureNotSupportedError: Citus moves no row to another shard)
        except (Refused, asyncpg.FeatureNotSupportedError) as exc:
            refusals.append(str(exc))
    if len(refusals) == 2:
        raise Refused("; ".join(refusals))


async def replace_text_keeping_the_old(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")
    await as_sql(house, role, "UPDATE episodic_traces SET content = 'new' WHERE id = $1", memory)
    kept = await as_sql(
        house, APP, "SELECT content FROM memory_revisions WHERE memory_id = $1", memory
    )
    assert isinstance(kept, str) and kept.startswith("note "), kept


async def hard_delete_in_sql(house: House, role: str) -> None:
    memory = await owner_adds(house, "a")
    await as_sql(house, role, "DELETE FROM episodic_traces WHERE id = $1", memory)


async def record_own_retrieval(house: House, role: str) -> None:
    await reaches_one(house, role, RECORD, "a")


async def record_another_agents_retrieval(house: House, role: str) -> None:
    await reaches_one(house, role, RECORD, "b")


async def rewrite_a_finished_run(house: House, role: str) -> None:
    owner = await asyncpg.connect(house.owner_url)
    try:
        run = await owner.fetchval(
            "INSERT INTO sweep_runs (trigger, status, swept_at, finished_at)"
            " VALUES ('manual', 'completed', now(), now()) RETURNING id"
        )
    finally:
        await owner.close()
    await as_sql(house, role, "UPDATE sweep_runs SET pruned = 0 WHERE id = $1", run)


async def delete_audit_rows(house: House, role: str) -> None:
    await as_sql(house, role, "DELETE FROM recoveries")


async def write_revisions(house: House, role: str) -> None:
    await as_sql(house, role, "DELETE FROM memory_revisions")


async def skew_term_statistics(house: House, role: str) -> None:
    """Counts for another agent's words, written directly: only inserts may change them."""
    await as_sql(
        house, role, "SELECT ethos_text_stats_add(ARRAY['bo'], ARRAY['x:1'::tsvector], ARRAY[1])"
    )


async def rebuild_term_statistics(house: House, role: str) -> None:
    await as_sql(house, role, "SELECT ethos_text_stats_rebuild()")


async def skew_vector_statistics(house: House, role: str) -> None:
    """Another agent's mean, moved directly: only vector inserts may change it."""
    await as_sql(
        house,
        role,
        "SELECT ethos_vector_stats_add(ARRAY['bo'], ARRAY[$1::vector], 1)",
        str(unit(9)),
    )


async def rebuild_vector_statistics(house: House, role: str) -> None:
    await as_sql(house, role, "SELECT ethos_vector_stats_rebuild()")


OK, NO = "allowed", "refused"
# operation: (app, eraser, agent role)
TABLE: dict[Operation, tuple[str, str, str]] = {
    add: (OK, OK, NO),  # the agent role runs SQL, not the engine (it may not write the schedule)
    recall: (OK, OK, NO),
    reinforce: (OK, OK, NO),
    sweep: (OK, OK, NO),
    merge: (OK, OK, NO),
    feedback: (OK, OK, NO),
    forget: (OK, OK, NO),
    recover: (OK, OK, NO),
    drain_sql_retrievals: (OK, OK, NO),
    purge: (NO, OK, NO),
    erase: (NO, OK, NO),
    read_own_rows: (OK, OK, OK),
    read_another_agents_rows: (OK, OK, NO),
    insert_own: (OK, OK, OK),
    insert_for_another_agent: (OK, OK, NO),
    take_another_agents_id: (OK, OK, NO),
    update_own: (OK, OK, OK),
    update_another_agents: (OK, OK, NO),
    change_agent_or_creation: (NO, NO, NO),
    replace_text_keeping_the_old: (OK, OK, OK),
    hard_delete_in_sql: (NO, OK, NO),
    record_own_retrieval: (OK, OK, OK),
    record_another_agents_retrieval: (OK, OK, NO),
    rewrite_a_finished_run: (NO, NO, NO),
    delete_audit_rows: (NO, NO, NO),
    write_revisions: (NO, NO, NO),
    skew_term_statistics: (NO, NO, NO),
    rebuild_term_statistics: (NO, NO, NO),
    skew_vector_statistics: (NO, NO, NO),
    rebuild_vector_statistics: (NO, NO, NO),
}
CELLS = [
    pytest.param(operation, role, expected, id=f"{operation.__name__}-{role}")
    for operation, row in TABLE.items()
    for role, expected in zip((APP, ERASER, AGENT), row, strict=True)
]


@pytest.mark.parametrize(("operation", "role", "expected"), CELLS)
async def test_each_operation_as_each_role(
    house: House, operation: Operation, role: str, expected: str
) -> None:
    try:
        await operation(house, role)
        outcome = OK
    except Refused:
        outcome = NO
    assert outcome == expected


async def test_an_erase_the_app_may_not_make_changes_nothing(house: House) -> None:
    memory = await owner_adds(house, "kept")
    owner = await asyncpg.connect(house.owner_url)
    try:
        await owner.execute(
            "INSERT INTO agent_policies (agent_id, policy) VALUES ('kept', 'long_term')"
        )
        with pytest.raises(Refused):
            await as_engine(house, APP, lambda e: e.erase("kept", dry_run=False))
        assert (
            await owner.fetchval("SELECT count(*) FROM episodic_traces WHERE id = $1", memory) == 1
        )
        assert (
            await owner.fetchval("SELECT count(*) FROM agent_policies WHERE agent_id = 'kept'") == 1
        )
        run = await owner.fetchrow(
            "SELECT status, counts FROM lifecycle_runs WHERE kind = 'erase'"
            " AND selector ->> 'agent' = 'kept'"
        )
        assert run["status"] == "failed"
        assert set(json.loads(run["counts"]).values()) == {0}
    finally:
        await owner.close()


def test_the_command_prints_its_plan_and_refuses_a_bad_name(cli: Cli, database_url: str) -> None:
    env = {"ETHOS_DATABASE__URL": database_url}
    done = cli("roles", "--app", "my_app", "--eraser", "my_eraser", "--dry-run", "--json", env=env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["applied"] is False
    assert (
        "GRANT DELETE ON memory_vectors, episodic_traces, semantic_facts TO my_eraser"
        in (plan["statements"])
    )
    bad = cli("roles", "--app", "app; DROP TABLE x", "--eraser", "e", env=env)
    assert "--app: 'app; DROP TABLE x' is not a role name" in one_line_error(bad)


async def test_two_agent_roles_in_psql_each_see_and_change_only_their_own(
    house: House, psql: Psql
) -> None:
    mine, theirs = await owner_adds(house, "a"), await owner_adds(house, "b")
    for role, own, other in ((AGENT, mine, theirs), (AGENT_B, theirs, mine)):
        url = house.url(role)
        seen = psql(url, f"SELECT id FROM episodic_traces WHERE id IN ('{mine}', '{theirs}')")
        assert seen == [[own]]
        changed = psql(url, f"UPDATE episodic_traces SET pinned = true WHERE id = '{other}'")
        assert changed == [["UPDATE 0"]]
        pinned = psql(house.owner_url, f"SELECT pinned FROM episodic_traces WHERE id = '{other}'")
        assert pinned == [["f"]]


async def test_an_agent_role_reads_only_its_own_agents_term_statistics(house: House) -> None:
    """Its inserts read them (automatic importance); another agent's words stay hidden."""
    await owner_adds(house, "a")
    await owner_adds(house, "b")
    count = "SELECT count(*) FROM {} WHERE agent_id = $1"
    for table in ("lexeme_stats", "agent_text_stats"):
        assert await as_sql(house, AGENT, count.format(table), "a") > 0  # type: ignore[operator]
        assert await as_sql(house, AGENT, count.format(table), "b") == 0
    words = "SELECT auto_importance FROM semantic_facts WHERE content = 'zebra crossing'"
    await as_sql(house, AGENT, "INSERT INTO semantic_facts (agent_id, content)"
                 " VALUES ('a', 'zebra crossing')")  # fmt: skip
    assert await as_sql(house, AGENT, words) is not None


async def test_no_role_but_the_owner_attaches_a_function_of_the_owners_rights(
    house: House,
) -> None:
    """A trigger function that runs as the owner reads every agent's statistics, or writes
    where its NEW row says: a role may not attach it to a table of its own (migration
    0033). The triggers on the memory tables still fire for it."""
    conn = await asyncpg.connect(house.url(AGENT))
    try:
        await conn.execute("CREATE TEMP TABLE mine (id uuid, agent_id text)")
        for function in ("ethos_write_row", "ethos_rows_added"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(f"CREATE TRIGGER t AFTER INSERT ON mine FOR EACH STATEMENT"
                                   f" EXECUTE FUNCTION {function}()")  # fmt: skip
    finally:
        await conn.close()
    await as_sql(house, AGENT, "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'x')")
    # and each of them searches the caller's temporary schema last, not first
    paths = await as_sql(
        house,
        APP,
        """SELECT array_agg(DISTINCT c) FROM pg_proc,
                                          unnest(proconfig) AS c
                                        WHERE prosecdef AND c LIKE 'search_path=%'""",
    )
    assert paths == ['search_path="$user", public, pg_temp']


async def test_the_definer_functions_run_as_a_role_made_for_them(house: House) -> None:
    """The SECURITY DEFINER functions were the owner's (a superuser's on the embedded
    server): a flaw in one would have run with every right. They are ethos_definer's, a
    role no one logs in as, which may not delete a memory, change what it does not keep,
    or pass row security without a policy."""
    owners = await as_sql(
        house,
        APP,
        "SELECT array_agg(DISTINCT pg_get_userbyid(proowner)) FROM pg_proc"
        " WHERE prosecdef AND proname LIKE 'ethos%'"
        " AND (proname <> 'ethos_text_stats_analyze'"
        "      OR current_setting('server_version_num')::int >= 170000)",
    )
    assert owners == ["ethos_definer"]
    role = await as_sql(
        house,
        APP,
        "SELECT ARRAY[rolcanlogin, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb]"
        " FROM pg_roles WHERE rolname = 'ethos_definer'",
    )
    assert role == [False] * 5
    rights = await as_sql(
        house,
        APP,
        "SELECT ARRAY[has_table_privilege('ethos_definer', 'episodic_traces', 'DELETE'),"
        " has_column_privilege('ethos_definer', 'semantic_facts', 'content', 'UPDATE'),"
        " has_table_privilege('ethos_definer', 'retrieval_queue', 'SELECT'),"
        " has_column_privilege('ethos_definer', 'semantic_facts', 'policy', 'UPDATE')]",
    )
    assert rights == [False, False, False, True]
    # and the write path still works for every role through them
    await as_sql(house, AGENT, "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'y')")
    assert await owner_adds(house, "b")


async def test_an_agent_role_reads_only_its_own_agents_mean(house: House) -> None:
    """Its vector inserts keep its mean (the trigger runs as the owner); another agent's
    mean, which says what that agent's memories are about, stays hidden."""
    async with Engine(Settings(database=DatabaseSettings(url=house.owner_url))) as owner:
        await owner.add("vector", agent_id="b", content="theirs", embedding=unit(8))
    await as_sql(house, AGENT, "INSERT INTO memory_vectors (agent_id, content, embedding)"
                 " VALUES ('a', 'mine', $1::vector)", str(unit(7)))  # fmt: skip
    count = "SELECT count(*) FROM agent_vector_stats WHERE agent_id = $1"
    assert await as_sql(house, AGENT, count, "a") == 1
    assert await as_sql(house, AGENT, count, "b") == 0
    assert await as_sql(house, APP, count, "b") == 1
