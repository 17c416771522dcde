"""The engine's core: it opens the store (or shares the daemon's) and the LTP buffer,
closes them, reads the clock, embeds a text, and finds memories by id. The concern
mixins (memories, retrieval, policies, operations, items, listing) stand on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import NamedTuple, Self

import structlog

from ethos import db, logs
from ethos.db.store import Store
from ethos.domain.errors import InputError, NotFoundError, unknown_ids
from ethos.domain.inputs import aware, id_list, some
from ethos.domain.tables import MEMORY_TABLES, TableSpec, table_spec
from ethos.services.embedding import Embedder, ProviderUnavailable, configured, embed
from ethos.services.ltp import LtpBuffer
from ethos.settings import Settings, load_settings

log = structlog.get_logger("ethos.services.engine")

# Who asked, as the audit rows (sweep_runs, lifecycle_runs) say, when a caller does
# not: the API. The CLI says "manual", the daemon "daemon".
TRIGGER = "api"


class EngineCore:
    """Connects on enter, closes on exit. One engine serves many concurrent tasks.

    `store`: an open Store to work through (the daemon shares its own); the engine then
    leaves closing it to its owner."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        url: str | None = None,
        store: Store | None = None,
        embedder: Embedder | None = None,
        drains_queue: bool = False,
        check_settings: bool = True,
    ) -> None:
        logs.library_default()
        self.settings = settings or load_settings()
        # Texts to vectors: the one given, else the provider the settings name, else none.
        self.embedder = embedder or configured(self.settings.embedding)
        self._drains_queue = drains_queue  # apply the durable retrieval queue (the daemon)
        # Say where the database's settings differ from these (not for the commands that
        # show or write them: `ethos migrate`, `ethos settings apply`).
        self._check_settings = check_settings
        self._url = url
        self._store = store
        self._owns_store = store is None
        self._open = False

    async def __aenter__(self) -> Self:
        if self._store is None:
            url = self._url or await db.resolve_url(self.settings)
            self._store = await Store.open(self.settings, url)
        self._open = True
        if self._check_settings:
            await self._check_database_settings()
        self.ltp = LtpBuffer(self.store, self.settings, drains_queue=self._drains_queue)
        self.ltp.start()
        return self

    async def _check_database_settings(self) -> None:
        """One line when the database keeps other settings than these. They are not
        written: the database is shared, and processes with different files would undo
        each other's (a text_config re-stems every memory); `ethos settings apply` does."""
        differences = await self.store.settings_differences()
        if differences:
            log.warning(
                "settings_not_applied",
                keys=[difference.key for difference in differences],
                apply="ethos settings apply",
            )

    async def _moment(self, now: datetime | None) -> datetime:
        """`now` as given (with a time zone), else the database's clock."""
        return aware(now, "now") if now else await self.store.now()

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the engine is not open: use `async with Engine(...)`")
        return self._store

    @property
    def url(self) -> str:
        return self.store.url

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Apply the buffered LTP, then close the connections (if the engine opened them)."""
        if not self._open:
            return
        self._open = False
        await self.ltp.close()
        if self._owns_store and self._store is not None:
            await self._store.close()
            self._store = None

    async def now(self) -> datetime:
        """The database's clock."""
        return await self.store.now()

    async def _embed(self, content: str, spec: TableSpec, *, required: bool) -> list[float] | None:
        """The content's vector. A provider that is down fails the add of a vector
        (required) and leaves an episode or fact without one (logged; `ethos embed
        --missing` fills it in later); any other provider error fails the add."""
        assert self.embedder is not None
        try:
            [vector] = await embed(
                self.embedder, [content], self.settings.embedding, role="document"
            )
        except ProviderUnavailable as exc:
            if required:
                raise
            log.warning("embedding_missing", table=spec.name, reason=str(exc))
            return None
        return vector

    async def check_ids(
        self, table: str | TableSpec, ids: Iterable[str | uuid.UUID], *, agent: str | None = None
    ) -> None:
        """Each id names a row of `table` (live or pruned; of `agent`, where one is
        named), else NotFoundError names the others. record_retrieval and feedback skip
        unknown ids instead (they must not need the database when called: a blip delays
        them, it does not refuse them)."""
        spec = table_spec(table)
        held = await self._held(self._ids(ids), agent)
        unknown = [str(i) for i, whose in held.items() if whose is None or whose.spec != spec]
        if unknown:
            raise NotFoundError(unknown_ids(f"{spec.name} row", some(unknown), agent), unknown)

    def _ids(self, ids: Iterable[str | uuid.UUID]) -> list[uuid.UUID]:
        """The ids of one call: at least one, at most limits.ids."""
        return id_list(ids, self.settings.limits.ids)

    async def locate(
        self, ids: Iterable[str | uuid.UUID], *, agent: str | None = None
    ) -> dict[Whose, list[uuid.UUID]]:
        """The memories by table and agent, for callers that know only ids (an id is
        one memory's across the tables), so that what they do next names the agent. An
        unknown id, or one of another agent than `agent`, is an error; so is, with no
        agent named, an id that memories of several agents hold (their keys lead with
        the agent: plain SQL can give an id that another agent's memory has)."""
        parsed = self._ids(ids)
        held = await self._held(parsed, agent)
        unknown = [str(i) for i in parsed if held[i] is None]
        if unknown:
            raise NotFoundError(unknown_ids("memory", some(unknown), agent))
        found: dict[Whose, list[uuid.UUID]] = {}
        for memory_id, owner in held.items():
            if owner is not None:
                found.setdefault(owner, []).append(memory_id)
        return found

    async def _held(self, ids: list[uuid.UUID], agent: str | None) -> dict[uuid.UUID, Whose | None]:
        """The table and agent of each id's memory (of `agent`, where one is named),
        None where there is none; an id of several is refused."""
        held: dict[uuid.UUID, Whose | None] = dict.fromkeys(ids)
        for row in await self.store.locate(ids):
            if agent not in (None, row["agent_id"]):
                continue
            owner, before = Whose(table_spec(row["table_name"]), row["agent_id"]), held[row["id"]]
            if before is not None:
                raise InputError(
                    f"id {row['id']} names several memories ({before}, {owner}): name the"
                    " agent where they are of several"
                )
            held[row["id"]] = owner
        return held


class Whose(NamedTuple):
    """Where a memory is: its table and its agent."""

    spec: TableSpec
    agent: str

    def __str__(self) -> str:
        return f"{self.agent}'s in {self.spec.name}"


def specs(tables: Iterable[str | TableSpec] | None) -> tuple[TableSpec, ...]:
    if tables is None:
        return MEMORY_TABLES
    return tuple(table_spec(t) for t in tables)
