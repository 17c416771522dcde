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

    def _ids(self, ids: Iterable[str | uuid.UUID]) -> list[uuid.UUID]:
        """The ids of one call: at least one, at most limits.ids."""
        return id_list(ids, self.settings.limits.ids)

    async def locate(
        self,
        ids: Iterable[str | uuid.UUID],
        *,
        agent: str | None = None,
        table: str | TableSpec | None = None,
        live: bool = False,
    ) -> dict[Whose, list[uuid.UUID]]:
        """The memories by table and agent, for callers that know only ids (an id is
        one memory's across the tables), so that what they do next names the agent. An
        unknown id, or one of another agent than `agent`, is an error; so is, with no
        agent named, an id that memories of several agents hold (their keys lead with
        the agent: plain SQL can give an id that another agent's memory has). `table`,
        where the caller gives one, is checked: an id of another table is an error
        saying where it is. With `live`, a pruned one is an error too (one look at the
        ids for a forget: where they are, whose, and whether live)."""
        parsed = self._ids(ids)
        spec = None if table is None else table_spec(table)
        held: dict[uuid.UUID, list[Whose]] = {i: [] for i in parsed}
        elsewhere: dict[uuid.UUID, Whose] = {}
        pruned: set[uuid.UUID] = set()
        for row in await self.store.locate(parsed, agent):
            owner = Whose(table_spec(row["table_name"]), row["agent_id"])
            if spec in (None, owner.spec):
                held[row["id"]].append(owner)
                if row["pruned"]:
                    pruned.add(row["id"])
            else:
                elsewhere[row["id"]] = owner
        for memory_id, owners in held.items():
            if len(owners) > 1:
                raise InputError(several(memory_id, owners))
        unknown = [i for i, owners in held.items() if not owners]
        if unknown:
            names = [str(i) for i in unknown]
            if spec is not None and unknown[0] in elsewhere:
                where = elsewhere[unknown[0]]
                raise NotFoundError(
                    f"{unknown[0]} is not in {spec.name}: it is {where.what()}", names
                )
            what = "memory" if spec is None else f"{spec.name} row"
            raise NotFoundError(unknown_ids(what, some(names), agent), names)
        gone = [str(i) for i in parsed if i in pruned]
        if live and gone:
            raise InputError(f"already pruned: {some(gone)}")
        found: dict[Whose, list[uuid.UUID]] = {}
        for memory_id, [owner] in held.items():
            found.setdefault(owner, []).append(memory_id)
        return found

    async def whose(
        self,
        memory_id: str | uuid.UUID,
        *,
        agent: str | None = None,
        table: str | TableSpec | None = None,
    ) -> tuple[Whose, uuid.UUID]:
        """Where one memory is, as `locate` finds it (`table`, where given, checked)."""
        [(owner, [found])] = (await self.locate([memory_id], agent=agent, table=table)).items()
        return owner, found


class Whose(NamedTuple):
    """Where a memory is: its table and its agent."""

    spec: TableSpec
    agent: str

    def __str__(self) -> str:
        return f"{self.agent}'s in {self.spec.name}"

    def what(self) -> str:
        """As a sentence says it: "a fact (semantic_facts) of agent a"."""
        article = "an" if self.spec.alias[0] in "aeiou" else "a"
        return f"{article} {self.spec.alias} ({self.spec.name}) of agent {self.agent}"


def several(memory_id: uuid.UUID, owners: list[Whose]) -> str:
    """The line for an id that several memories hold: of several agents (the keys lead
    with the agent), or of one agent in several tables."""
    agents = sorted({owner.agent for owner in owners})
    tables = sorted({owner.spec.name for owner in owners})
    if len(agents) > 1:
        where = f"{tables[0]} " if len(tables) == 1 else ""
        return (
            f"{where}{memory_id} is a memory of {len(agents)} agents ({', '.join(agents)}):"
            " name the agent (`agent`)"
        )
    return f"{memory_id} is a memory of {len(tables)} tables ({', '.join(tables)}): name the table"


def specs(tables: Iterable[str | TableSpec] | None) -> tuple[TableSpec, ...]:
    if tables is None:
        return MEMORY_TABLES
    return tuple(table_spec(t) for t in tables)
