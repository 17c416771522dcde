"""mem0's REST shape: its open-source server's paths and those its MemoryClient
calls, with ethos's semantics where they differ."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query

from ethos.engine import MAX_LIST
from ethos.errors import (
    InputError,
)
from ethos.integrations import calls
from ethos.integrations.http.answers import EngineDep, Writes, route
from ethos.integrations.http.shapes import (
    HISTORY_EVENTS,
    OWNERS,
    Kind,
    ListRequest,
    MemoryCreate,
    MemoryUpdate,
    SearchRequest,
    mem0_hit,
    mem0_item,
    owners,
)


def mem0_routes(app: FastAPI) -> None:
    async def ping() -> dict[str, Any]:
        """What mem0's MemoryClient asks on start (it wants an organisation and project)."""
        return {"status": "ok", "org_id": "ethos", "project_id": "ethos", "user_email": None}

    async def add(body: MemoryCreate, engine: EngineDep) -> dict[str, Any]:
        """Store messages (each one a memory; system messages are not) or a text, for the
        agent named by user_id (else agent_id, else run_id). A fact the agent holds
        already is not stored twice: its event is NONE and it is reinforced."""
        agent, ids = owners(body.model_dump())
        if body.messages is None and body.text is None:
            raise InputError("give messages or text")
        texts = [m.content for m in body.messages or [] if m.role != "system"]
        texts += [body.text] if body.text is not None else []
        metadata = {**(body.metadata or {}), OWNERS: ids}
        results = []
        for text in texts:
            saved = await calls.remember(
                engine, agent, text, kind=body.kind, importance=body.importance,
                policy=body.policy, metadata=metadata,
            )  # fmt: skip
            results.append({"id": saved["id"], "memory": text,
                            "event": "ADD" if saved["created"] else "NONE",
                            "ethos": {"kind": saved["kind"], "agent_id": agent}})  # fmt: skip
        return {"results": results}

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
        """An agent's memories, newest first (every agent's without an identifier);
        pruned=true: the forgotten ones, most recent first. Nothing is reinforced."""
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        agent = owners(given)[0] if any(given.values()) else None
        memories = await engine.memories(
            agent, tables=kinds, pruned=pruned, limit=top_k, offset=offset
        )
        return {"results": [mem0_item(m) for m in memories]}

    async def listing_v3(
        body: ListRequest,
        engine: EngineDep,
        page: Annotated[int, Query(ge=1)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
    ) -> dict[str, Any]:
        """MemoryClient.get_all: the owners in filters; a page of the listing."""
        agent, _ = owners(body.model_dump())
        memories = await engine.memories(agent, limit=page_size, offset=(page - 1) * page_size)
        results = [mem0_item(m) for m in memories]
        return {"count": len(results), "next": None, "previous": None, "results": results}

    async def get(memory_id: str, engine: EngineDep, record: bool = True) -> dict[str, Any]:
        """One memory; reading it is a retrieval (record=false: an operator's look)."""
        return mem0_item(await engine.memory(memory_id, record=record))

    async def update(memory_id: str, body: MemoryUpdate, engine: EngineDep) -> dict[str, Any]:
        """A new text and/or metadata; the memory keeps its curve and retrievals."""
        memory = await engine.memory(memory_id)
        metadata = None
        if body.metadata is not None:  # the mem0 identifiers it was added with stay
            kept = {k: v for k, v in (memory["metadata"] or {}).items() if k == OWNERS}
            metadata = {**body.metadata, **kept}
        await engine.update(memory["table"], memory_id, content=body.text, metadata=metadata)
        return {"message": "Memory updated successfully!", "id": memory["id"]}

    async def delete(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """Forget the memory: pruned (reason manual), recoverable; not a hard delete."""
        await calls.forget(engine, None, [memory_id])
        return {"message": "Memory deleted successfully", "ethos": {"recoverable": True}}

    async def delete_all(
        engine: EngineDep,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """Forget every memory of one agent, recoverably (`ethos recover TABLE --agent A`);
        a hard delete is `ethos erase`."""
        agent, _ = owners({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        report = await engine.forget_agent(agent)
        return {"message": "All relevant memories deleted",
                "ethos": {"forgotten": report.counts, "recoverable": True}}  # fmt: skip

    async def history(memory_id: str, engine: EngineDep) -> list[dict[str, Any]]:
        """What happened to it, oldest first: each UPDATE with the text it replaced
        (old_memory); RECOVER is ethos's own event."""
        memory = await engine.memory(memory_id)
        events = await engine.history(memory["table"], memory_id)
        mem0 = ("event", "at", "old", "content")
        return [
            {"id": f"{memory['id']}:{i}", "memory_id": memory["id"], "old_memory": e.get("old"),
             "new_memory": e.get("content"),
             "event": HISTORY_EVENTS[e["event"]], "created_at": e["at"].isoformat(),
             "updated_at": None, "is_deleted": e["event"] == "prune", "actor_id": None,
             "role": None, "ethos": {k: v for k, v in e.items() if k not in mem0}}
            for i, e in enumerate(events)
        ]  # fmt: skip

    async def search(body: SearchRequest, engine: EngineDep) -> dict[str, Any]:
        """The agent's memories that best answer the query, by words (hybrid with an
        embedding provider) × salience; what is returned is reinforced."""
        agent, _ = owners(body.model_dump())
        hits = await engine.recall(agent, body.query, k=body.top_k, tables=body.kinds)
        results = [mem0_hit(hit.as_dict()) for hit in hits]
        if body.threshold is not None:
            results = [r for r in results if r["score"] >= body.threshold]
        return {"results": results}

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
