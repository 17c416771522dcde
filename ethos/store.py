"""The one module that talks to the database. It opens the connections, runs every
statement by its name in ethos.queries, and turns the driver's errors into ethos's
(ethos.errors), so no other module knows the driver. It never hands a connection out:
a sweep batch, a lock attempt or a heartbeat is one method; a flush of LTP is a
transaction object that offers exactly the statements a flush runs."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import structlog

from ethos import queries
from ethos.decay import DecayParams
from ethos.errors import DatabaseError, InputError, NotFoundError, TransientDatabaseError
from ethos.inputs import MemoryInput, vector_literal
from ethos.logs import redact
from ethos.policies import Policy, sql_row
from ethos.queries import Query
from ethos.roles import Roles, plan
from ethos.settings import Settings
from ethos.tables import MEMORY_TABLES, TableSpec

log = structlog.get_logger("ethos.store")

Row = Mapping[str, Any]

CLOSE_TIMEOUT_SECONDS = 5.0
MIN_SERVER_VERSION = 150000
MIN_VECTOR_VERSION = (0, 5)

# Driver errors that heal by waiting: the server is away or restarting, the connection
# broke, or the transaction lost a deadlock or serialization race.
_TRANSIENT = (
    asyncpg.TransactionRollbackError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.InterfaceError,
    asyncpg.ConnectionDoesNotExistError,
    OSError,
    TimeoutError,
)


@contextmanager
def _translated() -> Iterator[None]:
    """Driver errors become ethos errors, with the first line of the server's message."""
    try:
        yield
    except _TRANSIENT as exc:
        raise TransientDatabaseError(_first_line(exc)) from exc
    except asyncpg.PostgresError as exc:
        raise DatabaseError(f"database: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class BatchResult:
    last_id: uuid.UUID | None  # full sweeps: where the next batch starts
    scanned: int
    updated: int
    pruned: int
    expired: int  # of the pruned, by expires_at (the others by decay)
    popped: int = 0  # due sweeps: hints taken (0: nothing left in these slices)


# --- before a pool: the server itself ------------------------------------------------


async def _connect(url: str, timeout_seconds: float) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(url, timeout=timeout_seconds)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise TransientDatabaseError(f"cannot connect to {redact(url)}: {exc}") from None


async def _run(conn: asyncpg.Connection, query: Query, **values: Any) -> Any:
    with _translated():
        return await conn.fetchval(query.text, *query.args(values))


async def ensure_database(admin_url: str, name: str, timeout_seconds: float = 30) -> None:
    """CREATE DATABASE name unless it exists (safe when several processes race)."""
    conn = await _connect(admin_url, timeout_seconds)
    try:
        # The lock goes with the connection.
        await _run(conn, queries.LOCK_DATABASE_CREATION, key=queries.DATABASE_CREATION_LOCK_KEY)
        if not await _run(conn, queries.DATABASE_EXISTS, name=name):
            await _run(conn, queries.create_database(name))
    finally:
        await conn.close()


async def check_server(url: str, timeout_seconds: float) -> None:
    """One line if the server is unreachable, too old, or cannot give ethos pgvector."""
    conn = await _connect(url, timeout_seconds)
    try:
        version = int(await _run(conn, queries.SERVER_VERSION))
        if version < MIN_SERVER_VERSION:
            raise DatabaseError(
                f"PostgreSQL {version // 10000} is too old: ethos needs PostgreSQL 15 or newer"
            )
        available = await _run(conn, queries.VECTOR_AVAILABLE)
    finally:
        await conn.close()
    if available is None:
        raise DatabaseError(
            "the pgvector extension ('vector') is not installed on this PostgreSQL server"
        )
    if tuple(int(p) for p in available.split(".")[:2]) < MIN_VECTOR_VERSION:
        raise DatabaseError(f"pgvector {available} is too old: ethos needs pgvector 0.5 or newer")


# Every connection of this process carries this name: an audit row it leaves `running`
# is known to be orphaned once no session has the name (see INTERRUPT_ORPHANED_RUNS).
PROCESS_NAME = f"ethos {os.getpid()} {uuid.uuid4().hex[:12]}"


async def _init_connection(conn: asyncpg.Connection) -> None:
    """pgvector's text form both ways, so no binary codec (or numpy) is needed."""
    try:
        await conn.set_type_codec(
            "vector", encoder=vector_literal, decoder=_parse_vector, schema="public", format="text"
        )
    except ValueError:
        raise DatabaseError("the database has no ethos schema: run `ethos migrate` first") from None


def policy_of(row: Row) -> Policy:
    """A decay_policies row as a Policy."""
    params = DecayParams(**{name: row[name] for name in DecayParams.__dataclass_fields__})
    return Policy(row["name"], params, row["promote_after"], row["promote_to"])


def _parse_vector(text: str) -> list[float]:
    return [float(v) for v in text.strip("[]").split(",")] if text != "[]" else []


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The sweep pool's connections carry no session state but their start-up settings:
    nothing to reset between batches (saves a round trip per batch)."""


# --- the store --------------------------------------------------------------------------


class Store:
    def __init__(
        self, settings: Settings, url: str, pool: asyncpg.Pool, sweep_pool: asyncpg.Pool
    ) -> None:
        self.settings = settings
        self.url = url
        self._pool = pool
        self._sweep_pool = sweep_pool
        self._lock_conn: asyncpg.Connection | None = None
        self._checked: set[str] = set()

    @classmethod
    async def open(cls, settings: Settings, url: str) -> Store:
        """Check the server, then open the pools: one for everything, and one whose
        connections sweep. Sweep batches commit asynchronously: they only materialize
        values that the next sweep recomputes from the stored state, so a crash can cost
        a few batches of refresh but never correctness, and no batch waits for a WAL
        flush. Generic plans spare re-planning every batch."""
        timeout = settings.database.connect_timeout_seconds
        await check_server(url, timeout)
        with _translated():
            pool = await asyncpg.create_pool(
                url,
                min_size=settings.database.pool_min_size,
                max_size=settings.database.pool_max_size,
                timeout=timeout,
                init=_init_connection,
                server_settings={
                    **queries.search_server_settings(
                        settings.search.candidates, settings.search.max_scan_tuples
                    ),
                    "application_name": PROCESS_NAME,
                },
                # The schedule makes statements of tens of KB: prepare them once too.
                max_cacheable_statement_size=0,
            )
            sweep_pool = await asyncpg.create_pool(
                url,
                min_size=0,
                max_size=settings.sweep.workers + 1,  # and a prune pass beside a sweep
                timeout=timeout,
                init=_init_connection,
                reset=_keep_session,
                server_settings={
                    **queries.SWEEP_SESSION_SETTINGS,
                    "application_name": PROCESS_NAME,
                },
                max_cacheable_statement_size=0,
            )
        log.debug("pool_open", url=redact(url))
        return cls(settings, url, pool, sweep_pool)

    async def close(self) -> None:
        await self.release_sweep_lock()
        for pool in (self._sweep_pool, self._pool):
            try:
                await asyncio.wait_for(pool.close(), CLOSE_TIMEOUT_SECONDS)
            except (Exception, TimeoutError):  # the server is gone: drop the sockets
                pool.terminate()

    # --- running statements ------------------------------------------------------------

    async def _fetch(self, query: Query, **values: Any) -> list[Row]:
        with _translated():
            rows: list[Row] = await self._pool.fetch(query.text, *query.args(values))
            return rows

    async def _fetchrow(self, query: Query, **values: Any) -> Row | None:
        with _translated():
            row: Row | None = await self._pool.fetchrow(query.text, *query.args(values))
            return row

    async def _fetchval(self, query: Query, **values: Any) -> Any:
        with _translated():
            return await self._pool.fetchval(query.text, *query.args(values))

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[_Transaction]:
        with _translated():
            async with self._pool.acquire() as conn, conn.transaction():
                yield _Transaction(conn)

    async def check_table(self, spec: TableSpec) -> None:
        """A table must have every column its spec implies before ethos writes to it: a
        table the code was not written for fails here, by name, not half-way through."""
        if spec.name in self._checked:
            return
        rows = await self._fetch(queries.TABLE_COLUMNS, table=spec.name)
        if not rows:
            raise InputError(f"table {spec.name} does not exist (run `ethos migrate`?)")
        missing = sorted(spec.columns - {row["column_name"] for row in rows})
        if missing:
            raise InputError(f"table {spec.name} lacks the columns {', '.join(missing)}")
        if not await self._fetch(queries.TABLE_COLUMNS, table=spec.due_table):
            raise InputError(
                f"table {spec.name} has no {spec.due_table} (the sweep's schedule; see"
                " migration 0007)"
            )
        self._checked.add(spec.name)

    async def make_roles(self, roles: Roles, *, dry_run: bool) -> list[str]:
        """Give the roles exactly their rights (ethos.roles), in one transaction; the
        statements, which a dry run only returns."""
        columns = {
            spec.name: [r["column_name"] for r in await self._fetch(queries.TABLE_COLUMNS,
                                                                    table=spec.name)]
            for spec in MEMORY_TABLES
        }  # fmt: skip
        names = [roles.app, roles.eraser, roles.agents_group, *roles.agent_roles]
        existing = {r["rolname"] for r in await self._fetch(queries.EXISTING_ROLES, names=names)}
        database = await self._fetchval(queries.CURRENT_DATABASE)
        statements = plan(roles, database, columns, existing)
        if dry_run:
            return statements
        async with self._transaction() as tx:
            for statement in statements:
                await tx.execute_literal(statement)
            await tx.fetch(
                queries.SET_AGENT_ROLES,
                roles=[role for role, _ in roles.agents],
                agents=[agent for _, agent in roles.agents],
            )
        return statements

    # --- memories ---------------------------------------------------------------------

    async def now(self) -> datetime:
        value: datetime = await self._fetchval(queries.DATABASE_NOW)
        return value

    async def insert(
        self,
        memory: MemoryInput,
        *,
        dedup: bool = False,
        near: float = 1.0,
        embedded: list[float] | None = None,
    ) -> tuple[uuid.UUID, bool]:
        """Insert a memory: (its id, True); with `embedded`, also the vector that embeds
        it, in the same transaction. With `dedup`, a live memory of the agent with the
        same normalised content (a vector: and an embedding at least `near`
        cosine-similar) is found instead: (its id, False). Adds of one content are taken
        one at a time, so concurrent ones make one row."""
        spec = memory.table
        await self.check_table(spec)
        columns = memory.columns()
        async with self._transaction() as tx:
            if memory.source is not None:
                source, source_id = memory.source
                found = await tx.fetchval(queries.build_fetch_memory_query(source), id=source_id)
                if found is None:
                    raise NotFoundError(f"no {source.name} row with id {source_id}")
            if dedup:
                key = {"table": spec.name, "agent": memory.agent_id, "content": memory.content}
                await tx.fetchval(queries.LOCK_CONTENT, **key)
                existing = await tx.fetchval(
                    queries.build_find_duplicate_query(spec),
                    agent=memory.agent_id,
                    content=memory.content,
                    embedding=memory.embedding,
                    near=near,
                    now=memory.created_at or datetime.now(UTC),
                )
                if existing is not None:
                    return existing, False
            query = queries.build_insert_query(spec, tuple(columns))
            new_id: uuid.UUID = await tx.fetchval(query, **columns)
            if embedded is not None:
                await tx.fetch(
                    queries.build_insert_source_vectors_query(spec),
                    ids=[new_id],
                    embeddings=_vector_texts([embedded]),
                )
            return new_id, True

    async def raise_repeat(self, memory: MemoryInput, memory_id: uuid.UUID) -> Row:
        """Give the memory what its repeat asks for beyond it (pin, metadata keys,
        importance): its policy, and which of those changed."""
        row = await self._fetchrow(
            queries.build_raise_repeat_query(memory.table),
            id=memory_id,
            pinned=memory.pinned,
            metadata=json.dumps(memory.metadata),
            importance=memory.importance,
        )
        assert row is not None
        return row

    async def fetch(self, spec: TableSpec, memory_id: uuid.UUID) -> Row:
        await self.check_table(spec)
        row = await self._fetchrow(queries.build_fetch_memory_query(spec), id=memory_id)
        if row is None:
            raise NotFoundError(f"no {spec.name} row with id {memory_id}")
        return row

    async def count_live(self, spec: TableSpec, agent: str | None) -> int:
        await self.check_table(spec)
        query = queries.build_count_live_query(spec, by_agent=agent is not None)
        count: int = await self._fetchval(query, agent=agent)
        return count

    async def id_states(self, spec: TableSpec, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, bool]:
        """id -> pruned, for the ids that exist."""
        await self.check_table(spec)
        rows = await self._fetch(queries.build_id_states_query(spec), ids=list(ids))
        return {row["id"]: row["pruned"] for row in rows}

    # --- the sweep --------------------------------------------------------------------

    async def sweep_batch(
        self,
        spec: TableSpec,
        *,
        now: datetime,
        tolerance: float,
        after: uuid.UUID | None,
        limit: int,
        agent: str | None,
        dry_run: bool,
    ) -> BatchResult:
        """One keyset batch after `after`, in its own transaction."""
        await self.check_table(spec)
        query = queries.build_sweep_batch_query(
            spec, by_agent=agent is not None, dry_run=dry_run, batch_size=limit
        )
        values = {
            "now": now,
            "tolerance": tolerance,
            "after": after or uuid.UUID(queries.NIL_ID),
            "agent": agent,
        }
        with _translated():
            row = await self._sweep_pool.fetchrow(query.text, *query.args(values))
        return BatchResult(
            row["last_id"], row["scanned"], row["updated"], row["pruned"], row["expired"]
        )

    @asynccontextmanager
    async def sweep_worker(
        self, slices: Sequence[int], *, prune: bool
    ) -> AsyncIterator[SweepWorker]:
        """A connection of the sweep pool, holding those of `slices` that no other
        sweeper of the same kind (refresh, or prune) holds, by a session-level advisory
        lock each, until the block ends."""
        with _translated():
            async with self._sweep_pool.acquire() as conn:
                worker = SweepWorker(
                    conn,
                    self,
                    queries.PRUNE_SLICE_LOCK_CLASS if prune else queries.SWEEP_SLICE_LOCK_CLASS,
                )
                try:
                    worker.slices = list(
                        await worker.run(queries.TRY_SLICE_LOCKS, slices=list(slices))
                    )
                    yield worker
                finally:
                    if not conn.is_closed():
                        await worker.run(queries.UNLOCK_SLICES, slices=worker.slices)

    async def count_due(self, spec: TableSpec, now: datetime, *, prune: bool) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval(queries.build_count_due_query(spec, prune=prune), now=now)
        return count

    async def interrupt_orphaned_runs(self) -> int:
        """Mark `interrupted` the audit rows left `running` by processes that are gone."""
        count: int = await self._fetchval(queries.INTERRUPT_ORPHANED_RUNS)
        return count

    async def start_sweep_run(
        self, trigger: str, mode: str, now: datetime, agent: str | None, daemon_id: str | None
    ) -> int:
        await self.interrupt_orphaned_runs()
        run_id: int = await self._fetchval(
            queries.START_SWEEP_RUN,
            trigger=trigger,
            mode=mode,
            now=now,
            agent=agent,
            daemon_id=daemon_id,
        )
        return run_id

    async def finish_sweep_run(
        self,
        run_id: int,
        *,
        status: str,
        totals: tuple[int, int, int],
        tables: dict[str, Any],
        error: str | None,
    ) -> None:
        scanned, updated, pruned = totals
        await self._fetchval(
            queries.FINISH_SWEEP_RUN,
            id=run_id,
            status=status,
            scanned=scanned,
            updated=updated,
            pruned=pruned,
            tables=json.dumps(tables),
            error=error,
        )

    async def last_sweep_finished(self) -> datetime | None:
        value: datetime | None = await self._fetchval(queries.LAST_SWEEP_FINISHED)
        return value

    async def pruned_at(self, agent: str, at: datetime) -> list[Row]:
        """The memories of an agent that a sweep at `at` pruned."""
        return await self._fetch(queries.PRUNED_AT, agent=agent, at=at)

    # --- LTP --------------------------------------------------------------------------

    @asynccontextmanager
    async def ltp_flush(self, flush_id: uuid.UUID) -> AsyncIterator[LtpFlush | None]:
        """The transaction that applies one flush of retrievals, claimed by its id;
        None when a flush with that id was applied before (an in-doubt COMMIT that went
        through): there is nothing left to do."""
        async with self._transaction() as tx:
            if await tx.fetchval(queries.CLAIM_LTP_FLUSH, id=flush_id) is None:
                yield None
                return
            yield LtpFlush(tx, self)

    @asynccontextmanager
    async def ltp_queue(self, limit: int) -> AsyncIterator[tuple[LtpFlush, list[Row]]]:
        """The transaction that applies the oldest `limit` queued events: they are
        deleted in it, so they are applied exactly when it commits."""
        async with self._transaction() as tx:
            rows = await tx.fetch(queries.POP_RETRIEVAL_QUEUE, limit=limit)
            yield LtpFlush(tx, self), rows

    async def enqueue(
        self, spec: TableSpec, ids: list[uuid.UUID], at: datetime, kind: str,
        group: uuid.UUID | None,
    ) -> None:  # fmt: skip
        """Events into the durable queue (committed when this returns)."""
        await self._fetchval(
            queries.ENQUEUE_RETRIEVALS, table=spec.name, ids=ids, at=at, kind=kind, grp=group
        )

    async def row_estimates(self) -> list[Row]:
        """Live and pruned rows per memory table, from the planner's statistics."""
        return await self._fetch(queries.ROW_ESTIMATES)

    async def queue_backlog(self) -> int:
        backlog: int = await self._fetchval(queries.RETRIEVAL_QUEUE_BACKLOG)
        return backlog

    async def remove_faded_links(self, now: datetime, limit: int) -> int:
        """Up to `limit` links whose weight fell below links.prune_weight by `now`."""
        removed: int = await self._fetchval(queries.REMOVE_FADED_LINKS, now=now, limit=limit)
        return removed

    async def links(self, spec: TableSpec, memory_id: uuid.UUID, now: datetime) -> list[Row]:
        return await self._fetch(
            queries.MEMORY_LINKS, table=spec.name, id=memory_id, now=now, **self._link_values()
        )

    async def neighbours(
        self, spec: TableSpec, ids: list[uuid.UUID], agent: str, now: datetime
    ) -> list[Row]:
        """The live links of memories `ids` of spec's table: the other end, the memory it
        came through, the link's weight now."""
        return await self._fetch(
            queries.NEIGHBOURS, table=spec.name, ids=ids, agent=agent, now=now,
            **self._link_values(),
        )  # fmt: skip

    async def neighbour_rows(
        self, spec: TableSpec, ids: list[uuid.UUID], agent: str, now: datetime
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            queries.build_neighbour_rows_query(spec), ids=ids, agent=agent, now=now
        )

    def _link_values(self) -> dict[str, float]:
        links = self.settings.links
        return {
            "links_tau": links.tau_days,
            "links_prune": links.prune_weight,
            "learning_rate": links.learning_rate,
            "wrong_factor": self.settings.feedback.wrong_factor,
        }

    async def forget_ltp_flushes(self) -> None:
        await self._fetchval(queries.FORGET_LTP_FLUSHES)

    # --- search -----------------------------------------------------------------------

    async def search(
        self,
        *,
        agent: str,
        embedding: list[float],
        k: int,
        now: datetime,
    ) -> list[Row]:
        values = {
            "now": now,
            "agent": agent,
            "embedding": embedding,
            "candidates": max(self.settings.search.candidates, k),
            "k": k,
            "salience_weight": self.settings.search.salience_weight,
        }
        async with self._transaction() as tx:
            rows = await tx.fetch(queries.SEARCH_VECTORS, **values)
            if len(rows) < k:  # the bounded index scan fell short: look at every vector
                rows = await tx.fetch(queries.SEARCH_VECTORS_EXACT, **values)
        return rows

    async def recall(
        self, *, agent: str, query: str, tables: tuple[TableSpec, ...], k: int, now: datetime
    ) -> list[Row]:
        """Live memories of the agent matching any word of `query`, best first."""
        for spec in tables:
            await self.check_table(spec)
        return await self._fetch(
            queries.build_recall_query(tables),
            agent=agent,
            text=query,
            now=now,
            k=k,
            candidates=max(self.settings.search.candidates, k),
            salience_weight=self.settings.search.salience_weight,
        )

    async def locate(self, ids: list[uuid.UUID]) -> list[Row]:
        """The table and agent of each of these memories that exists."""
        return await self._fetch(queries.LOCATE_MEMORIES, ids=ids)

    # --- client-keyed memories (the LangGraph store) -------------------------------

    async def get_item(self, agent: str, key: str, now: datetime) -> Row | None:
        return await self._fetchrow(queries.GET_ITEM, agent=agent, key=key, now=now)

    async def put_item(
        self,
        agent: str,
        key: str,
        *,
        content: str,
        value: str,
        expires_at: datetime | None,
        now: datetime,
        embedding: list[float] | None,
    ) -> Row:
        """Insert or replace the item (a fact) and, with `embedding`, its vector, in one
        transaction: (id, created)."""
        async with self._transaction() as tx:
            await tx.fetchval(queries.EXPIRE_ITEM, agent=agent, key=key, now=now)
            row = await tx.fetchrow(
                queries.PUT_ITEM, agent=agent, key=key, content=content, value=value,
                expires_at=expires_at, now=now,
            )  # fmt: skip
            assert row is not None
            if embedding is not None:
                await tx.fetchval(
                    queries.PUT_ITEM_VECTOR, id=row["id"], agent=agent, content=content,
                    embedding=embedding,
                )  # fmt: skip
            return row

    async def delete_item(self, agent: str, key: str, now: datetime) -> bool:
        return await self._fetchval(queries.DELETE_ITEM, agent=agent, key=key, now=now) is not None

    async def search_items(self, ranked_by: str | None, **values: Any) -> list[Row]:
        """Items under a namespace: newest first, or ranked by "vector" or "text"."""
        query = {
            None: queries.SEARCH_ITEMS,
            "vector": queries.SEARCH_ITEMS_BY_VECTOR,
            "text": queries.SEARCH_ITEMS_BY_TEXT,
        }[ranked_by]
        return await self._fetch(
            query, salience_weight=self.settings.search.salience_weight, **values
        )

    async def item_namespaces(self) -> list[str]:
        return [row["agent_id"] for row in await self._fetch(queries.ITEM_NAMESPACES)]

    async def missing_vectors(
        self, spec: TableSpec, agent: str | None, after: uuid.UUID, limit: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            queries.build_missing_vectors_query(spec, by_agent=agent is not None),
            agent=agent, after=after, limit=limit,
        )  # fmt: skip

    async def insert_source_vectors(
        self, spec: TableSpec, ids: list[uuid.UUID], embeddings: list[list[float]]
    ) -> int:
        """Vectors embedding these memories (where none does yet): how many were made."""
        rows = await self._fetch(
            queries.build_insert_source_vectors_query(spec),
            ids=ids,
            embeddings=_vector_texts(embeddings),
        )
        return len(rows)

    async def build_vector_index(self) -> None:
        """Build the HNSW index with database.index_build_memory of maintenance_work_mem."""
        memory = self.settings.database.index_build_memory
        async with self._transaction() as tx:
            await tx.execute_literal(queries.INDEX_BUILD_MEMORY.format(memory=memory))
            await tx.fetchval(queries.BUILD_VECTOR_INDEX)

    # --- the daemon -------------------------------------------------------------------

    async def try_sweep_lock(self) -> bool:
        """Take the sweep lock, or say that it is still held. The lock lives with a
        connection of its own: while that connection answers, the lock is held."""
        if self._lock_conn is not None and not self._lock_conn.is_closed():
            await _run(self._lock_conn, queries.PING)
            return True
        conn = await _connect(self.url, self.settings.database.connect_timeout_seconds)
        try:
            held = await _run(conn, queries.TRY_SWEEP_LOCK, key=queries.SWEEP_LOCK_KEY)
        except BaseException:
            await conn.close()
            raise
        if held:
            self._lock_conn = conn
        else:
            await conn.close()
        return bool(held)

    @property
    def sweep_lock_backend(self) -> int | None:
        """The server process holding the sweep lock for this store, if it holds it."""
        conn = self._lock_conn
        return conn.get_server_pid() if conn is not None and not conn.is_closed() else None

    async def release_sweep_lock(self) -> None:
        conn, self._lock_conn = self._lock_conn, None
        if conn is not None:
            try:
                await conn.close(timeout=1)
            except Exception:  # a connection that is already gone released the lock too
                conn.terminate()

    async def is_idle(self, idle_seconds: float) -> bool:
        idle: bool = await self._fetchval(queries.IS_IDLE, seconds=idle_seconds)
        return idle

    async def heartbeat(
        self,
        daemon_id: str,
        *,
        host: str,
        pid: int,
        role: str,
        next_sweep_due: datetime | None,
        ltp_backlog: int,
        ltp_dropped: int,
    ) -> None:
        await self._fetchval(
            queries.DAEMON_HEARTBEAT,
            id=daemon_id,
            host=host,
            pid=pid,
            role=role,
            lock_backend_pid=self.sweep_lock_backend if role == "leader" else None,
            next_sweep_due=next_sweep_due,
            ltp_backlog=ltp_backlog,
            ltp_dropped=ltp_dropped,
        )

    async def daemon_stopped(self, daemon_id: str) -> None:
        await self._fetchval(queries.DAEMON_STOPPED, id=daemon_id)

    async def status(self, alive_seconds: float) -> dict[str, Any]:
        await self.interrupt_orphaned_runs()
        daemons = await self._fetch(
            queries.STATUS_DAEMONS, alive_seconds=alive_seconds, lock_key=queries.SWEEP_LOCK_KEY
        )
        last = await self._fetchrow(queries.STATUS_LAST_SWEEP)
        return {
            "daemons": [dict(row) for row in daemons],
            "last_sweep": {**last, "tables": json.loads(last["tables"])} if last else None,
            "retrieval_dead_letters": (await self.dead_letters(0))[0],
        }

    async def dead_letters(self, window_seconds: float) -> tuple[int, int]:
        """Retrievals set aside in retrieval_dead_letters: all, and in the last window."""
        row = await self._fetchrow(queries.DEAD_LETTERS, window=window_seconds)
        assert row is not None
        return row["total"], row["recent"]

    # --- monitoring -------------------------------------------------------------------

    # --- consolidation ----------------------------------------------------------------

    async def duplicate_groups(
        self, spec: TableSpec, agent: str | None, after: tuple[str, uuid.UUID], limit: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            queries.build_duplicate_groups_query(spec, by_agent=agent is not None),
            agent=agent,
            after_agent=after[0],
            after_key=after[1],
            limit=limit,
        )

    async def near_duplicates(
        self, agent: str | None, after: uuid.UUID, limit: int, threshold: float
    ) -> list[Row]:
        """The next `limit` vectors after `after`, each with its near duplicates."""
        async with self._transaction() as tx:
            await tx.execute_literal(queries.NEAR_DUPLICATE_SEARCH_SETTINGS)
            return await tx.fetch(
                queries.NEAR_DUPLICATES, agent=agent, after=after, limit=limit,
                threshold=threshold,
            )  # fmt: skip

    async def vector_sources(self, ids: list[uuid.UUID]) -> list[Row]:
        return await self._fetch(queries.VECTOR_SOURCES, ids=ids)

    async def merge(
        self, spec: TableSpec, ids: list[uuid.UUID], groups: list[int], now: datetime
    ) -> Row:
        """Merge groups of memories (members, and the number of the group of each)."""
        await self.check_table(spec)
        row = await self._fetchrow(queries.build_merge_query(spec), ids=ids, groups=groups, now=now)
        assert row is not None
        return row

    async def forget(self, spec: TableSpec, ids: list[uuid.UUID], now: datetime) -> list[uuid.UUID]:
        await self.check_table(spec)
        rows = await self._fetch(queries.build_forget_query(spec), ids=ids, now=now)
        return [row["id"] for row in rows]

    async def purge(
        self, spec: TableSpec, selector: Mapping[str, Any], *, limit: int, dry_run: bool
    ) -> dict[str, int]:
        """What a purge deletes (dry_run: would delete), by reason; a batch at a time."""
        await self.check_table(spec)
        query = (
            queries.build_purge_count_query(spec)
            if dry_run
            else queries.build_purge_batch_query(spec, limit)
        )
        return {row["reason"]: row["n"] for row in await self._fetch(query, **selector)}

    async def erase_count(self, spec: TableSpec, agent: str) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval(queries.build_erase_count_query(spec), agent=agent)
        return count

    async def undeletable(self, tables: Sequence[str]) -> list[str]:
        """The tables the connecting role may not DELETE from."""
        rows = await self._fetch(queries.UNDELETABLE_TABLES, tables=list(tables))
        return [row["t"] for row in rows]

    async def erase_batch(
        self, spec: TableSpec, agent: str, after: uuid.UUID, limit: int, run_id: int
    ) -> tuple[int, uuid.UUID | None]:
        """Delete the agent's next `limit` memories after `after`: (how many, last id);
        audit row run_id counts them in the same transaction."""
        await self.check_table(spec)
        row = await self._fetchrow(
            queries.build_erase_batch_query(spec, limit), agent=agent, after=after, run_id=run_id
        )
        assert row is not None
        return row["n"], row["last_id"]

    async def erase_agent_rest(self, agent: str, run_id: int | None) -> dict[str, int]:
        """The agent's links and policy assignment: deleted and counted in audit row
        run_id, or (None: a dry run) only counted."""
        dry_run = run_id is None
        links = queries.COUNT_AGENT_LINKS if dry_run else queries.ERASE_AGENT_LINKS
        policy = queries.COUNT_AGENT_POLICY if dry_run else queries.ERASE_AGENT_POLICY
        values = {"agent": agent} if dry_run else {"agent": agent, "run_id": run_id}
        return {
            "memory_links": await self._fetchval(links, **values),
            "agent_policies": await self._fetchval(policy, **values),
        }

    async def start_consolidation_run(
        self, kind: str, trigger: str, now: datetime, selector: Mapping[str, Any]
    ) -> int:
        await self.interrupt_orphaned_runs()
        run_id: int = await self._fetchval(
            queries.START_CONSOLIDATION_RUN,
            kind=kind,
            trigger=trigger,
            now=now,
            selector=json.dumps(selector, default=str),
        )
        return run_id

    async def finish_consolidation_run(
        self, run_id: int, *, status: str, counts: Mapping[str, Any], error: str | None
    ) -> None:
        await self._fetchval(
            queries.FINISH_CONSOLIDATION_RUN,
            id=run_id,
            status=status,
            counts=json.dumps(counts),
            error=error,
        )

    # --- policies ---------------------------------------------------------------------

    async def sync_settings(self) -> None:
        """Write the settings' policies, importance tiers and defaults, which the sweep,
        the insert trigger and the views read. Rows are written only where they differ;
        a policy gone from the settings is kept (memories may still have it), marked as
        no longer configured."""
        settings = self.settings
        policies = settings.policy_table
        rows = [sql_row(policy, policies) for policy in policies.values()]
        async with self._transaction() as tx:
            await tx.fetchval(queries.LOCK_SETTINGS_SYNC, key=queries.SETTINGS_SYNC_LOCK_KEY)
            changed = await tx.fetch(queries.UPSERT_POLICIES, policies=json.dumps(rows))
            names = [row["name"] for row in changed]
            if names:  # their memories' schedules were computed on the old curves
                for spec in MEMORY_TABLES:
                    await tx.fetchval(queries.build_unschedule_query(spec), policies=names)
            await tx.fetchval(queries.UNCONFIGURE_POLICIES, names=sorted(policies))
            links = (settings.links.tau_days, settings.links.prune_weight)
            before = await tx.fetchrow(queries.LINK_SETTINGS)
            text_config = settings.search.text_config
            if not await tx.fetchval(queries.TEXT_CONFIG_EXISTS, config=text_config):
                raise InputError(
                    f"search.text_config: the database has no text search configuration"
                    f" {text_config!r} (the view pg_ts_config lists them)"
                )
            old_config = await tx.fetchval(queries.TEXT_CONFIG)
            await tx.fetchval(
                queries.UPSERT_ETHOS_SETTINGS,
                default_policy=settings.decay.default_policy,
                importance_otherwise=settings.importance.otherwise,
                at_risk_margin=settings.monitoring.at_risk_margin,
                links_tau=links[0],
                links_prune=links[1],
                text_config=text_config,
                auto=settings.importance.auto,
                auto_half=settings.importance.auto_half,
            )
            if old_config not in (None, text_config):  # words are stemmed anew
                log.warning("text_reindex", old=old_config, new=text_config)
                for spec in MEMORY_TABLES:
                    await tx.fetchval(queries.build_reindex_text_query(spec), config=text_config)
            old = (before["links_tau_days"], before["links_prune_weight"]) if before else links
            if old != links:  # links fade on the new curve
                await tx.fetchval(
                    queries.RESCHEDULE_LINKS, links_tau=links[0], links_prune=links[1]
                )
            await tx.fetchval(
                queries.REPLACE_IMPORTANCE_TIERS, tiers=json.dumps(settings.importance.tiers)
            )
        if changed:
            log.info("policies_written", policies=sorted(row["name"] for row in changed))

    async def policies(self) -> list[Policy]:
        """Every policy the database knows, the ones gone from the settings included."""
        return [policy_of(row) for row in await self._fetch(queries.LIST_POLICIES)]

    async def policy(self, name: str) -> Policy:
        row = await self._fetchrow(queries.FETCH_POLICY, name=name)
        if row is None:
            raise NotFoundError(f"no policy {name!r} in the database")
        return policy_of(row)

    async def policy_agents(self, name: str) -> list[Row]:
        return await self._fetch(queries.POLICY_AGENTS, name=name)

    async def assign_policy(self, agent: str, policy: str) -> None:
        await self._fetchval(queries.ASSIGN_AGENT_POLICY, agent=agent, policy=policy)

    async def unassign_policy(self, agent: str) -> str | None:
        policy: str | None = await self._fetchval(queries.UNASSIGN_AGENT_POLICY, agent=agent)
        return policy

    async def move(self, spec: TableSpec, memory_id: uuid.UUID, policy: str, now: datetime) -> Row:
        """Move a live memory to `policy`, re-anchored at `now`."""
        await self.check_table(spec)
        async with self._transaction() as tx:
            await tx.fetchval(queries.build_lock_rows_query(spec), ids=[memory_id])
            row = await tx.fetchrow(
                queries.build_move_query(spec),
                id=memory_id,
                policy=policy,
                now=now,
                tolerance=self.settings.decay.refresh_tolerance,
            )
        if row is None:
            states = await self.id_states(spec, [memory_id])
            if memory_id in states:
                raise InputError(f"{spec.name} {memory_id} is pruned: recover it first")
            raise NotFoundError(f"no {spec.name} row with id {memory_id}")
        return row

    # --- what the HTTP API and the dashboard list --------------------------------------

    async def list_memories(
        self, spec: TableSpec, agent: str | None, *, pruned: bool, limit: int, offset: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            queries.build_list_memories_query(spec, pruned=pruned),
            agent=agent, limit=limit, offset=offset,
        )  # fmt: skip

    async def agent_counts(self) -> list[Row]:
        return await self._fetch(queries.AGENT_COUNTS)

    async def pruned_by_reason(self, agent: str | None, since: datetime | None) -> list[Row]:
        return await self._fetch(queries.PRUNED_BY_REASON, agent=agent, since=since)

    async def rare_words(self, agent: str, tsv: str, n: int = 5) -> list[str]:
        """The lexemes of `tsv` that count most in its automatic importance, now."""
        rows = await self._fetch(queries.RARE_WORDS, agent=agent, tsv=tsv, n=n)
        return [row["lexeme"] for row in rows]

    async def revisions_of(self, spec: TableSpec, memory_id: uuid.UUID) -> list[Row]:
        return await self._fetch(queries.REVISIONS_OF, table=spec.name, id=memory_id)

    async def recoveries_of(self, spec: TableSpec, memory_id: uuid.UUID) -> list[Row]:
        return await self._fetch(queries.RECOVERIES_OF, table=spec.name, id=str(memory_id))

    async def update_memory(
        self,
        spec: TableSpec,
        memory_id: uuid.UUID,
        *,
        content: str | None,
        metadata: str | None,
        embedding: str | None,
        now: datetime,
    ) -> None:
        """A live memory's text and metadata replaced (None: kept); one line if it is
        pruned or unknown."""
        await self.check_table(spec)
        found = await self._fetchval(
            queries.build_update_memory_query(spec), id=memory_id, content=content,
            metadata=metadata, embedding=embedding, now=now,
        )  # fmt: skip
        if found is None:
            if memory_id in await self.id_states(spec, [memory_id]):
                raise InputError(f"{spec.name} {memory_id} is pruned: recover it first")
            raise NotFoundError(f"no {spec.name} row with id {memory_id}")

    async def forget_agent(self, spec: TableSpec, agent: str, now: datetime) -> int:
        await self.check_table(spec)
        count: int = await self._fetchval(
            queries.build_forget_agent_query(spec), agent=agent, now=now
        )
        return count

    async def stats(self, agent: str | None) -> dict[str, list[dict[str, Any]]]:
        async with self._transaction() as tx:
            return {
                name: [dict(row) for row in await tx.fetch(query, agent=agent)]
                for name, query in queries.STATS.items()
            }

    # --- recovery ---------------------------------------------------------------------

    async def recovery_candidates(
        self, spec: TableSpec, selector: Mapping[str, Any], after: uuid.UUID | None, limit: int
    ) -> list[Row]:
        await self.check_table(spec)
        return await self._fetch(
            queries.build_recovery_candidates_query(spec, limit),
            **selector,
            after=after or uuid.UUID(queries.NIL_ID),
        )

    async def recover_batch(
        self,
        spec: TableSpec,
        selector: Mapping[str, Any],
        *,
        after: uuid.UUID | None,
        limit: int,
        strength: float,
        now: datetime,
    ) -> list[uuid.UUID]:
        rows = await self._fetch(
            queries.build_recover_batch_query(spec, limit),
            **selector,
            after=after or uuid.UUID(queries.NIL_ID),
            strength=strength,
            now=now,
            tolerance=self.settings.decay.refresh_tolerance,
        )
        return sorted(row["id"] for row in rows)

    async def record_recovery(
        self,
        *,
        now: datetime,
        spec: TableSpec,
        selector: dict[str, Any],
        command: str,
        recovered: int,
        strength: float,
    ) -> int:
        recovery_id: int = await self._fetchval(
            queries.RECORD_RECOVERY,
            now=now,
            table=spec.name,
            selector=json.dumps(selector, default=str),
            command=command,
            recovered=recovered,
            strength=strength,
        )
        return recovery_id


class _Transaction:
    """Statements on one connection inside one transaction; the store's own."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    async def fetch(self, query: Query, **values: Any) -> list[Row]:
        rows: list[Row] = await self._conn.fetch(query.text, *query.args(values))
        return rows

    async def fetchval(self, query: Query, **values: Any) -> Any:
        return await self._conn.fetchval(query.text, *query.args(values))

    async def fetchrow(self, query: Query, **values: Any) -> Row | None:
        row: Row | None = await self._conn.fetchrow(query.text, *query.args(values))
        return row

    async def execute_literal(self, statement: str) -> None:
        """A SET or GRANT with validated names and values written into the text (neither
        takes binds)."""
        await self._conn.execute(statement)


class SweepWorker:
    """One sweeper's connection and the slices it holds: what a due sweep runs on."""

    def __init__(self, conn: asyncpg.Connection, store: Store, lock_class: int) -> None:
        self._conn = conn
        self._store = store
        self._lock_class = lock_class
        self.slices: list[int] = []

    async def run(self, query: Query, **values: Any) -> Any:
        with _translated():
            return await self._conn.fetchval(
                query.text, *query.args({**values, "class": self._lock_class})
            )

    async def due_batch(
        self, spec: TableSpec, *, now: datetime, tolerance: float, prune: bool, limit: int
    ) -> BatchResult:
        """One batch of due rows of this worker's slices, in its own transaction."""
        await self._store.check_table(spec)
        query = queries.build_due_batch_query(spec, prune=prune, batch_size=limit)
        values = {"now": now, "tolerance": tolerance, "slices": self.slices}
        with _translated():
            row = await self._conn.fetchrow(query.text, *query.args(values))
        return BatchResult(
            None, row["scanned"], row["updated"], row["pruned"], row["expired"], row["popped"]
        )


@dataclass
class LinkRound:
    """Link updates of one round, as columns: agent, the two ends (smaller first), and
    what happened to the pair at its moment."""

    agents: list[str]
    a_tables: list[str]
    a_ids: list[uuid.UUID]
    b_tables: list[str]
    b_ids: list[uuid.UUID]
    co: list[int]
    useful: list[int]
    wrong: list[int]
    moments: list[datetime]

    def columns(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _vector_texts(embeddings: Sequence[Sequence[float]]) -> list[str]:
    """pgvector's text form of each, for a text[] bind cast to vector row by row."""
    return ["[" + ",".join(repr(float(x)) for x in e) + "]" for e in embeddings]


class LtpFlush:
    """What one flush of retrievals may do inside its transaction."""

    def __init__(self, tx: _Transaction, store: Store) -> None:
        self._tx = tx
        self._store = store

    async def strengthen(
        self,
        spec: TableSpec,
        *,
        ids: list[uuid.UUID],
        counts: list[int],
        useful: list[int],
        wrong: list[int],
        surfaced: list[int],
        moments: list[datetime],
    ) -> list[Row]:
        """One round: each id at most once, with what happened to it at moments[i]
        (retrievals, useful, wrong, surfaced). Returns the rows written (unknown and
        pruned ids are not among them), with their policy before and after."""
        await self._store.check_table(spec)
        settings = self._store.settings
        return await self._tx.fetch(
            queries.build_ltp_query(spec),
            boost=settings.ltp.boost(spec),
            tolerance=settings.decay.refresh_tolerance,
            confidence_bonus=settings.ltp.fact_confidence_bonus,
            wrong_factor=settings.feedback.wrong_factor,
            ids=ids,
            counts=counts,
            useful=useful,
            wrong=wrong,
            surfaced=surfaced,
            moments=moments,
        )

    async def surface(self, spec: TableSpec, ids: list[uuid.UUID], counts: list[int]) -> list[Row]:
        """Search hits that only count: surfaced_count + counts[i]."""
        await self._store.check_table(spec)
        return await self._tx.fetch(queries.build_surfaced_query(spec), ids=ids, counts=counts)

    async def agents(self, spec: TableSpec, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
        """The agent of each live memory among `ids`."""
        rows = await self._tx.fetch(queries.build_agents_query(spec), ids=ids)
        return {row["id"]: row["agent_id"] for row in rows}

    async def link(self, pairs: LinkRound, *, learning_rate: float) -> int:
        """One round of link updates (each pair at most once); the count written."""
        values = {
            **pairs.columns(),
            **self._store._link_values(),
            "learning_rate": learning_rate,
        }
        written = 0
        if any(c + u for c, u in zip(pairs.co, pairs.useful, strict=True)):
            written += len(await self._tx.fetch(queries.STRENGTHEN_LINKS, **values))
        if any(c + u == 0 for c, u in zip(pairs.co, pairs.useful, strict=True)):
            written += len(await self._tx.fetch(queries.WEAKEN_LINKS, **values))
        return written

    async def touch_retrieval_activity(self) -> None:
        await self._tx.fetchval(queries.TOUCH_RETRIEVAL_ACTIVITY)
