"""mem0's REST shape: its open-source server's paths and those its MemoryClient
calls, with ethos's semantics where they differ."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request

from ethos.adapters.http.access import may_write
from ethos.adapters.http.answers import EngineDep, Writes, route
from ethos.adapters.http.owners import named, owners_of
from ethos.adapters.http.shapes import (
    HISTORY_EVENTS,
    OWNERS,
    Kind,
    ListRequest,
    MemoryCreate,
    MemoryUpdate,
    SearchRequest,
    expiry,
    mem0_hit,
    mem0_item,
)
from ethos.domain.errors import InputError, NotFoundError
from ethos.domain.tables import table_spec
from ethos.services.engine import MAX_LIST

# What one add writes of its metadata, stored with each of its messages: a small request
# must not become many copies of a large metadata.
ADD_METADATA_BYTES = 1 << 20


def _expiry(kind: str, day: date | None) -> datetime | None:
    """expiration_date as the expiry of a memory of this kind (table), where it has one."""
    if day is not None and not table_spec(kind).has_expiry:
        raise InputError(f"expiration_date: {table_spec(kind).plural} do not expire, they fade")
    return expiry(day)


def _given(details: dict[str, Any]) -> dict[str, Any]:
    """An event's details with the metadata an update replaced as the client gave it
    (without the owners ethos keeps in it)."""
    if "old_metadata" not in details:
        return details
    given = {k: v for k, v in details["old_metadata"].items() if k != OWNERS}
    return {**details, "old_metadata": given or None}


def mem0_routes(app: FastAPI) -> None:
    async def ping() -> dict[str, Any]:
        """What mem0's MemoryClient asks on start (it wants an organisation and project)."""
        return {"status": "ok", "org_id": "ethos", "project_id": "ethos", "user_email": None}

    async def add(body: MemoryCreate, engine: EngineDep) -> dict[str, Any]:
        """Store messages (each one a memory; system messages are not) or a text, for the
        owners given (the first of user_id, agent_id, run_id names the ethos agent), all
        or none. A fact held already for exactly these owners is not stored twice: its
        event is NONE and it is reinforced."""
        owners = named(body.model_dump(), body.filters)
        if not owners.only_owners:  # what it adds is for owners; its metadata is `metadata`
            raise InputError("add filters name the owners it adds for: no metadata, no OR")
        if body.messages is None and body.text is None:
            raise InputError("give messages or text")
        said: list[tuple[str, str | None]] = [
            (m.content, m.role) for m in body.messages or [] if m.role != "system"
        ]
        said += [(body.text, None)] if body.text is not None else []
        if not said:  # only system messages: nothing to store, as mem0 answers
            return {"results": []}
        texts = [text for text, _ in said]
        size = len(json.dumps(body.metadata or {}))
        if size * len(texts) > ADD_METADATA_BYTES:
            raise InputError(
                f"metadata of {size} bytes is stored with each of {len(texts)} messages: at"
                f" most {ADD_METADATA_BYTES} bytes in all (send fewer messages at once)"
            )
        # Each message's role is kept with its owners, as mem0 keeps it (a text has none).
        each = [
            {**(body.metadata or {}), OWNERS: {**owners.ids, **({"role": role} if role else {})}}
            for _, role in said
        ]
        # mem0 infers facts from messages unless infer is false; ethos infers none, so
        # messages added with infer on are turns (their importance's full range), and what
        # the caller states (a text, or messages with infer false) is kept at least as
        # long as the default policy (decision 0023)
        stated = body.infer is False or body.messages is None
        fields = {"importance": body.importance, "policy": body.policy,
                  "expires_at": _expiry(body.kind, body.expiration_date),
                  "stated": stated if table_spec(body.kind).has_stated else None}  # fmt: skip
        added = await engine.add_many(
            body.kind, agent_id=owners.agent, contents=texts, metadata_each=each,
            **{name: value for name, value in fields.items() if value is not None},
        )  # fmt: skip
        return {"results": [
            {"id": str(a.id), "memory": text, "event": "ADD" if a.created else "NONE",
             "ethos": {"kind": body.kind, "agent_id": owners.agent, **a.answer()}}
            for a, text in zip(added, texts, strict=True)
        ]}  # fmt: skip

    async def listing(
        engine: EngineDep,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
        offset: Annotated[int, Query(ge=0)] = 0,
        kinds: Annotated[list[Kind] | None, Query()] = None,
        pruned: bool = False,
    ) -> dict[str, Any]:
        """The memories holding every owner given, newest first (every agent's without
        an owner); pruned=true: the forgotten ones, most recent first. Nothing is
        reinforced."""
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        owners = named(given) if any(given.values()) else None
        memories = await engine.memories(
            owners.agent if owners else None, tables=kinds, pruned=pruned, limit=top_k,
            offset=offset, matching=owners.matching() if owners else None,
        )  # fmt: skip
        return {"results": [mem0_item(m) for m in memories]}

    async def listing_v3(
        body: ListRequest,
        engine: EngineDep,
        page: Annotated[int, Query(ge=1)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
    ) -> dict[str, Any]:
        """MemoryClient.get_all: the owners in filters; a page of the listing, and how
        many it holds in all (count)."""
        owners = named(body.model_dump(), body.filters)
        offset = (page - 1) * page_size
        memories = await engine.memories(
            owners.agent, limit=page_size, offset=offset, matching=owners.matching()
        )
        results = [mem0_item(m) for m in memories]
        count = await engine.count_memories(owners.agent, matching=owners.matching())
        return {"count": count, "next": None, "previous": None, "results": results}

    async def get(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """One memory. A GET changes nothing, so reading it is no retrieval: a page of
        any site can make a browser send one (use search, or /ethos/feedback useful). A
        forgotten one is a 404, as mem0 answers for a deleted memory, and so is one past
        its expiry that the next sweep forgets (search and the listing leave it out);
        its history and explain still show it."""
        memory = await engine.memory(memory_id)
        account, found = memory.account, str(memory.account.id)
        if account.pruned:
            raise NotFoundError(f"no memory with id {found}: forgotten", [found])
        if account.expires_at is not None and account.expires_at <= account.now:
            raise NotFoundError(f"no memory with id {found}: expired", [found])
        return mem0_item(memory)

    async def update(memory_id: str, body: MemoryUpdate, engine: EngineDep) -> dict[str, Any]:
        """A new text and/or metadata, merged into the memory's as mem0 merges it (a key
        given replaces that key, the others stay; ethos's own endpoints replace it); the
        memory keeps its curve, retrievals and the owners it was added with
        (metadata.mem0 cannot be given)."""
        memory = await engine.memory(memory_id)
        metadata = None
        if body.metadata is not None:
            if OWNERS in body.metadata:
                raise InputError(f"metadata.{OWNERS} holds a memory's owners: fixed at add")
            metadata = {**memory.metadata, **body.metadata}
        expires_at: datetime | Literal["keep"] | None = "keep"
        if "expiration_date" in body.model_fields_set:  # null clears it, as in mem0
            expires_at = _expiry(memory.account.table, body.expiration_date)
        await engine.update(
            memory.account.table, memory_id, content=body.text, metadata=metadata,
            expires_at=expires_at, agent=memory.account.agent_id,
        )  # fmt: skip
        return {"message": "Memory updated successfully!", "id": str(memory.account.id)}

    async def delete(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """Forget the memory: pruned (reason manual), recoverable; not a hard delete. A
        memory forgotten already is a 400, even when a concurrent delete took it first."""
        report = await engine.forget(None, [memory_id])
        if not any(counts["manual"] for counts in report.counts.values()):
            raise InputError(f"already pruned: {memory_id}")  # a concurrent delete took it
        return {"message": "Memory deleted successfully", "ethos": {"recoverable": True}}

    async def delete_all(
        engine: EngineDep,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """Forget every memory holding all the owners given, recoverably (`ethos
        recover`); a hard delete is `ethos erase`."""
        owners = named({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        forgotten: Counter[str] = Counter()
        # Page after page of the live ones: each page forgotten leaves the listing.
        while page := await engine.memories(
            owners.agent, limit=MAX_LIST, matching=owners.matching()
        ):
            for table in {memory.account.table for memory in page}:
                ids = [memory.account.id for memory in page if memory.account.table == table]
                report = await engine.forget(table, ids, agent=owners.agent)
                forgotten[table] += report.counts[table]["manual"]
        forgotten_by_reason = {table: {"manual": n} for table, n in forgotten.items()}
        return {"message": "All relevant memories deleted",
                "ethos": {"forgotten": forgotten_by_reason, "recoverable": True}}  # fmt: skip

    async def history(memory_id: str, engine: EngineDep) -> list[dict[str, Any]]:
        """What happened to it, oldest first: each UPDATE with the text it replaced
        (old_memory) and the metadata it replaced (ethos.old_metadata, as the client
        gave it); RECOVER is ethos's own event."""
        memory = await engine.memory(memory_id)
        found, account = str(memory.account.id), memory.account
        role = owners_of(memory.metadata, account.agent_id).get("role")
        return [
            {"id": f"{found}:{i}", "memory_id": found, "old_memory": e.old,
             "new_memory": e.content,
             "event": HISTORY_EVENTS[e.event], "created_at": e.at.isoformat(),
             "updated_at": None, "is_deleted": e.event == "prune", "actor_id": None,
             "role": role, "ethos": _given(e.details())}
            for i, e in enumerate(
                await engine.history(account.table, memory_id, agent=account.agent_id)
            )
        ]  # fmt: skip

    async def search(body: SearchRequest, engine: EngineDep, request: Request) -> dict[str, Any]:
        """The memories that best answer the query, by words (hybrid with an embedding
        provider) × salience, among those the filters take (owners, metadata
        equalities, AND and OR, matched in SQL: one agent's memories); what is returned
        is reinforced (not for a read-only token or server: a read writes nothing)."""
        owners = named(body.model_dump(), body.filters)
        kept = await engine.recall(
            owners.agent, body.query, k=body.top_k, tables=body.kinds, record=False,
            matching=owners.matching(),
        )  # fmt: skip
        if body.threshold is not None:
            kept = [hit for hit in kept if hit.score >= body.threshold]
        if may_write(request):
            await engine.surfaced(kept, agent=owners.agent)
        return {"results": [mem0_hit(hit) for hit in kept]}

    route(app, "GET", ("/v1/ping/",), ping, schema=False)
    route(app, "POST", ("/memories", "/v1/memories/", "/v3/memories/add/"), add,
          dependencies=[Writes])  # fmt: skip
    route(app, "GET", ("/memories",), listing)
    route(app, "POST", ("/v3/memories/",), listing_v3)
    route(app, "GET", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), get)
    route(app, "PUT", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), update,
          dependencies=[Writes])  # fmt: skip
    route(app, "DELETE", ("/memories/{memory_id}", "/v1/memories/{memory_id}/"), delete,
          dependencies=[Writes])  # fmt: skip
    route(app, "DELETE", ("/memories", "/v1/memories/"), delete_all, dependencies=[Writes])
    route(app, "GET", ("/memories/{memory_id}/history", "/v1/memories/{memory_id}/history/"),
          history)  # fmt: skip
    route(app, "POST", ("/search", "/v3/memories/search/", "/v2/memories/search/"), search)
