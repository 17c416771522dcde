"""ethos's own endpoints under /ethos/: agents, memories, recall, feedback, explain,
recover, forget, policy, links, stats, status, curve."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request

from ethos.adapters.http.access import may_write
from ethos.adapters.http.answers import EngineDep, Writes, route
from ethos.adapters.http.shapes import Feedback, Ids, Kind, Move, Recall
from ethos.domain.lifetimes import policy_curves
from ethos.domain.spans import relative
from ethos.domain.tables import MEMORY_TABLES
from ethos.services.engine import MAX_LIST
from ethos.settings import Settings


def ethos_routes(app: FastAPI, settings: Settings) -> None:
    async def whoami(request: Request) -> dict[str, Any]:
        """What this request's token may do: read, or write (which reads too)."""
        return {"access": request.scope.get("ethos.access")}

    async def agents(engine: EngineDep) -> list[dict[str, Any]]:
        """Every agent with its memories counted per table."""
        return [agent.as_dict() for agent in await engine.agents()]

    async def memories(
        engine: EngineDep,
        agent: str | None = None,
        pruned: bool = False,
        kinds: Annotated[list[Kind] | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> list[dict[str, Any]]:
        """Memories as `ethos explain` describes them (salience now, policy, when each
        will be pruned, its forecast), with text and metadata. Nothing is reinforced."""
        found = await engine.memories(
            agent, tables=kinds, pruned=pruned, limit=limit, offset=offset
        )
        return [memory.as_dict() for memory in found]

    async def recall(body: Recall, engine: EngineDep, request: Request) -> list[dict[str, Any]]:
        """Recall, every part of each score shown: text rank and/or similarity, salience
        (recorded unless record=false, or the token or server is read-only)."""
        hits = await engine.recall(
            body.agent, body.query, k=body.k, tables=body.kinds,
            record=body.record and may_write(request),
        )  # fmt: skip
        return [hit.as_dict() for hit in hits]

    async def feedback(body: Feedback, engine: EngineDep) -> dict[str, Any]:
        """useful: reinforced (and linked); wrong: weakened, pruned below the threshold."""
        await engine.feedback(None, body.ids, body.verdict, agent=body.agent)
        return {"ids": body.ids, "verdict": body.verdict}

    async def forget(body: Ids, engine: EngineDep) -> dict[str, Any]:
        """Pruned on request (reason manual), recoverable."""
        await engine.forget(None, body.ids, agent=body.agent)
        return {"forgotten": body.ids}

    async def recover(body: Ids, engine: EngineDep) -> dict[str, Any]:
        """Pruned memories back, with their content and history, and a fresh start."""
        recovered = await engine.recover_ids(body.ids, agent=body.agent)
        return {"recovered": [str(i) for i in recovered]}

    async def explain(memory_id: str, engine: EngineDep) -> dict[str, Any]:
        """Why it has its salience now, and when it will be pruned if not used."""
        return (await engine.explain(None, memory_id)).as_dict()

    async def move(memory_id: str, body: Move, engine: EngineDep) -> dict[str, Any]:
        """Another policy, re-anchored now (the dashboard's pin: permanent)."""
        memory = await engine.memory(memory_id)
        moved = await engine.move(memory.account.table, memory_id, body.policy,
                                  agent=memory.account.agent_id)  # fmt: skip
        return moved.as_dict()

    async def links(memory_id: str, engine: EngineDep) -> list[dict[str, Any]]:
        """Its associations, strongest first."""
        memory = await engine.memory(memory_id)
        links = await engine.links(memory.account.table, memory_id)
        return [link.as_dict() for link in links]

    async def stats(engine: EngineDep, agent: str | None = None) -> dict[str, Any]:
        """The monitoring views, for one agent or all."""
        return (await engine.stats(agent)).as_dict()

    async def status(engine: EngineDep) -> dict[str, Any]:
        """Daemons, the leader lock, recent sweeps, pruned per reason (last day and ever),
        and the backlog: the sweep's hints due per table (an upper bound on the rows a due
        sweep looks at), retrievals waiting."""
        now = await engine.now()
        state = await engine.status(settings.daemon.alive_seconds)
        return {
            **state.as_dict(),
            "now": now,
            "recent_sweeps": [
                {**sweep, "started": relative(sweep["started_at"], now)}
                for sweep in (await engine.stats()).recent_sweeps
            ],
            "pruned_last_day": [
                count.as_dict()
                for count in await engine.pruned_by_reason(since=now - timedelta(days=1))
            ],
            "pruned": [count.as_dict() for count in await engine.pruned_by_reason()],
            "due": {spec.name: await engine.count_due(spec, now) for spec in MEMORY_TABLES},
        }

    async def curve() -> list[dict[str, Any]]:
        """Every policy's lifetimes, as `ethos curve` prints them."""
        return policy_curves(settings.policy_table.values())

    route(app, "GET", ("/ethos/whoami",), whoami)
    route(app, "GET", ("/ethos/agents",), agents)
    route(app, "GET", ("/ethos/memories",), memories)
    route(app, "POST", ("/ethos/recall",), recall)
    route(app, "POST", ("/ethos/feedback",), feedback, dependencies=[Writes])
    route(app, "POST", ("/ethos/forget",), forget, dependencies=[Writes])
    route(app, "POST", ("/ethos/recover",), recover, dependencies=[Writes])
    route(app, "GET", ("/ethos/memories/{memory_id}/explain",), explain)
    route(app, "GET", ("/ethos/memories/{memory_id}/links",), links)
    route(app, "POST", ("/ethos/memories/{memory_id}/policy",), move,
                      dependencies=[Writes])  # fmt: skip
    route(app, "GET", ("/ethos/stats",), stats)
    route(app, "GET", ("/ethos/status",), status)
    route(app, "GET", ("/ethos/curve",), curve)
