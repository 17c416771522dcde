"""The core of the store: the server before a pool, the pools, running statements (in a
transaction or not, on one server or an agent's Citus node), the table checks, the roles'
grants, the database's clock and the leader lock. Every concern's mixin builds on
StoreCore; statements are written with ethos.db.store.query, connections made by
ethos.db.store.sessions."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Self, TypeVar

import asyncpg
import structlog

from ethos.db.store.query import NamedStatements, Query, on_shard, sql
from ethos.db.store.sessions import (
    NODE_READ_SETTINGS,
    NODE_SESSION_SETTINGS,
    connect,
    make_pool,
    node_url,
    run,
    translated,
)
from ethos.domain.errors import (
    DatabaseError,
    InputError,
    LostRaceError,
    NotFoundError,
    unknown_ids,
)
from ethos.domain.roles import DEFINER, Roles, plan, shard_grants
from ethos.domain.tables import MEMORY_TABLES, TableSpec
from ethos.logs import redact
from ethos.settings import Settings

T = TypeVar("T")  # what an agent session's work returns (_agent_sessions)

STATEMENTS = NamedStatements(Path(__file__).parent / "sql" / "core.sql")


SERVER_VERSION = STATEMENTS["server_version"]
VECTOR_AVAILABLE = STATEMENTS["vector_available"]
DATABASE_EXISTS = STATEMENTS["database_exists"]
DATABASE_CREATION_LOCK_KEY = 0x45_54_48_4F_02
LOCK_DATABASE_CREATION = STATEMENTS["lock_database_creation"]
DATABASE_NOW = STATEMENTS["database_now"]
# Clocks drift apart slowly; a minute keeps the offset well within a millisecond.
CLOCK_RESYNC_SECONDS = 60.0
# A store opened on a Citus coordinator before `ethos distribute` reads again this often
# whether the tables are distributed: within it of the command, its statements name one
# agent, and a flush refused meanwhile is retried, not set aside (distribution_changed).
DISTRIBUTION_RECHECK_SECONDS = 10.0
# How often a statement of its own that lost a deadlock runs (StoreCore._statement).
RACE_ATTEMPTS = 5
PING = STATEMENTS["ping"]
CITUS_CATALOGUE = STATEMENTS["citus_catalogue"]
DISTRIBUTED_BY_AGENT = STATEMENTS["distributed_by_agent"]
SHARD_GROUPS = STATEMENTS["shard_groups"]


def create_database(name: str) -> Query:
    """CREATE DATABASE takes no bind parameter: the name is quoted as an identifier."""
    return sql('CREATE DATABASE "{}"'.format(name.replace('"', '""')))


TABLE_COLUMNS = STATEMENTS["table_columns"]
TABLE_EXISTS = STATEMENTS["table_exists"]
CURRENT_DATABASE = STATEMENTS["current_database"]
EXISTING_ROLES = STATEMENTS["existing_roles"]
SET_AGENT_ROLES = STATEMENTS["set_agent_roles"]
AGENT_ROLES_NOW = STATEMENTS["agent_roles_now"]


@cache
def build_id_states_query(spec: TableSpec, *, of_one_agent: bool) -> Query:
    """Whether memories %(ids)s are pruned, and whose they are: of %(agent)s alone
    (`of_one_agent`, run in the agent's session: StoreCore._fetch_of), or of any agent
    (which agents hold an id). A builder: the table varies."""
    agent = "AND agent_id = %(agent)s" if of_one_agent else ""
    return sql(
        f"SELECT id, agent_id, pruned FROM {spec.name} WHERE id = ANY(%(ids)s::uuid[]) {agent}"
    )


# One sweeper at a time, across processes and hosts: a session-level advisory lock,
# released by PostgreSQL when its connection ends (kill -9 included).
LEADER_LOCK_KEY = 0x45_54_48_4F_01
TRY_LEADER_LOCK = STATEMENTS["try_leader_lock"]


INTERRUPT_ORPHANED_RUNS = STATEMENTS["interrupt_orphaned_runs"]


log = structlog.get_logger("ethos.db.store")

Row = Mapping[str, Any]

CLOSE_TIMEOUT_SECONDS = 5.0
MIN_SERVER_VERSION = 150000
MIN_VECTOR_VERSION = (0, 5)


async def ensure_database(admin_url: str, name: str, timeout_seconds: float = 30) -> None:
    """CREATE DATABASE name unless it exists (safe when several processes race)."""
    conn = await connect(admin_url, timeout_seconds)
    try:
        # The lock goes with the connection.
        await run(conn, LOCK_DATABASE_CREATION, key=DATABASE_CREATION_LOCK_KEY)
        if not await run(conn, DATABASE_EXISTS, name=name):
            await run(conn, create_database(name))
    finally:
        await conn.close()


async def check_server(url: str, timeout_seconds: float) -> bool:
    """One line if the server is unreachable, too old, or cannot give ethos pgvector.
    Whether the database has Citus (a coordinator's, or a worker's)."""
    conn = await connect(url, timeout_seconds)
    try:
        version = int(await run(conn, SERVER_VERSION))
        if version < MIN_SERVER_VERSION:
            raise DatabaseError(
                f"PostgreSQL {version // 10000} is too old: ethos needs PostgreSQL 15 or newer"
            )
        available = await run(conn, VECTOR_AVAILABLE)
        citus = await run(conn, CITUS_CATALOGUE) is not None
    finally:
        await conn.close()
    if available is None:
        raise DatabaseError(
            "the pgvector extension ('vector') is not installed on this PostgreSQL server"
        )
    if tuple(int(p) for p in available.split(".")[:2]) < MIN_VECTOR_VERSION:
        raise DatabaseError(f"pgvector {available} is too old: ethos needs pgvector 0.5 or newer")
    return citus


def shard_names(group: Mapping[str, Any]) -> dict[str, str]:
    """A shard group's tables (a row of SHARD_GROUPS): each table's shard name there."""
    return dict(zip(group["tables"], group["names"], strict=True))


def shared_id(spec: TableSpec, memory_id: uuid.UUID, agents: Sequence[str]) -> InputError:
    """The one line for an id that memories of several agents hold, given without one."""
    return InputError(
        f"{spec.name} {memory_id} is a memory of {len(agents)} agents"
        f" ({', '.join(sorted(agents))}): name the agent (--agent)"
    )


class StoreCore:
    """What every concern's mixin builds on: the pools, running statements (in a
    transaction or not), the table checks, and the leader lock's connection."""

    def __init__(
        self,
        settings: Settings,
        url: str,
        pool: asyncpg.Pool,
        sweep_pool: asyncpg.Pool,
        *,
        citus: bool = False,
    ) -> None:
        self.settings = settings
        self.url = url
        self.citus = citus  # the database has Citus (check_server)
        self._pool = pool
        self._sweep_pool = sweep_pool
        # a Citus cluster's nodes: (host:port, for sweeps) -> pool
        self._node_pools: dict[tuple[str, bool], asyncpg.Pool] = {}
        self._distributed = False
        self._distribution_due = 0.0  # (monotonic) when to read it again, on Citus
        self._lock_conn: asyncpg.Connection | None = None
        self._checked: set[str] = set()
        self._clock_offset: timedelta | None = None
        self._clock_measured = 0.0

    @classmethod
    async def open(cls, settings: Settings, url: str) -> Self:
        """Check the server, then open the pools: one for everything, and one whose
        connections sweep."""
        citus = await check_server(url, settings.database.connect_timeout_seconds)
        session = NODE_SESSION_SETTINGS if citus else None
        with translated():
            pool = await make_pool(settings, url, sweep=False, session=session)
            sweep_pool = await make_pool(settings, url, sweep=True, session=session)
        log.debug("pool_open", url=redact(url))
        return cls(settings, url, pool, sweep_pool, citus=citus)

    async def distributed(self) -> bool:
        """Whether ethos's tables are distributed by agent on a Citus coordinator: then
        each statement about an agent's memories names the agent alone, which routes it
        to the agent's shard. On a coordinator whose tables are not distributed yet, read
        again every DISTRIBUTION_RECHECK_SECONDS (never on a server without Citus)."""
        if self.citus and not self._distributed and time.monotonic() >= self._distribution_due:
            self._distributed = bool(await self._fetchval(DISTRIBUTED_BY_AGENT))
            self._distribution_due = time.monotonic() + DISTRIBUTION_RECHECK_SECONDS
        return self._distributed

    async def distribution_changed(self) -> bool:
        """Whether the tables were distributed since this store last read it (read now):
        a statement refused then may have been planned for one server."""
        if not self.citus or self._distributed:
            return False
        self._distribution_due = 0.0
        return await self.distributed()

    async def _node_pool(self, host: str, port: int, *, sweep: bool) -> asyncpg.Pool:
        """A pool on another node of a Citus cluster (the coordinator's user, password
        and database there), for sweeps or for reads, opened the first time it is asked
        for."""
        key = (f"{host}:{port}", sweep)
        if key not in self._node_pools:
            url = node_url(self.url, host, port)
            session = NODE_SESSION_SETTINGS if sweep else NODE_READ_SETTINGS
            with translated():
                self._node_pools[key] = await make_pool(
                    self.settings, url, sweep=sweep, session=session
                )
        return self._node_pools[key]

    async def _shard_groups(self, agent: str | None) -> list[Row]:
        """On a Citus cluster: the shard groups (the agent's alone, where one is named),
        each with its node and the names of its tables there."""
        return await self._fetch(SHARD_GROUPS, agent=agent)

    async def _agent_node(self, agent: str) -> tuple[asyncpg.Pool, dict[str, str]]:
        """On a Citus cluster: the read pool on the node that holds the agent's shard
        group, and the names of its tables there (one read of the coordinator's
        catalogue)."""
        groups = await self._shard_groups(agent)
        if not groups:
            raise DatabaseError("the coordinator has no shard group of the memory tables")
        return await self._group_node(groups[0])

    async def _group_node(self, group: Row) -> tuple[asyncpg.Pool, dict[str, str]]:
        pool = await self._node_pool(group["host"], group["port"], sweep=False)
        return pool, shard_names(group)

    @asynccontextmanager
    async def _group_transaction(
        self, pool: asyncpg.Pool, names: dict[str, str]
    ) -> AsyncIterator[Transaction]:
        """A transaction on a Citus node, against a shard group's tables (`names`)."""
        with translated():
            async with pool.acquire() as conn, conn.transaction():
                yield Transaction(conn, names)

    async def _agent_place(self, agent: str) -> tuple[asyncpg.Pool, dict[str, str]] | None:
        """Where a statement about the agent's memories runs, if not through this store's
        pool (None): on a distributed Citus cluster, the node that holds the agent's
        shard group, with the names of its tables there. The one place that asks."""
        if not await self.distributed():
            return None
        return await self._agent_node(agent)

    async def _fetch_of(self, query: Query, **values: Any) -> list[Row]:
        """A statement about one agent's memories (`agent`, as the statement names it),
        a read or a write, a transaction of its own. On a Citus cluster it runs on the
        node that holds the agent's shard group, against its shards by name: there it is
        planned once a session, as on one server, where through the coordinator Citus
        planned it at every call, on the coordinator and again on the node. No agent
        named (None): a statement about every agent's, through the pool (on Citus, the
        coordinator's)."""
        agent = values["agent"]
        place = None if agent is None else await self._agent_place(agent)
        if place is None:
            return await self._fetch(query, **values)
        pool, names = place
        rows: list[Row] = await self._statement(pool.fetch, on_shard(query, names), values)
        return rows

    async def _fetchval_of(self, query: Query, **values: Any) -> Any:
        """The first value of the first row of a statement about one agent's memories
        (_fetch_of)."""
        rows = await self._fetch_of(query, **values)
        return next(iter(rows[0].values())) if rows else None

    @asynccontextmanager
    async def _transaction_of(self, agent: str) -> AsyncIterator[Transaction]:
        """A transaction of statements about one agent's memories, reads or writes: on a
        Citus cluster, on the node that holds the agent's shard group, against its
        shards (_fetch_of)."""
        place = await self._agent_place(agent)
        if place is None:
            async with self._transaction() as tx:
                yield tx
            return
        async with self._group_transaction(*place) as tx:
            yield tx

    async def _agent_sessions(
        self, agents: Iterable[str], work: Callable[[list[str], Transaction], Awaitable[T]]
    ) -> list[T]:
        """Run `work(group, tx)` where a statement about these agents' memories runs: on
        one server, once, in one transaction for all of them (the sorted unique agents);
        on a distributed Citus cluster, once an agent, agents in sorted order, each in a
        transaction on the node holding its shard group against its shards
        (_transaction_of). A statement is written once, as one server would write it,
        naming its agents (`agent_id = ANY (%(agents)s)`, bound to `group`). What each
        run returned, in order. `work` runs inside its transaction, so an error there
        rolls it back at once and is translated like any statement's (a callback, not an
        async generator: an error in a generator's loop body never reaches it)."""
        done = []
        for group in await self.agent_groups(agents):
            # A group's agents share one place (one server, or one agent's node).
            async with self._transaction_of(group[0]) as tx:
                done.append(await work(group, tx))
        return done

    async def agent_groups(self, agents: Iterable[str]) -> list[list[str]]:
        """The agents whose memories one statement names together, each group sorted,
        the groups in agent order (two writers lock rows alike): on one server all of
        them at once; on a distributed Citus cluster one agent a group, since an agent's
        shard group is on one node and two agents' may not be (the coordinator would
        plan a statement naming both as a distributed one, and refuse some row locks
        across shards: see query.on_shard)."""
        group = sorted(set(agents))
        if not group:
            return []
        if await self.distributed():
            return [[agent] for agent in group]
        return [group]

    async def close(self) -> None:
        await self.release_leader_lock()
        for pool in (*self._node_pools.values(), self._sweep_pool, self._pool):
            try:
                await asyncio.wait_for(pool.close(), CLOSE_TIMEOUT_SECONDS)
            except (Exception, TimeoutError):  # the server is gone: drop the sockets
                pool.terminate()

    async def _fetch(self, query: Query, **values: Any) -> list[Row]:
        rows: list[Row] = await self._statement(self._pool.fetch, query, values)
        return rows

    async def _fetchrow(self, query: Query, **values: Any) -> Row | None:
        row: Row | None = await self._statement(self._pool.fetchrow, query, values)
        return row

    async def _fetchval(self, query: Query, **values: Any) -> Any:
        return await self._statement(self._pool.fetchval, query, values)

    @staticmethod
    async def _statement(
        run: Callable[..., Awaitable[Any]], query: Query, values: Mapping[str, Any]
    ) -> Any:
        """One statement, a transaction of its own: one that lost a deadlock (as a batch
        of puts, locking items by key, may against an LTP flush locking them by id) was
        rolled back whole, and runs again, RACE_ATTEMPTS times at most."""
        args = query.args(values)
        attempt = 1
        while True:
            try:
                with translated():
                    return await run(query.text, *args)
            except LostRaceError:
                if attempt == RACE_ATTEMPTS:
                    raise
                attempt += 1

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Transaction]:
        with translated():
            async with self._pool.acquire() as conn, conn.transaction():
                yield Transaction(conn)

    async def check_table(self, spec: TableSpec) -> None:
        """A table must have every column its spec implies before ethos writes to it: a
        table the code was not written for fails here, by name, not half-way through."""
        if spec.name in self._checked:
            return
        rows = await self._fetch(TABLE_COLUMNS, table=spec.name)
        if not rows:
            raise InputError(f"table {spec.name} does not exist (run `ethos migrate`?)")
        missing = sorted(spec.columns - {row["column_name"] for row in rows})
        if missing:
            raise InputError(f"table {spec.name} lacks the columns {', '.join(missing)}")
        if not await self._fetch(TABLE_COLUMNS, table=spec.due_table):
            if await self._fetchval(TABLE_EXISTS, table=spec.due_table):
                # There, but hidden from this role: it may not write the sweep's
                # schedule, which every engine write keeps.
                raise InputError(
                    f"permission denied for table {spec.due_table}: this role may not run"
                    " the engine (an agent role writes its memories in SQL)"
                )
            raise InputError(
                f"table {spec.name} has no {spec.due_table} (the sweep's schedule; see"
                " migration 0007)"
            )
        self._checked.add(spec.name)

    async def make_roles(self, roles: Roles, *, dry_run: bool) -> list[str]:
        """Give the roles exactly their rights (ethos.domain.roles), in one transaction; the
        statements, which a dry run only returns."""
        columns = {
            spec.name: [r["column_name"] for r in await self._fetch(TABLE_COLUMNS,
                                                                    table=spec.name)]
            for spec in MEMORY_TABLES
        }  # fmt: skip
        names = [roles.app, roles.eraser, roles.agents_group, *roles.agent_roles, DEFINER]
        existing = {r["rolname"] for r in await self._fetch(EXISTING_ROLES, names=names)}
        former = {r["role"] for r in await self._fetch(AGENT_ROLES_NOW, group=roles.agents_group)}
        database = await self._fetchval(CURRENT_DATABASE)
        statements = plan(roles, database, columns, existing, former)
        # Citus truly differs: a new row reaches its shard with the coordinator's
        # defaults, which the shards must grant the agents' group too (shard_grants).
        on_shards = shard_grants(roles) if await self.distributed() else []
        if dry_run:
            return statements + on_shards
        async with self._transaction() as tx:
            for statement in statements:
                await tx.execute_literal(statement)
            await tx.fetch(
                SET_AGENT_ROLES,
                roles=[role for role, _ in roles.agents],
                agents=[agent for _, agent in roles.agents],
            )
        for statement in on_shards:
            refused = await self._fetch(sql(statement))
            if refused:
                shard, reason = refused[0]
                raise DatabaseError(f"shard {shard} refused a grant of `ethos roles`: {reason}")
        return statements + on_shards

    async def now(self) -> datetime:
        """The database's clock, without a round trip a call: this host's clock plus its
        offset from the server's, measured again every CLOCK_RESYNC_SECONDS. The offset
        is the upper bound of what the round trip allows (server time minus the moment
        the query was sent), so a moment read here is never before a write the server
        has already stamped."""
        if (
            self._clock_offset is None
            or time.monotonic() - self._clock_measured > CLOCK_RESYNC_SECONDS
        ):
            sent = datetime.now(UTC)
            server: datetime = await self._fetchval(DATABASE_NOW)
            self._clock_offset = server - sent
            self._clock_measured = time.monotonic()
        return datetime.now(UTC) + self._clock_offset

    async def live_owners(
        self, spec: TableSpec, ids: Sequence[uuid.UUID]
    ) -> dict[str, list[uuid.UUID]]:
        """The agents whose live memories of `spec` these ids are, each with its ids, for
        the statements about them to name. Two agents may hold one id: such an id is
        refused, and the agent must be named."""
        held: dict[uuid.UUID, list[str]] = {}
        query = build_id_states_query(spec, of_one_agent=False)
        for row in await self._fetch(query, ids=list(ids)):
            if not row["pruned"]:
                held.setdefault(row["id"], []).append(row["agent_id"])
        for memory_id, agents in sorted(held.items()):
            if len(agents) > 1:
                raise shared_id(spec, memory_id, agents)
        owners: dict[str, list[uuid.UUID]] = {}
        for memory_id in ids:
            if memory_id in held:
                owners.setdefault(held[memory_id][0], []).append(memory_id)
        return owners

    async def live_owner(
        self, spec: TableSpec, memory_id: uuid.UUID, agent: str | None
    ) -> str | None:
        """The agent whose live memory of `spec` `memory_id` is: `agent` where one is
        named, else the one agent that holds it live (None: none does; live_owners)."""
        if agent is not None:
            return agent
        return next(iter(await self.live_owners(spec, [memory_id])), None)

    async def missing(self, spec: TableSpec, memory_id: uuid.UUID, agent: str | None) -> InputError:
        """The one line for a by-id write that found no live memory (of `agent`, where
        one is named): pruned, or unknown."""
        if memory_id in await self.id_states(spec, [memory_id], agent):
            return InputError(f"{spec.name} {memory_id} is pruned: recover it first")
        return NotFoundError(unknown_ids(f"{spec.name} row", str(memory_id), agent))

    async def id_states(
        self, spec: TableSpec, ids: Sequence[uuid.UUID], agent: str | None = None
    ) -> dict[uuid.UUID, bool]:
        """id -> pruned, for the ids that exist (as memories of `agent`, where one is
        named). With no agent named, an id two agents hold is pruned if either's memory
        of it is (what a recovery by id looks for), whatever order the rows come in."""
        await self.check_table(spec)
        query = build_id_states_query(spec, of_one_agent=agent is not None)
        rows = await self._fetch_of(query, ids=list(ids), agent=agent)
        states: dict[uuid.UUID, bool] = {}
        for row in rows:
            states[row["id"]] = states.get(row["id"], False) or row["pruned"]
        return states

    async def interrupt_orphaned_runs(self) -> int:
        """Mark `interrupted` the audit rows left `running` by processes that are gone."""
        count: int = await self._fetchval(INTERRUPT_ORPHANED_RUNS)
        return count

    async def try_leader_lock(self) -> bool:
        """Take the leader lock, or say that it is still held. The lock lives with a
        connection of its own: while that connection answers, the lock is held."""
        if self._lock_conn is not None and not self._lock_conn.is_closed():
            await run(self._lock_conn, PING)
            return True
        conn = await connect(self.url, self.settings.database.connect_timeout_seconds)
        try:
            held = await run(conn, TRY_LEADER_LOCK, key=LEADER_LOCK_KEY)
        except BaseException:
            await conn.close()
            raise
        if held:
            self._lock_conn = conn
        else:
            await conn.close()
        return bool(held)

    @property
    def leader_lock_backend(self) -> int | None:
        """The server process holding the leader lock for this store, if it holds it."""
        conn = self._lock_conn
        return conn.get_server_pid() if conn is not None and not conn.is_closed() else None

    async def release_leader_lock(self) -> None:
        conn, self._lock_conn = self._lock_conn, None
        if conn is not None:
            try:
                await conn.close(timeout=1)
            except Exception:  # a connection that is already gone released the lock too
                conn.terminate()


class Transaction:
    """Statements on one connection inside one transaction; the store's own. On a Citus
    node, against a shard group's tables: `names` (on_shard)."""

    def __init__(self, conn: asyncpg.Connection, names: Mapping[str, str] | None = None) -> None:
        self._conn = conn
        self._names = names

    def _placed(self, query: Query) -> Query:
        return query if self._names is None else on_shard(query, self._names)

    async def fetch(self, query: Query, **values: Any) -> list[Row]:
        query = self._placed(query)
        rows: list[Row] = await self._conn.fetch(query.text, *query.args(values))
        return rows

    async def fetchval(self, query: Query, **values: Any) -> Any:
        query = self._placed(query)
        return await self._conn.fetchval(query.text, *query.args(values))

    async def fetchrow(self, query: Query, **values: Any) -> Row | None:
        query = self._placed(query)
        row: Row | None = await self._conn.fetchrow(query.text, *query.args(values))
        return row

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """A nested transaction: an error inside rolls back to its start, as an
        EthosError."""
        with translated():
            async with self._conn.transaction():
                yield

    async def execute_literal(self, statement: str) -> None:
        """A SET or GRANT with validated names and values written into the text (neither
        takes binds)."""
        await self._conn.execute(statement)
