"""A LangGraph store on ethos: agents built with LangGraph get memories that fade unless
used, without changing their code. Needs the extra: pip install 'ethos[langgraph]'.

    with EthosStore() as store:                       # settings: load_settings()
        graph = builder.compile(store=store)
    async with AsyncEthosStore(index={"dims": 384, "embed": embed}) as store: ...

A namespace is an agent (its labels joined by "."; LangGraph forbids "." in a label, so
the mapping goes both ways); an item is a fact of that agent under its key, its value
the fact's metadata (round-tripped as JSON), its text (the index's fields, else every
string in the value; the value's JSON when that is empty) the fact's content. With an
index, each text of the indexed fields is embedded apart, as LangGraph does: a vector
per text, following the fact (memory_embeddings rows of it, one a field, replaced at each put).
put on an existing key replaces the value and keeps the memory's history; delete is a
soft delete (reason manual, recoverable); abatch writes each run of consecutive puts in
one statement, all or none, the last put of an item winning, as PostgresStore writes a
batch's puts. Single operations issued at once (aget, aput, ... in one turn of the
event loop, as asyncio.gather issues them) run as one batch, as AsyncPostgresStore's
do: equal reads read once (and are one retrieval), an item's puts are its last put in
the place of its first, so operations issued together have no order among them (a
caller's own, awaited in turn, keep theirs); a run of puts or a read that fails fails
its own callers only. ttl (minutes) expires the item; get and search, unless
refresh_ttl is off, move what they return's expiry to now + its ttl (where that moves
it by more than 1% of the ttl) and are retrievals (LTP). An item takes the policy
`policy` (without a ttl; default permanent) or `ttl_policy` (with one; default
long_term), no automatic importance, unless these are None. search lists newest first
without a query; with one it returns every item, as LangGraph's stores do, ranking
first those it matches (with an index by its nearest vector's score with the salience
prior, without one by text rank × salience), then the others (unembedded, or not
matching) newest first, unscored. A vector match's score is LangGraph's for the index's
distance_type: the cosine similarity (an exact match 1.0; the default), the inner
product, or the negative L2 distance; not the score × salience that orders.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path

from ethos.domain.errors import InputError
from ethos.services.embedding import with_role
from ethos.services.engine import Engine, ItemPut
from ethos.services.engine.items import DISTANCES
from ethos.settings import Settings, load_settings

# The decay policy of an item put without a ttl, and with one (a never-decaying policy
# would keep an expired item from the sweep): code written for LangGraph expects an item
# to stay until deleted or expired, where automatic importance would give a short note
# hours. None: ethos's own choice (the agent's policy, automatic importance, default).
KEEP = "permanent"
KEEP_UNTIL_TTL = "long_term"

# LangGraph's filter operators, as SQL/JSON path comparisons.
_OPERATORS = {"$eq": "==", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class AsyncEthosStore(BaseStore):
    """LangGraph's BaseStore over an ethos Engine, for async graphs."""

    supports_ttl = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        policy: str | None = KEEP,
        ttl_policy: str | None = KEEP_UNTIL_TTL,
    ) -> None:
        self.settings = settings or load_settings()
        self.index_config = index
        self.ttl_config = ttl
        for name in (policy, ttl_policy):
            if name is not None:
                self.settings.policy(name)
        self.policy, self.ttl_policy = policy, ttl_policy
        self._embeddings = None
        self._distance = "cosine"
        self._fields: list[str] = ["$"]
        if index is not None:
            dimension = self.settings.embedding.dimension
            if index.get("dims") != dimension:
                raise InputError(
                    f"index dims {index.get('dims')} differ from the schema's {dimension}"
                    " (embedding.dimension)"
                )
            # As LangGraph's PostgresStore: the distance search ranks by and scores with.
            self._distance = str(dict(index).get("distance_type", "cosine"))
            if self._distance not in DISTANCES:
                raise InputError(
                    f"index distance_type {self._distance!r}: one of {', '.join(DISTANCES)}"
                )
            self._embeddings = ensure_embeddings(index.get("embed"))
            self._fields = list(index.get("fields") or ["$"])
        self._engine: Engine | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # single operations waiting for this turn of the loop to end, and the batches
        # they became, running (awaited before the engine closes)
        self._waiting: list[tuple[Op, asyncio.Future[Result]]] = []
        self._running: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> AsyncEthosStore:
        engine = Engine(self.settings)
        await engine.__aenter__()
        self._engine, self._loop = engine, asyncio.get_running_loop()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        while self._waiting or self._running:  # the batches of operations issued before
            if self._running:
                await asyncio.wait(set(self._running))
            else:
                await asyncio.sleep(0)  # the first caller of the turn gathers them
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.close()  # applies the retrievals recorded

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("the store is not open: use `async with AsyncEthosStore(...)`")
        return self._engine

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """From another thread than the store's loop (LangGraph's sync API)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the store is not open: use `async with AsyncEthosStore(...)`")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # it would wait for itself; the error LangGraph's stores raise
            raise asyncio.InvalidStateError(
                "on the store's own event loop, use abatch (aget, asearch, ...)"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:  # a label with a "." would name another namespace: none runs
            validate_op_namespace(op)
        if len(ops) == 1:  # aget, aput, ...: with the others of this turn of the loop
            return [await self._together(ops[0])]
        return await self._in_order(ops)

    async def _together(self, op: Op) -> Result:
        """`op` run in one batch with the single operations issued in this turn of the
        event loop (a task each, under asyncio.gather): the first of them lets the
        others' steps already scheduled add theirs, then runs them, or itself alone."""
        loop = asyncio.get_running_loop()
        if self._engine is None or loop is not self._loop:
            return (await self._in_order([op]))[0]  # the engine's own message, or error
        future: asyncio.Future[Result] = loop.create_future()
        self._waiting.append((op, future))
        if len(self._waiting) > 1:  # the first of this turn runs it
            return await future
        try:
            await asyncio.sleep(0)
        except BaseException:
            future.cancel()  # its caller is gone; the others run
            raise
        finally:
            waiting, self._waiting = self._waiting, []
            if len(waiting) > 1:
                self._start_batch(waiting)
        if len(waiting) == 1:  # alone: no batch to run for others
            return (await self._in_order([op]))[0]
        return await future

    def _start_batch(self, waiting: list[tuple[Op, asyncio.Future[Result]]]) -> None:
        task = asyncio.get_running_loop().create_task(self._run_together(waiting))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run_together(self, waiting: list[tuple[Op, asyncio.Future[Result]]]) -> None:
        """The operations issued together, merged (equal reads read once, an item's puts
        in the place of the first, where the last wins) and run in order: each run of
        puts in one statement, each read alone. What fails fails its own callers only: a
        run of puts refused (none written; every put is checked, the ones a later put
        replaces too) runs again each caller's put alone, in the order issued, as if
        they had been run one after the other."""
        ops: list[Op] = []
        callers: list[list[tuple[Op, asyncio.Future[Result]]]] = []
        places: dict[Any, int] = {}
        for op, future in waiting:
            if future.done():  # its caller was cancelled
                continue
            place = _merge_key(op)
            at = places.get(place) if place is not None else None
            if at is None:
                if place is not None:
                    places[place] = len(ops)
                ops.append(op)
                callers.append([(op, future)])
            else:
                callers[at].append((op, future))
        parts = itertools.groupby(range(len(ops)), key=lambda i: isinstance(ops[i], PutOp))
        try:
            for puts, run in parts:
                if not puts:
                    for i in run:
                        [result] = await self._settled([ops[i]])
                        _answer([(future, result) for _, future in callers[i]])
                    continue
                each = [caller for i in run for caller in callers[i]]
                results = await self._settled([op for op, _ in each])
                if isinstance(results[0], Exception) and len(each) > 1:
                    # all or none: none was written; a put at a time, each its error
                    results = [(await self._settled([op]))[0] for op, _ in each]
                _answer([(future, r) for (_, future), r in zip(each, results, strict=True)])
        finally:  # cancelled (the loop closing): no caller waits for ever
            for _, future in itertools.chain.from_iterable(callers):
                future.cancel()

    async def _settled(self, ops: list[Op]) -> list[Result | Exception]:
        """The ops' results, or the error each of them gets."""
        try:
            return list(await self._in_order(ops))
        except Exception as error:
            return [error] * len(ops)

    async def _in_order(self, ops: list[Op]) -> list[Result]:
        # In order; each run of puts in one statement (PostgresStore writes a batch's
        # puts at once too), where the last put of an item wins.
        results: list[Result] = []
        for puts, run in itertools.groupby(ops, key=lambda op: isinstance(op, PutOp)):
            if puts:
                put_ops = [op for op in run if isinstance(op, PutOp)]
                await self._put(put_ops)
                results += [None] * len(put_ops)
            else:
                results += [await self._run(op) for op in run]
        return results

    async def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op)
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            return await self._namespaces(op)
        raise InputError(f"unknown store operation {type(op).__name__}")

    async def _get(self, op: GetOp) -> Item | None:
        item = await self.engine.get_item(_agent(op.namespace), op.key, record=op.refresh_ttl)
        if item is None:
            return None
        return Item(value=item.value, key=item.key, namespace=op.namespace,
                    created_at=item.created_at, updated_at=item.updated_at)  # fmt: skip

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        embedding = None
        if op.query and self._embeddings is not None:
            [query] = with_role(self.settings.embedding, [op.query], "query")
            embedding = list(await self._embeddings.aembed_query(query))
        contains, path, variables = _filter(op.filter or {})
        items = await self.engine.search_items(
            _agent(op.namespace_prefix), text=op.query, embedding=embedding,
            distance=self._distance, contains=contains, path=path, variables=variables,
            limit=op.limit, offset=op.offset, record=op.refresh_ttl,
        )  # fmt: skip
        return [
            SearchItem(
                namespace=_namespace(item.agent),
                key=item.key,
                value=item.value,
                created_at=item.created_at,
                updated_at=item.updated_at,
                score=item.score,
            )
            for item in items
        ]

    async def _put(self, ops: list[PutOp]) -> None:
        """The puts in one statement: all of them or none."""
        texts = [self._texts(op) for op in ops]
        vectors = await self._vectors(ops, texts)
        await self.engine.put_items(
            [self._item(*put) for put in zip(ops, texts, vectors, strict=True)]
        )

    def _item(
        self,
        op: PutOp,
        texts: list[tuple[str, str]],
        vectors: list[tuple[str, list[float]]] | None,
    ) -> ItemPut:
        agent = _agent(op.namespace)
        if op.value is None:
            return ItemPut(agent, op.key, None)
        # The texts joined are the fact's content, for text search. A value without the
        # indexed text is still stored (LangGraph's stores keep it, unembedded): a fact
        # needs some text, so its JSON stands in.
        text = " ".join(t for _, t in texts) or json.dumps(op.value, ensure_ascii=False)
        policy = self.policy if op.ttl is None else self.ttl_policy
        return ItemPut(agent, op.key, op.value, content=text, vectors=vectors,
                       ttl_minutes=op.ttl, policy=policy)  # fmt: skip

    def _texts(self, op: PutOp) -> list[tuple[str, str]]:
        """The texts of the put's indexed fields (the index's, unless the put names its
        own), each with its field: the path, and where a path finds several, its place
        among them (path[0], path[1], ...)."""
        if op.value is None:
            return []
        fields = self._fields if op.index is None or op.index is False else list(op.index)
        found = [(f, get_text_at_path(op.value, f)) for f in fields]
        return [
            (f if len(texts) == 1 else f"{f}[{i}]", text)
            for f, texts in found
            for i, text in enumerate(texts)
        ]

    async def _vectors(
        self, ops: list[PutOp], texts: list[list[tuple[str, str]]]
    ) -> list[list[tuple[str, list[float]]] | None]:
        """Each put's vectors (None: none given, without an index), as LangGraph's stores
        make them: one per text of the indexed fields (an item is scored by its nearest),
        none for a put with index=False. The batch's texts are embedded in one call."""
        if self._embeddings is None:
            return [None] * len(ops)
        wanted = [op.value is not None and op.index is not False for op in ops]
        documents = [
            text for want, some in zip(wanted, texts, strict=True) if want for _, text in some
        ]
        embedded = iter(
            await self._embeddings.aembed_documents(
                with_role(self.settings.embedding, documents, "document")
            )
            if documents
            else ()
        )
        return [
            [(field, list(next(embedded))) for field, _ in some] if want else []
            for want, some in zip(wanted, texts, strict=True)
        ]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []
        for agent in await self.engine.item_namespaces():
            namespace = _namespace(agent)
            if all(_matches(namespace, c) for c in op.match_conditions or ()):
                cut = namespace[: op.max_depth] if op.max_depth is not None else namespace
                if cut not in found:
                    found.append(cut)
        return sorted(found)[op.offset : op.offset + op.limit]


