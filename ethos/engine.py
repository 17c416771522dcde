"""The Python API: an Engine opened from settings, used as an async context manager.

async with Engine(load_settings()) as engine:
    memory_id = await engine.add("episode", agent_id="a1", content="met Ada", emotional_tone=0.8)
    report = await engine.sweep()
    print(await engine.explain("episode", memory_id))
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import structlog

from ethos import consolidation, db, logs
from ethos.consolidation import ConsolidationReport
from ethos.embedding import Embedder, ProviderUnavailable, check_dimension, configured, embed
from ethos.errors import InputError, NotFoundError
from ethos.explain import explain, forecast
from ethos.inputs import MemoryInput, aware, content_text, parse_id, vector_literal
from ethos.ltp import LtpBuffer
from ethos.policies import Policy
from ethos.recovery import RecoveryReport, Selector, recover
from ethos.retrieval import Hit, recall, search
from ethos.roles import Roles
from ethos.settings import Settings, load_settings
from ethos.store import Row, Store
from ethos.sweep import MODES, Mode, Progress, SweepReport, run_sweep
from ethos.tables import FACTS, MEMORY_TABLES, SOURCE_TABLES, TableSpec, table_spec

log = structlog.get_logger("ethos.engine")

MAX_LIST = 1000  # memories one listing returns at most


@dataclass(frozen=True)
class Added:
    """What an add did: the memory's id, whether it is new, and, for a repeat of a live
    memory, what the repeat raised on it (pinned, metadata, importance, policy)."""

    id: uuid.UUID
    created: bool
    raised: tuple[str, ...] = ()
    recalled: tuple[Hit, ...] = ()  # add with recall: what the new text recalled first


def _lives_longer(asked: Policy, current: Policy | None) -> bool:
    """`asked` keeps a plain memory longer than `current` (None: a policy no longer
    configured, left as it is); never decaying is longest."""
    if current is None:
        return False
    mine, theirs = asked.lifetime_days, current.lifetime_days
    return theirs is not None and (mine is None or mine > theirs)


class Engine:
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
    ) -> None:
        logs.library_default()
        self.settings = settings or load_settings()
        # Texts to vectors: the one given, else the provider the settings name, else none.
        self.embedder = embedder or configured(self.settings.embedding)
        self._drains_queue = drains_queue  # apply the durable retrieval queue (the daemon)
        self._url = url
        self._store = store
        self._owns_store = store is None
        self._open = False

    async def __aenter__(self) -> Engine:
        if self._store is None:
            url = self._url or await db.resolve_url(self.settings)
            self._store = await Store.open(self.settings, url)
        self._open = True
        await self.store.sync_settings()
        self.ltp = LtpBuffer(self.store, self.settings, drains_queue=self._drains_queue)
        self.ltp.start()
        return self

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

    async def add(
        self, table: str | TableSpec, *, agent_id: str, content: str, **fields: Any
    ) -> uuid.UUID:
        """Insert one memory and return its id (an existing one's if it is a duplicate,
        see add_memory)."""
        memory_id, _ = await self.add_memory(table, agent_id=agent_id, content=content, **fields)
        return memory_id

    async def add_memory(
        self, table: str | TableSpec, *, agent_id: str, content: str, **fields: Any
    ) -> tuple[uuid.UUID, bool]:
        """(its id, whether it was created): see add_detailed."""
        added = await self.add_detailed(table, agent_id=agent_id, content=content, **fields)
        return added.id, added.created

    async def add_detailed(
        self,
        table: str | TableSpec,
        *,
        agent_id: str,
        content: str,
        recall: int = 0,
        **fields: Any,
    ) -> Added:
        """Insert one memory. See MemoryInput for the fields each table accepts.
        `policy` names its decay policy; without it, `importance` (0..1) picks one, else
        the agent's policy applies, else decay.default_policy.

        Where dedup is on for the table, a memory of the agent with the same normalised
        content (a vector: and an embedding at least dedup.near_threshold similar) that
        is still live (not pruned, expired or below its threshold) is found instead: it
        gets one retrieval (at created_at, if given), and what the repeat asks beyond it
        (a pin, a longer-lived policy, a higher importance, metadata keys it lacks) is
        given to it and named in `raised`.

        With `recall` = k > 0 the new text first recalls the agent's k best memories at
        the memory's moment, which are reinforced as any recall's hits are (what the
        conversation returns to lives longer), then it is stored: `recalled`."""
        if not isinstance(recall, int) or isinstance(recall, bool) or not 0 <= recall <= 100:
            raise InputError(f"recall must be a whole number from 0 to 100, not {recall!r}")
        if fields.get("policy") is not None:
            self.settings.policy(fields["policy"])
        spec = table_spec(table)
        content = content_text(content)  # before a provider is asked to embed it
        embedded = None  # the vector of an episode or fact, written with it
        if self.embedder is not None:
            if spec.has_embedding and fields.get("embedding") is None:
                fields["embedding"] = await self._embed(content, spec, required=True)
            elif spec in SOURCE_TABLES:
                embedded = await self._embed(content, spec, required=False)
        memory = MemoryInput.build(
            spec, self.settings.embedding.dimension, agent_id=agent_id, content=content, **fields
        )
        recalled: list[Hit] = []
        if recall:
            recalled = await self.recall(agent_id, content, recall, at=memory.created_at)
        dedup = spec.alias in self.settings.dedup.tables
        memory_id, created = await self.store.insert(
            memory, dedup=dedup, near=self.settings.dedup.near_threshold, embedded=embedded
        )
        if created:
            return Added(memory_id, True, recalled=tuple(recalled))
        raised = await self._raise_repeat(memory, memory_id)
        await self.ltp.record(memory.table, [memory_id], memory.created_at or datetime.now(UTC))
        return Added(memory_id, False, raised, tuple(recalled))

    async def _raise_repeat(self, memory: MemoryInput, memory_id: uuid.UUID) -> tuple[str, ...]:
        row = await self.store.raise_repeat(memory, memory_id)
        raised = [name for name in ("pinned", "metadata", "importance") if row[name]]
        asked = memory.policy or (
            self.settings.importance.pick(memory.importance)
            if memory.importance is not None
            else None
        )
        if asked is not None and _lives_longer(
            self.settings.policy(asked), self.settings.policy_table.get(row["policy"])
        ):
            await self.store.move(memory.table, memory_id, asked, await self._moment(None))
            raised.append("policy")
        return tuple(raised)

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

    async def embed_missing(self, agent: str | None = None) -> dict[str, int]:
        """Vectors for the live episodes and facts (of one agent, or all) that have none,
        in batches of embedding.batch_size: how many were made per table."""
        if self.embedder is None:
            raise InputError('no embedding provider: set [embedding] provider = "openai"')
        made: dict[str, int] = {}
        for spec in SOURCE_TABLES:
            made[spec.name], after = 0, uuid.UUID(int=0)
            limit = self.settings.embedding.batch_size
            while rows := await self.store.missing_vectors(spec, agent, after, limit):
                texts = [row["content"] for row in rows]
                vectors = await embed(
                    self.embedder, texts, self.settings.embedding, role="document"
                )
                ids = [row["id"] for row in rows]
                made[spec.name] += await self.store.insert_source_vectors(spec, ids, vectors)
                after = ids[-1]
        return made

    async def move(
        self,
        table: str | TableSpec,
        memory_id: str | uuid.UUID,
        policy: str,
        *,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Move a live memory to another policy. Its curve is re-anchored at `now` (its
        strength then on the old curve), so its salience goes on from there."""
        self.settings.policy(policy)
        spec = table_spec(table)
        at = await self._moment(now)
        row = await self.store.move(spec, parse_id(memory_id), policy, at)
        return {
            "table": spec.name,
            "id": str(row["id"]),
            "policy": row["policy"],
            "old_policy": row["old_policy"],
            "salience": row["salience"],
            "now": at.isoformat(),
        }

    async def policies(self) -> list[Policy]:
        """The policies in the database: the settings' (written when the engine opened),
        and any no longer configured that memories may still have."""
        return await self.store.policies()

    async def policy_agents(self, name: str) -> list[str]:
        """The agents whose new memories get this policy."""
        return [row["agent_id"] for row in await self.store.policy_agents(name)]

    async def assign_policy(self, agent_id: str, policy: str) -> None:
        """From now on, memories of this agent that name no policy (nor importance) get
        this one."""
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise InputError("agent is required")
        self.settings.policy(policy)
        await self.store.assign_policy(agent_id, policy)

    async def unassign_policy(self, agent_id: str) -> str | None:
        """Back to the default; returns the policy the agent had (None: it had none)."""
        return await self.store.unassign_policy(agent_id)

    async def sweep(
        self,
        *,
        now: datetime | None = None,
        tables: Iterable[str | TableSpec] | None = None,
        agent: str | None = None,
        dry_run: bool = False,
        mode: Mode = "due",
        trigger: str = "manual",
        daemon_id: str | None = None,
        stop: asyncio.Event | None = None,
        progress: Progress | None = None,
    ) -> SweepReport:
        """Decay and prune at `now` (the database's clock by default): the rows that are
        due (mode "due"), only those due to be pruned ("prune"), or every live row
        ("full"). A set `stop` ends the sweep at the next batch boundary."""
        if mode not in MODES:
            raise InputError(f"unknown sweep mode {mode!r}: use one of {', '.join(MODES)}")
        specs = _specs(tables)
        return await run_sweep(
            self.store,
            self.settings,
            now=aware(now, "now") if now else None,
            tables=specs,
            agent=agent,
            dry_run=dry_run,
            mode=mode,
            trigger=trigger,
            daemon_id=daemon_id,
            stop=stop,
            progress=progress,
        )

    async def explain(
        self, table: str | TableSpec, memory_id: str | uuid.UUID, *, now: datetime | None = None
    ) -> dict[str, Any]:
        spec = table_spec(table)
        row = await self.store.fetch(spec, parse_id(memory_id))
        at = await self._moment(now)
        account = explain(spec, row, at, await self.store.policy(row["policy"]))
        if row["auto_importance"] is not None:  # which of its words made it (as they stand)
            words = await self.store.rare_words(row["agent_id"], row["content_tsv"])
            account["importance"] = round(row["auto_importance"], 4)
            account["importance_from"] = "automatic: " + ", ".join(
                "a number " + repr(w) if w[0].isdigit() else repr(w) for w in words
            )
        return account

    async def search(
        self,
        agent_id: str,
        embedding: Sequence[float],
        k: int = 10,
        *,
        now: datetime | None = None,
        record: bool = True,
        expand: bool = False,
    ) -> list[Hit]:
        """Nearest live vectors of agent_id, ranked by similarity × the salience prior; with
        `expand` (or search.link_weight > 0) their linked memories join the results.

        Returns at once; the hits are recorded as surfaced (record=False: not at all).
        """
        return await search(
            self.store,
            self.ltp if record else None,
            self.settings,
            agent=agent_id,
            embedding=embedding,
            k=k,
            now=aware(now, "now") if now else datetime.now(UTC),
            expand=expand,
        )

    async def recall(
        self,
        agent_id: str,
        query: str,
        k: int = 10,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        at: datetime | None = None,
        record: bool = True,
    ) -> list[Hit]:
        """The agent's live memories (in every table, or those named) that best answer
        `query`: by BM25 × the salience prior, or, with an embedding provider, text and
        vector scores normalised and fused, × the prior. Returns at once; the
        hits are recorded as surfaced, as search does (record=False: not at all)."""
        return await recall(
            self.store,
            self.ltp if record else None,
            self.settings,
            self.embedder,
            agent=agent_id,
            query=query,
            k=k,
            tables=_specs(tables),
            now=aware(at, "at") if at else datetime.now(UTC),
        )

    async def record_retrieval(
        self,
        table: str | TableSpec,
        ids: Iterable[str | uuid.UUID],
        *,
        now: datetime | None = None,
    ) -> None:
        """Schedule LTP for memories an agent read by other means; a repeated id counts
        as repeated retrievals. Applied in the background, and at the latest on close."""
        spec = table_spec(table)
        parsed = [parse_id(i) for i in ids]
        moment = aware(now, "now") if now else datetime.now(UTC)
        await self.ltp.record(spec, parsed, moment)

    async def feedback(
        self,
        table: str | TableSpec,
        ids: Iterable[str | uuid.UUID],
        kind: str,
        *,
        at: datetime | None = None,
    ) -> None:
        """The agent used these memories ("useful": a retrieval, counted as useful) or
        they were wrong ("wrong": strength, and a fact's confidence, times
        feedback.wrong_factor; pruned with reason feedback below the threshold). Several
        ids in one call: their links learn too. Applied like LTP, exactly once."""
        if kind not in ("useful", "wrong"):
            raise InputError(f"feedback is 'useful' or 'wrong' (got {kind!r})")
        spec = table_spec(table)
        parsed = [parse_id(i) for i in ids]
        if not parsed:
            raise InputError("feedback needs at least one id")
        moment = aware(at, "at") if at else datetime.now(UTC)
        await self.ltp.record(spec, parsed, moment, "useful" if kind == "useful" else "wrong")

    async def links(
        self, table: str | TableSpec, memory_id: str | uuid.UUID, *, now: datetime | None = None
    ) -> list[dict[str, Any]]:
        """A memory's associations, strongest first: the other memory's table and id, and
        the link's weight at `now`."""
        spec = table_spec(table)
        memory = parse_id(memory_id)
        await self.store.fetch(spec, memory)  # one line if it does not exist
        at = await self._moment(now)
        return [
            {
                "table": row["table_name"],
                "id": str(row["id"]),
                "weight": row["weight"],
                "weighted_at": row["weighted_at"].isoformat(),
                "co_retrievals": row["co_retrievals"],
                "useful": row["useful_count"],
                "wrong": row["wrong_count"],
            }
            for row in await self.store.links(spec, memory, at)
        ]

    async def check_ids(self, table: str | TableSpec, ids: Iterable[str | uuid.UUID]) -> None:
        """Each id names a row of `table` (live or pruned), else NotFoundError names the
        others. record_retrieval and feedback skip unknown ids instead (they must not need
        the database when called: a blip delays them, it does not refuse them)."""
        spec = table_spec(table)
        parsed = [parse_id(i) for i in ids]
        if not parsed:
            raise InputError("give at least one id")
        tables = {row["id"]: row["table_name"] for row in await self.store.locate(parsed)}
        unknown = list(dict.fromkeys(str(i) for i in parsed if tables.get(i) != spec.name))
        if unknown:
            raise NotFoundError(f"no {spec.name} row with id {', '.join(unknown)}", unknown)

    async def locate(
        self, ids: Iterable[str | uuid.UUID], *, agent: str | None = None
    ) -> dict[TableSpec, list[uuid.UUID]]:
        """The memories by table, for callers that know only ids (ids are unique across
        tables). An unknown id, or one of another agent than `agent`, is an error."""
        parsed = [parse_id(i) for i in ids]
        if not parsed:
            raise InputError("give at least one id")
        rows = {row["id"]: row for row in await self.store.locate(parsed)}
        unknown = [
            str(i) for i in parsed if i not in rows or agent not in (None, rows[i]["agent_id"])
        ]
        if unknown:
            whose = f" of agent {agent}" if agent else ""
            raise NotFoundError(f"no memory{whose} with id {', '.join(unknown)}")
        found: dict[TableSpec, list[uuid.UUID]] = {}
        for memory_id in parsed:
            found.setdefault(table_spec(rows[memory_id]["table_name"]), []).append(memory_id)
        return found

    # --- memories a client names by key (the LangGraph store keeps items as facts) ----

    async def get_item(self, agent: str, key: str, *, record: bool = True) -> Row | None:
        """The live, unexpired fact of `agent` with this client key; with `record`,
        retrieved (LTP, in the background)."""
        now = datetime.now(UTC)
        row = await self.store.get_item(agent, key, now)
        if row is not None and record:
            await self.ltp.record(FACTS, [row["id"]], now)
        return row

    async def put_item(
        self,
        agent: str,
        key: str,
        value: Mapping[str, Any],
        *,
        content: str,
        embedding: list[float] | None = None,
        ttl_minutes: float | None = None,
    ) -> bool:
        """Store `value` as the fact of `agent` under `key` (its text: `content`), or
        replace the value of the one there, which keeps its history. True if new."""
        if not isinstance(value, Mapping):
            raise InputError("an item's value must be a JSON object")
        content = content_text(content)
        if embedding is not None:
            check_dimension([embedding], self.settings.embedding.dimension)
        now = datetime.now(UTC)
        expires_at = None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes)
        row = await self.store.put_item(
            agent, key, content=content, value=json.dumps(value), expires_at=expires_at,
            now=now, embedding=embedding,
        )  # fmt: skip
        created: bool = row["created"]
        return created

    async def delete_item(self, agent: str, key: str) -> bool:
        """Forget the item (a soft delete, reason manual: `ethos recover` brings it back)."""
        return await self.store.delete_item(agent, key, datetime.now(UTC))

    async def search_items(
        self,
        prefix: str,
        *,
        text: str | None = None,
        embedding: list[float] | None = None,
        contains: Mapping[str, Any] | None = None,
        path: str = "true",
        variables: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        record: bool = True,
    ) -> list[Row]:
        """Items of the agent `prefix` and of agents under it ("prefix.*"), passing the
        filter (containment, and a jsonpath predicate over `variables`): by similarity
        to `embedding` × salience, else by text rank of `text` × salience, else newest
        first. With `record`, the results are surfaced (LTP), as search does."""
        now = datetime.now(UTC)
        ranked_by = "vector" if embedding is not None else "text" if text else None
        rows = await self.store.search_items(
            ranked_by, prefix=prefix, text=text, embedding=embedding,
            contains=json.dumps(dict(contains or {})), path=path,
            vars=json.dumps(dict(variables or {})), limit=limit, offset=offset, now=now,
        )  # fmt: skip
        if rows and record:
            await self.ltp.record(FACTS, [row["id"] for row in rows], now, "surfaced")
        return rows

    async def item_namespaces(self) -> list[str]:
        """The agents that hold live items."""
        return await self.store.item_namespaces()

    async def stats(self, agent: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """What the monitoring views say, for one agent or all."""
        return await self.store.stats(agent)

    async def recover(
        self,
        table: str | TableSpec,
        selector: Selector,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        command: str = "api",
    ) -> RecoveryReport:
        """Bring pruned memories back with a fresh start (recovery.salience, anchored
        at now); dry_run lists them and changes nothing."""
        spec = table_spec(table)
        return await recover(
            self.store,
            self.settings,
            spec,
            selector,
            now=await self._moment(now),
            dry_run=dry_run,
            command=command,
        )

    async def consolidate(
        self,
        tables: Iterable[str | TableSpec] | None = None,
        *,
        agent: str | None = None,
        near: bool = False,
        now: datetime | None = None,
        dry_run: bool = False,
        trigger: str = "api",
    ) -> ConsolidationReport:
        """Merge duplicates already in the tables (exact; with `near`, near-duplicate
        vectors too); dry_run counts what would merge and changes nothing."""
        return await consolidation.merge_duplicates(
            self.store,
            self.settings,
            now=await self._moment(now),
            tables=_specs(tables),
            agent=agent,
            near=near,
            dry_run=dry_run,
            trigger=trigger,
        )

    async def forget(
        self,
        table: str | TableSpec,
        ids: Iterable[str | uuid.UUID],
        *,
        now: datetime | None = None,
        trigger: str = "api",
    ) -> ConsolidationReport:
        """Soft-delete memories on request (reason manual; `recover` brings them back)."""
        parsed = [parse_id(i) for i in ids]
        if not parsed:
            raise InputError("forget needs at least one id")
        return await consolidation.forget(
            self.store,
            table_spec(table),
            parsed,
            now=await self._moment(now),
            trigger=trigger,
        )

    async def purge(
        self,
        pruned_before: datetime,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        agent: str | None = None,
        reason: str | None = None,
        now: datetime | None = None,
        dry_run: bool = False,
        trigger: str = "api",
    ) -> ConsolidationReport:
        """Hard-delete memories pruned before `pruned_before`, with their links: not
        recoverable. dry_run counts them and changes nothing."""
        return await consolidation.purge(
            self.store,
            self.settings,
            pruned_before=aware(pruned_before, "pruned_before"),
            now=await self._moment(now),
            tables=_specs(tables),
            agent=agent,
            reason=reason,
            dry_run=dry_run,
            trigger=trigger,
        )

    async def erase(
        self, agent: str, *, dry_run: bool, trigger: str = "api"
    ) -> ConsolidationReport:
        """Hard-delete everything of one agent (every table, links, policy assignment,
        its retrievals still buffered here): not recoverable. dry_run counts it."""
        if not dry_run:
            await self.ltp.drain(self.settings.ltp.close_timeout_seconds)
        return await consolidation.erase(
            self.store, self.settings, agent, now=await self.store.now(), dry_run=dry_run,
            trigger=trigger,
        )  # fmt: skip

    async def make_roles(
        self,
        app: str,
        eraser: str,
        agents: Iterable[tuple[str, str]] = (),
        *,
        dry_run: bool = False,
    ) -> list[str]:
        """Create or update the app, eraser and agent roles (ethos.roles) with exactly
        their rights; run as the schema's owner. The statements (a dry run changes
        nothing)."""
        roles = Roles(app, eraser, tuple(agents))
        return await self.store.make_roles(roles, dry_run=dry_run)

    async def status(self, alive_seconds: float) -> dict[str, Any]:
        """Daemons with a heartbeat in the last alive_seconds, who holds the sweep lock,
        the last sweep; and this engine's own LTP counters."""
        status = await self.store.status(alive_seconds)
        status["ltp"] = {
            "backlog": self.ltp.backlog,
            "queue_backlog": await self.store.queue_backlog(),
            **self.ltp.stats.as_dict(),
        }
        return status

    async def count_live(self, table: str | TableSpec, agent: str | None = None) -> int:
        """Live memories in a table, of one agent or all."""
        return await self.store.count_live(table_spec(table), agent)

    async def count_due(self, table: str | TableSpec, now: datetime, *, prune: bool = False) -> int:
        """Hints of work due by `now` in a table (an upper bound on the rows a due
        sweep, or with prune a prune pass, would look at)."""
        return await self.store.count_due(table_spec(table), aware(now, "now"), prune=prune)

    async def pruned_at(self, agent: str, at: datetime) -> list[Row]:
        """The memories of an agent that a sweep at exactly `at` pruned."""
        return await self.store.pruned_at(agent, aware(at, "at"))

    async def now(self) -> datetime:
        """The database's clock."""
        return await self.store.now()

    # --- what front ends list and change by id (the HTTP API, the dashboard) -------------

    async def agents(self) -> list[dict[str, Any]]:
        """Every agent with its memories counted: live, pruned and pinned, per table."""
        agents: dict[str, dict[str, Any]] = {}
        for row in await self.store.agent_counts():
            entry = agents.setdefault(
                row["agent_id"], {"agent_id": row["agent_id"], "live": 0, "pruned": 0, "tables": {}}
            )
            entry["live"] += row["live"]
            entry["pruned"] += row["pruned"]
            entry["tables"][row["table_name"]] = {
                name: row[name] for name in ("live", "pruned", "pinned")
            }
        return list(agents.values())

    async def memories(
        self,
        agent: str | None = None,
        *,
        tables: Iterable[str | TableSpec] | None = None,
        pruned: bool = False,
        limit: int = 50,
        offset: int = 0,
        now: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """Memories of one agent (or all), each described as `explain` does, with its
        content and metadata: live ones newest first, or (pruned) the most recently
        pruned first. Listing retrieves nothing."""
        if not 1 <= limit <= MAX_LIST or offset < 0:
            raise InputError(f"limit is 1..{MAX_LIST} and offset at least 0")
        at = await self._moment(now)
        found: list[tuple[TableSpec, Row]] = []
        for spec in _specs(tables):
            rows = await self.store.list_memories(
                spec, agent, pruned=pruned, limit=limit + offset, offset=0
            )
            found += [(spec, row) for row in rows]
        order = "pruned_at" if pruned else "created_at"
        found.sort(key=lambda pair: (pair[1][order], pair[1]["id"]), reverse=True)
        policies = {p.name: p for p in await self.store.policies()}
        return [
            describe(spec, row, at, policies[row["policy"]])
            for spec, row in found[offset : offset + limit]
        ]

    async def memory(
        self,
        memory_id: str | uuid.UUID,
        *,
        agent: str | None = None,
        record: bool = False,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """One memory by id (of `agent`, when given), described as `memories` does; with
        `record`, a live one is retrieved (LTP), as an agent reading it."""
        [(spec, [found])] = (await self.locate([memory_id], agent=agent)).items()
        row = await self.store.fetch(spec, found)
        if record and not row["pruned"]:
            await self.ltp.record(spec, [found], datetime.now(UTC))
        at = await self._moment(now)
        return describe(spec, row, at, await self.store.policy(row["policy"]))

    async def update(
        self,
        table: str | TableSpec,
        memory_id: str | uuid.UUID,
        *,
        content: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Replace a live memory's text and/or metadata; its curve, retrievals and links
        stay. A new text is embedded again where the memory has a vector (a provider)."""
        spec = table_spec(table)
        if content is None and metadata is None:
            raise InputError("give the new text or metadata")
        if content is not None:
            content = content_text(content)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InputError("metadata must be a JSON object")
        embedding = None
        if content is not None and (spec.has_embedding or spec in SOURCE_TABLES):
            if self.embedder is not None:
                vector = await self._embed(content, spec, required=spec.has_embedding)
                embedding = vector_literal(vector) if vector is not None else None
            elif spec.has_embedding:
                raise InputError("a vector's text changes with its embedding: set a provider")
        await self.store.update_memory(
            spec, parse_id(memory_id), content=content,
            metadata=None if metadata is None else json.dumps(dict(metadata)),
            embedding=embedding, now=await self._moment(now),
        )  # fmt: skip

    async def forget_agent(
        self, agent: str, *, now: datetime | None = None, trigger: str = "api"
    ) -> ConsolidationReport:
        """Soft-delete every live memory of one agent (reason manual; `recover` with the
        agent brings them back)."""
        if not isinstance(agent, str) or not agent.strip():
            raise InputError("agent is required")
        return await consolidation.forget_agent(
            self.store, agent, now=await self._moment(now), trigger=trigger
        )

    async def history(
        self, table: str | TableSpec, memory_id: str | uuid.UUID
    ) -> list[dict[str, Any]]:
        """What happened to a memory, oldest first: added (with its first text), updated
        (each replaced text with the one before it, `old`; a change of metadata only
        without), recovered by id, pruned (with the reason)."""
        spec = table_spec(table)
        row = await self.store.fetch(spec, parse_id(memory_id))
        revisions = await self.store.revisions_of(spec, row["id"])
        texts = [r["content"] for r in revisions] + [row["content"]]
        events: list[dict[str, Any]] = [
            {"event": "add", "at": row["created_at"], "content": texts[0]}
        ]
        for i, revision in enumerate(revisions):
            events.append({"event": "update", "at": revision["revised_at"],
                           "old": texts[i], "content": texts[i + 1]})  # fmt: skip
        if not revisions and row["updated_at"] is not None:
            events.append({"event": "update", "at": row["updated_at"], "content": texts[0]})
        for recovery in await self.store.recoveries_of(spec, row["id"]):
            events.append({"event": "recover", "at": recovery["recovered_as_of"],
                           "command": recovery["command"]})  # fmt: skip
        if row["pruned"]:
            events.append({"event": "prune", "at": row["pruned_at"], "reason": row["prune_reason"]})
        return sorted(events, key=lambda event: event["at"])

    async def pruned_by_reason(
        self, agent: str | None = None, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Pruned memories counted by table and reason (since a moment, or ever)."""
        at = aware(since, "since") if since else None
        return [dict(row) for row in await self.store.pruned_by_reason(agent, at)]


def describe(spec: TableSpec, row: Row, at: datetime, policy: Policy) -> dict[str, Any]:
    """A memory as front ends show it: `explain`'s account, its text and metadata."""
    metadata = row["metadata"]
    account = explain(spec, row, at, policy)
    until = datetime.fromisoformat(account["prunes_at"]) if account["prunes_at"] else None
    return {
        **account,
        "forecast": [] if row["pruned"] else forecast(spec, row, at, policy, until),
        "content": row["content"],
        "metadata": json.loads(metadata) if isinstance(metadata, str) else metadata,
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat() if row["updated_at"] else None,
    }


def _specs(tables: Iterable[str | TableSpec] | None) -> tuple[TableSpec, ...]:
    if tables is None:
        return MEMORY_TABLES
    return tuple(table_spec(t) for t in tables)
