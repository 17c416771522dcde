"""Adding memories (dedup, the raise of a repeat, add with recall), the vectors they
lack, and why a memory has its salience."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ethos.db.store import Row
from ethos.domain.errors import InputError
from ethos.domain.explain import Account, explain, prunes_at
from ethos.domain.inputs import (
    MAX_IMPORT_LINES,
    ImportLine,
    MemoryInput,
    at_most,
    content_text,
    embedding,
    first_words,
    import_line,
    metadata_json,
    not_ahead,
)
from ethos.domain.lifetimes import forgotten_in
from ethos.domain.policies import Policy
from ethos.domain.tables import MEMORY_TABLES, SOURCE_TABLES, TableSpec, table_spec
from ethos.services.embedding import embed
from ethos.services.engine.retrieval import RetrievalEngine
from ethos.services.progress import Watch
from ethos.services.retrieval import Hit


@dataclass(frozen=True)
class Added:
    """What an add did: the memory's id, whether it is new, its policy and when it will
    be forgotten if never used (prunes_at, None: never; seen at `at`, the add's
    moment), whether that is sooner than under decay.default_policy (short_lived), and,
    for a repeat of a live memory, what the repeat raised on it (pinned, metadata,
    importance, policy)."""

    id: uuid.UUID
    created: bool
    policy: str
    prunes_at: datetime | None
    at: datetime
    short_lived: bool = False
    raised: tuple[str, ...] = ()
    recalled: tuple[Hit, ...] = ()  # add with recall: what the new text recalled first
    default_policy: str = ""  # decay.default_policy: what a warning offers

    def answer(self) -> dict[str, Any]:
        """lifetime() as the API answers it (remember, mem0's add): for a short-lived
        memory with a warning naming the arguments that keep it."""
        warning = self.warning(f"give policy={self.default_policy!r} or an importance to keep it")
        return self.lifetime() | ({"warning": warning} if warning else {})

    def lifetime(self) -> dict[str, Any]:
        """The policy and the forgetting, as the doors answer them."""
        return {"policy": self.policy,
                "prunes_at": None if self.prunes_at is None else self.prunes_at.isoformat(),
                "forgotten_in": forgotten_in(self.prunes_at, self.at)}  # fmt: skip

    def warning(self, keep: str) -> str | None:
        """For a short-lived memory, when it goes and how to keep it (`keep`: what the
        caller gives, in its door's words); None for the others."""
        if not self.short_lived:
            return None
        return f"forgotten in {forgotten_in(self.prunes_at, self.at)} unless used; {keep}"


@dataclass(frozen=True)
class VectorsMade:
    """The vectors embed_missing wrote, by source table (each table, 0 included)."""

    by_table: dict[str, int]

    def as_dict(self) -> dict[str, int]:
        return dict(self.by_table)


# An import writes this many lines a transaction (its CLI's --batch-size): a statement
# a table, whose start and whose write-path statement trigger are paid once for them all.
IMPORT_BATCH = 2000
MAX_IMPORT_BATCH = 100_000
# How often the check of an import's lines lets a signal in (a stop before any write).
_CHECKED_BETWEEN_SIGNALS = 1000


@dataclass(frozen=True)
class Imported:
    """What an import wrote, by table (each table, 0 included), and the last line it
    wrote (0: none): the lines after it are what an interrupted import has left."""

    by_table: dict[str, int]
    through_line: int

    def as_dict(self) -> dict[str, Any]:
        return {"written": dict(self.by_table), "through_line": self.through_line}


def _lives_longer(asked: Policy, current: Policy | None) -> bool:
    """`asked` keeps a plain memory longer than `current` (None: a policy no longer
    configured, left as it is); never decaying is longest."""
    if current is None:
        return False
    mine, theirs = asked.lifetime_days, current.lifetime_days
    return theirs is not None and (mine is None or mine > theirs)


class MemoryEngine(RetrievalEngine):
    """Add (recalling first, with `recall`), embed what lacks a vector, explain."""

    async def add(
        self, table: str | TableSpec, *, agent_id: str, content: str, **fields: Any
    ) -> uuid.UUID:
        """Insert one memory and return its id (an existing one's if it is a duplicate,
        see add_detailed)."""
        return (await self.add_detailed(table, agent_id=agent_id, content=content, **fields)).id

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
        conversation returns to lives longer), then it is stored: `recalled`.

        A `created_at` over a minute ahead of the database's clock is refused (a typo
        would make a memory that does not decay for years) unless `allow_future`."""
        if not isinstance(recall, int) or isinstance(recall, bool) or not 0 <= recall <= 100:
            raise InputError(f"recall must be a whole number from 0 to 100, not {recall!r}")
        spec = table_spec(table)
        allow_future = fields.pop("allow_future", False)
        memory, embedded = await self._input(spec, agent_id, content, fields)
        await self._not_ahead(memory.created_at, allow_future)
        recalled: list[Hit] = []
        if recall:  # a long text recalls by its first words, as a query may have no more
            query = first_words(memory.content, self.settings.limits.query_words)
            recalled = await self.recall(agent_id, query, recall, now=memory.created_at)
        [(memory_id, row)] = await self.store.insert_many(
            [memory], dedup_near=self._dedup_near(spec), embedded=[embedded]
        )
        return await self._added(memory, memory_id, row, tuple(recalled))

    async def add_many(
        self,
        table: str | TableSpec,
        *,
        agent_id: str,
        contents: Sequence[str],
        metadata_each: Sequence[Mapping[str, Any]] | None = None,
        **fields: Any,
    ) -> list[Added]:
        """Insert one memory per content, each with the same fields, as add_detailed
        does each (without recall): every content is checked first, then all are written
        in one transaction, so an error stores none of them (a duplicate is of the same
        mem0 owners, metadata.mem0, as each). `metadata_each`: each content's own
        metadata, instead of `metadata`; `allow_future`: as add_detailed's."""
        spec = table_spec(table)
        if not contents:
            raise InputError("give at least one content")
        at_most("the number of memories", len(contents), self.settings.limits.ids, "limits.ids")
        allow_future = fields.pop("allow_future", False)
        each = [{"metadata": m} for m in metadata_each] if metadata_each else [{}] * len(contents)
        built = [
            await self._input(spec, agent_id, content, {**fields, **own})
            for content, own in zip(contents, each, strict=True)
        ]
        await self._not_ahead(built[0][0].created_at, allow_future)
        found = await self.store.insert_many(
            [memory for memory, _ in built], dedup_near=self._dedup_near(spec),
            embedded=[vector for _, vector in built],
        )  # fmt: skip
        return [
            await self._added(memory, memory_id, row)
            for (memory, _), (memory_id, row) in zip(built, found, strict=True)
        ]

    async def import_lines(
        self,
        lines: Callable[[], Iterable[str]],
        *,
        allow_future: bool = False,
        batch_size: int = IMPORT_BATCH,
        watch: Watch | None = None,
    ) -> Imported:
        """Memories from JSON lines (inputs.import_line: a table, agent, content and the
        fields add takes), read twice from `lines()`. First every line is checked as add
        checks its memory (a blank one is skipped): a bad one is refused with its number
        and nothing is written. Then they are written `batch_size` lines a transaction,
        one statement a table, through the write path as any insert: automatic
        importance is measured, each line of a batch seeing its agent's words as they
        were before the batch. Unlike add, a line is never found a duplicate of a memory
        (`merge` merges them), and no provider embeds it (`embed_missing` does). `watch`
        counts the memories written and stops the writing after a batch."""
        if isinstance(batch_size, bool) or not 1 <= batch_size <= MAX_IMPORT_BATCH:
            raise InputError(f"batch_size must be from 1 to {MAX_IMPORT_BATCH:,}")
        watch = watch or Watch()
        total = 0
        for number, memory in self._import_read(lines):
            total += 1
            await self._not_ahead_line(number, memory.created_at, allow_future)
            if total % _CHECKED_BETWEEN_SIGNALS == 0:
                await asyncio.sleep(0)  # a Ctrl-C now stops the import before it writes
                if watch.stop.is_set():
                    break
        written = dict.fromkeys((spec.name for spec in MEMORY_TABLES), 0)
        if watch.stopping():
            return Imported(written, 0)
        watch.start(total)
        read, done = self._import_read(lines), 0
        while (
            done < total
            and not watch.stopping()
            and (batch := list(itertools.islice(read, batch_size)))
        ):
            await self.store.insert_set([memory for _, memory in batch])
            for _, memory in batch:
                written[memory.table.name] += 1
            done += len(batch)
            watch.through_line = batch[-1][0]
            watch.add(len(batch))
        if done < total and not watch.interrupted:
            raise InputError(
                f"the lines read again ended after {done:,} memories of {total:,}: lines()"
                " must give them anew at each call"
            )
        return Imported(written, watch.through_line)

    def _import_read(self, lines: Callable[[], Iterable[str]]) -> Iterator[tuple[int, MemoryInput]]:
        """Each line that holds a memory, by its number (from 1), checked as add checks."""
        for number, text in enumerate(lines(), 1):
            if number > MAX_IMPORT_LINES:
                raise InputError(
                    f"line {number:,}: an import reads at most {MAX_IMPORT_LINES:,} lines"
                    " (split the file)"
                )
            if not text.strip():
                continue
            try:
                memory = self._line_input(import_line(text))
            except InputError as exc:
                raise InputError(f"line {number}: {exc}") from None
            yield number, memory

    def _line_input(self, line: ImportLine) -> MemoryInput:
        self._check_settled(line.fields)
        return MemoryInput.build(
            line.table, self.settings.embedding.dimension,
            agent_id=line.agent_id, content=line.content, **line.fields,
        )  # fmt: skip

    async def _not_ahead_line(
        self, number: int, created_at: datetime | None, allow_future: bool
    ) -> None:
        try:
            await self._not_ahead(created_at, allow_future)
        except InputError as exc:
            raise InputError(f"line {number}: {exc}") from None

    async def _input(
        self, spec: TableSpec, agent_id: str, content: str, fields: dict[str, Any]
    ) -> tuple[MemoryInput, list[float] | None]:
        """The memory checked (with its embedding), and the vector of an episode or fact
        to write with it."""
        self._check_settled(fields)
        content = content_text(content)  # before a provider is asked to embed it
        embedded = None
        if spec in SOURCE_TABLES and fields.get("embedding") is not None:
            # an episode's or fact's embedding is no column of it (memory_embeddings)
            embedded = embedding(fields.pop("embedding"), self.settings.embedding.dimension)
        elif self.embedder is not None:
            if spec.has_embedding and fields.get("embedding") is None:
                fields["embedding"] = await self._embed(content, spec, required=True)
            elif spec in SOURCE_TABLES:
                embedded = await self._embed(content, spec, required=False)
        memory = MemoryInput.build(
            spec, self.settings.embedding.dimension, agent_id=agent_id, content=content, **fields
        )
        return memory, embedded

    def _check_settled(self, fields: Mapping[str, Any]) -> None:
        """What the settings say of an add's fields: a configured policy, metadata within
        limits.metadata_bytes."""
        if fields.get("policy") is not None:
            self.settings.policy(fields["policy"])
        if fields.get("metadata") is not None:
            metadata_json(fields["metadata"], self.settings.limits.metadata_bytes)

    async def _not_ahead(self, created_at: datetime | None, allow_future: Any) -> None:
        if created_at is not None and not allow_future:
            effect = "the memory would not begin to decay until then"
            not_ahead("created_at", created_at, await self.store.now(), effect)

    def _dedup_near(self, spec: TableSpec) -> float | None:
        """The similarity a vector's duplicate needs in `spec` (its content must be the
        same too); None: adds to `spec` are not deduplicated."""
        dedup = self.settings.dedup
        return dedup.near_threshold if spec.alias in dedup.tables else None

    async def _added(
        self,
        memory: MemoryInput,
        memory_id: uuid.UUID,
        row: Row | None,
        recalled: tuple[Hit, ...] = (),
    ) -> Added:
        """What an add did (`row`: the new memory as written; None: a repeat); a repeat
        gets what it asks beyond the memory, and a retrieval. Its forgetting is seen at
        the new memory's creation, or (a repeat) as the memory stands after the raise,
        before that retrieval applies (which can only put it off)."""
        spec = memory.table
        if row is not None:
            return await self._lifetime(spec, row, row["created_at"], True, (), recalled)
        raised = await self._raise_repeat(memory, memory_id)
        at = await self._moment(memory.created_at)
        await self.ltp.record(spec, [memory_id], at, agent=memory.agent_id)
        row = await self.store.fetch(spec, memory_id, agent=memory.agent_id)
        return await self._lifetime(spec, row, at, False, raised, recalled)

    async def _lifetime(
        self, spec: TableSpec, row: Row, at: datetime, created: bool,
        raised: tuple[str, ...], recalled: tuple[Hit, ...],
    ) -> Added:  # fmt: skip
        """The Added of `row`, with its policy and when it will be forgotten if unused,
        and whether that policy lives shorter than decay.default_policy."""
        name = row["policy"]
        policy = self.settings.policy_table.get(name) or await self.store.policy(name)
        default = self.settings.decay.default_policy
        return Added(
            row["id"], created, name, prunes_at(spec, row, at, policy), at,
            short_lived=_lives_longer(self.settings.policy(default), policy), raised=raised,
            recalled=recalled, default_policy=default,
        )  # fmt: skip

    async def _raise_repeat(self, memory: MemoryInput, memory_id: uuid.UUID) -> tuple[str, ...]:
        row = await self.store.raise_repeat(memory, memory_id)
        raised = [name for name in ("pinned", "metadata", "importance") if row[name]]
        asked = memory.policy or (
            await self.store.importance_tier(memory.importance)
            if memory.importance is not None
            else None
        )
        if asked is not None and _lives_longer(
            self.settings.policy(asked), self.settings.policy_table.get(row["policy"])
        ):
            now = await self._moment(None)
            await self.store.move(memory.table, memory_id, asked, now, memory.agent_id)
            raised.append("policy")
        return tuple(raised)

    async def embed_missing(
        self, agent: str | None = None, *, watch: Watch | None = None
    ) -> VectorsMade:
        """Vectors for the live episodes and facts (of one agent, or all) that have none,
        in batches of embedding.batch_size: how many were made per table. `watch` follows
        it and stops it after a batch (a rerun embeds the rest)."""
        if self.embedder is None:
            raise InputError(
                'no embedding provider: set [embedding] provider = "local" or "openai"'
            )
        watch = watch or Watch()
        watch.start(sum([await self.store.count_missing_vectors(s, agent) for s in SOURCE_TABLES]))
        made: dict[str, int] = {}
        for spec in SOURCE_TABLES:
            made[spec.name], after = 0, uuid.UUID(int=0)
            limit = self.settings.embedding.batch_size
            while not watch.stopping() and (
                rows := await self.store.missing_vectors(spec, agent, after, limit)
            ):
                texts = [row["content"] for row in rows]
                vectors = await embed(
                    self.embedder, texts, self.settings.embedding, role="document"
                )
                batch = await self.store.insert_source_vectors(spec, rows, vectors)
                made[spec.name] += batch
                watch.add(batch)
                after = rows[-1]["id"]
        return VectorsMade(made)

    async def explain(
        self,
        table: str | TableSpec | None,
        memory_id: str | uuid.UUID,
        *,
        now: datetime | None = None,
        agent: str | None = None,
    ) -> Account:
        """Why a memory (of `agent`, where the caller knows it; of `table`, else found)
        has its salience at `now` (the database's clock by default), and when it will be
        pruned if never retrieved again; an automatic importance with the words that
        made it."""
        (spec, owner), found = await self.whose(memory_id, agent=agent, table=table)
        row = await self.store.fetch(spec, found, agent=owner)
        at = await self._moment(now)
        account = explain(spec, row, at, await self.store.policy(row["policy"]))
        if row["auto_importance"] is None:
            return account
        # which of its words made it (as they stand)
        words = await self.store.rare_words(row["agent_id"], row["content_tsv"], row["content"])
        told = "automatic: " + ", ".join(
            "a number " + repr(w) if w[0].isdigit() else repr(w) for w in words
        )
        if row["auto_particularity"] is not None:
            told += (
                f"; its vector {row['auto_particularity']:.2f}x as particular as the"
                " agent's average"
            )
        if row["auto_answer"] is not None:
            told += f"; it answers a question (its words count {row['auto_answer']:g}x)"
        # (the half as it stands: the agent's average has moved since, if a little)
        scale = await self.store.auto_half(row["agent_id"])
        told += f"; {scale['half']:.1f} such words make 0.5 now" + (
            f" (the agent's memories hold {scale['average']:.1f} words on average)"
            if scale["average"] is not None
            else ""
        )
        return replace(account, importance=round(row["auto_importance"], 4), importance_from=told)