class EthosStore(BaseStore):
    """LangGraph's BaseStore over an ethos Engine, for sync graphs (and async ones): the
    engine runs on an event loop of its own, in a thread the store starts and stops."""

    supports_ttl = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        policy: str | None = KEEP,
        ttl_policy: str | None = KEEP_UNTIL_TTL,
    ) -> None:
        self._store = AsyncEthosStore(
            settings, index=index, ttl=ttl, policy=policy, ttl_policy=ttl_policy
        )
        self.index_config, self.ttl_config = index, ttl
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> EthosStore:
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="ethos-store", daemon=True)
        self._thread.start()
        self._loop = loop
        asyncio.run_coroutine_threadsafe(self._store.__aenter__(), loop).result()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._store.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join()
        loop.close()

    @property
    def engine(self) -> Engine:
        return self._store.engine

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return asyncio.run_coroutine_threadsafe(
            self._store.abatch(list(ops)), self._open()
        ).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        future = asyncio.run_coroutine_threadsafe(self._store.abatch(list(ops)), self._open())
        return await asyncio.wrap_future(future)

    def _open(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the store is not open: use `with EthosStore(...)`")
        return self._loop


def _agent(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _namespace(agent: str) -> tuple[str, ...]:
    return tuple(agent.split(".")) if agent else ()


def _filter(conditions: Mapping[str, Any]) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """LangGraph's filter as (a containment object, a SQL/JSON path predicate and its
    variables): {"k": v} means equal; {"k": {"$gt": v}} and the other operators compare."""
    contains: dict[str, Any] = {}
    predicates: list[str] = []
    variables: dict[str, Any] = {}
    for key, wanted in conditions.items():
        if isinstance(wanted, Mapping) and wanted and all(k in _OPERATORS for k in wanted):
            for operator, value in wanted.items():
                name = f"v{len(variables)}"
                variables[name] = value
                predicates.append(f"$.{json.dumps(key)} {_OPERATORS[operator]} ${name}")
        elif isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            unknown = [k for k in wanted if k not in _OPERATORS]
            raise InputError(f"unknown filter operator {unknown[0]} (use {', '.join(_OPERATORS)})")
        else:
            contains[key] = wanted
    return contains, " && ".join(predicates) or "true", variables


def _answer(results: list[tuple[asyncio.Future[Result], Result | Exception]]) -> None:
    """Each waiting caller's result, or its error."""
    for future, result in results:
        if future.done():
            continue
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)


def _merge_key(op: Op) -> Any:
    """What makes two operations issued together one: an equal read (None where an
    operation cannot be compared, as a search with a filter), the same item put."""
    if isinstance(op, PutOp):
        return ("put", op.namespace, op.key)
    try:
        hash(op)
    except TypeError:  # a filter's dict
        return None
    return op


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))
