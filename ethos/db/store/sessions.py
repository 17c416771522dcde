"""The store's connections before they run a statement of a concern: how one is made
(its settings, its codec, the process's name on it) and pooled, and the driver's errors
that become ethos's (translated)."""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from ethos.db.store.query import Query
from ethos.domain.errors import (
    DatabaseError,
    LockTimeoutError,
    LostRaceError,
    TransientDatabaseError,
)
from ethos.domain.inputs import vector_literal
from ethos.logs import redact
from ethos.settings import Settings

# Driver errors that heal by waiting: the server is away or restarting, the connection
# broke (a transaction that lost a deadlock or serialization race: LostRaceError).
_TRANSIENT = (
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.InterfaceError,
    asyncpg.ConnectionDoesNotExistError,
    # A pooled connection caught mid-operation as the server went away (seen resetting
    # one on release after its database was dropped): the connection is broken.
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)


@contextmanager
def translated() -> Iterator[None]:
    """Driver errors become ethos errors, with the first line of the server's message."""
    try:
        yield
    except asyncpg.TransactionRollbackError as exc:
        raise LostRaceError(_first_line(exc)) from exc
    except asyncpg.LockNotAvailableError as exc:
        raise LockTimeoutError(f"database: {_first_line(exc)}") from exc
    except _TRANSIENT as exc:
        raise TransientDatabaseError(_first_line(exc)) from exc
    except asyncpg.PostgresError as exc:
        raise DatabaseError(f"database: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def connect(url: str, timeout_seconds: float) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(url, timeout=timeout_seconds)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise TransientDatabaseError(f"cannot connect to {redact(url)}: {exc}") from None


async def run(conn: asyncpg.Connection, query: Query, **values: Any) -> Any:
    with translated():
        return await conn.fetchval(query.text, *query.args(values))


# A sweep's batches commit asynchronously and run on generic plans (see Store.open).
SWEEP_SESSION_SETTINGS = {"synchronous_commit": "off", "plan_cache_mode": "force_generic_plan"}


def lock_timeout(seconds: float) -> str:
    """PostgreSQL's lock_timeout, in ms ("0": none)."""
    return str(math.ceil(seconds * 1000))


def search_server_settings(candidates: int, max_scan_tuples: int) -> dict[str, str]:
    """pgvector settings for every pooled connection: enough candidates for the re-rank,
    and iterative scans (pgvector >= 0.8) so an agent filter still fills them, bounded so
    that a query far from all of an agent's memories cannot walk the whole graph."""
    return {
        "hnsw.ef_search": str(max(40, candidates)),
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.max_scan_tuples": str(max_scan_tuples),
    }


def statement_timeout(seconds: float) -> dict[str, str]:
    """PostgreSQL's statement_timeout for a session, in ms; none for 0."""
    return {"statement_timeout": str(math.ceil(seconds * 1000))} if seconds else {}


# Every connection of this process carries this name: an audit row it leaves `running`
# is known to be orphaned once no session has the name (see INTERRUPT_ORPHANED_RUNS).
PROCESS_NAME = f"ethos {os.getpid()} {uuid.uuid4().hex[:12]}"


async def init_connection(conn: asyncpg.Connection) -> None:
    """pgvector's text form both ways, so no binary codec (or numpy) is needed."""
    try:
        await conn.set_type_codec(
            "vector", encoder=vector_literal, decoder=_parse_vector, schema="public", format="text"
        )
    except ValueError:
        raise DatabaseError("the database has no ethos schema: run `ethos migrate` first") from None


def _parse_vector(text: str) -> list[float]:
    return [float(v) for v in text.strip("[]").split(",")] if text != "[]" else []


async def _keep_session(conn: asyncpg.Connection) -> None:
    """ethos's connections carry no session state but their start-up settings (a setting
    a statement needs is SET LOCAL; a session's advisory lock is released by its holder):
    nothing to reset when one goes back to its pool but what asyncpg always does (it rolls
    back an open transaction). Saves a round trip per statement, about a third of a
    one-statement call's."""


# Every session on a Citus node, the coordinator's included (those on a worker address
# its shards by name: sweeps, reads of an agent). Citus hides shards from the catalogue by
# filtering each catalogue query, and the driver's look-up of a type it has not met yet
# (an array parameter, a vector) took 0.6 s on the coordinator and 2.7-3.3 s on a
# worker, on each new connection, for each such type; with the filter off, and no JIT
# compiling that query, 4-17 ms.
NODE_SESSION_SETTINGS = {"citus.override_table_visibility": "off", "jit": "off"}
# A read of one agent on its node names its shard group's tables: as many statements as
# groups, each planned on each connection. A generic plan is made once; the default makes
# five custom plans first (one server's recall settles on its generic plan too).
NODE_READ_SETTINGS = {**NODE_SESSION_SETTINGS, "plan_cache_mode": "force_generic_plan"}


async def make_pool(
    settings: Settings, url: str, *, sweep: bool, session: Mapping[str, str] | None = None
) -> asyncpg.Pool:
    """The connections for everything, or (`sweep`) those that sweep. Sweep batches
    commit asynchronously: they only materialize values that the next sweep recomputes
    from the stored state, so a crash can cost a few batches of refresh but never
    correctness, and no batch waits for a WAL flush. Generic plans spare re-planning
    every batch. `session`: settings of a Citus node's sessions."""
    if sweep:
        sizes = (0, settings.sweep.workers + 1)  # and a prune pass beside a sweep
        # A batch skips the rows other transactions hold; this bounds the wait for what
        # it cannot skip (what a trigger writes), as in LTP's flushes (decision 0022).
        wait = lock_timeout(settings.database.maintenance_lock_timeout_seconds)
        own = {**SWEEP_SESSION_SETTINGS, "lock_timeout": wait}
    else:
        sizes = (settings.database.pool_min_size, settings.database.pool_max_size)
        own = {
            **search_server_settings(settings.search.candidates, settings.search.max_scan_tuples),
            **statement_timeout(settings.database.statement_timeout_seconds),
        }
    pool: asyncpg.Pool = await asyncpg.create_pool(
        url,
        min_size=sizes[0],
        max_size=sizes[1],
        timeout=settings.database.connect_timeout_seconds,
        init=init_connection,
        reset=_keep_session,
        server_settings={**own, **(session or {}), "application_name": PROCESS_NAME},
        # The schedule makes statements of tens of KB: prepare them once too.
        max_cacheable_statement_size=0,
    )
    return pool


def node_url(url: str, host: str, port: int) -> str:
    """`url` (its user, password, database and options) at another host and port."""
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=f"{user}@{address}" if user else address))
