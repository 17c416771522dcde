"""What every front end (MCP, the HTTP API) asks of the engine on one agent's behalf.

Each call takes the engine and the agent first; ids are located and must be that agent's
memories (any agent's for None: an operator), or nothing happens and one line says
which are not. The docstrings are what
an MCP client's model reads as each tool's description.
"""

from __future__ import annotations

from typing import Any, Literal

from ethos.domain.errors import InputError
from ethos.domain.inputs import parse_id, some
from ethos.services.engine import Added, Engine
from ethos.services.recovery import Selector


async def remember(
    engine: Engine,
    agent: str,
    content: str,
    kind: Literal["episode", "fact"] = "episode",
    emotional_tone: float | None = None,
    confidence: float | None = None,
    importance: float | None = None,
    policy: str | None = None,
    metadata: dict[str, Any] | None = None,
    recall: int = 0,
) -> dict[str, Any]:
    """Store something worth remembering: an episode (what happened; emotional_tone
    0..1 makes it last longer) or a fact (durable knowledge, with a confidence 0..1).
    importance 0..1 or a named policy choose how long it lasts (without them, how
    informative the text is); metadata is kept with it. recall=k first recalls the k
    memories this text brings back, which are strengthened (what a conversation returns
    to lives longer) and returned as `recalled`. Returns its id, its policy and when it
    will be forgotten unless used (prunes_at, forgotten_in; a warning when that is
    sooner than usual: give a policy or an importance to keep it); a fact the agent
    already holds is not stored twice (created is false, it is reinforced, and `raised`
    names what the repeat gave it: a longer-lived policy, a higher importance)."""
    fields = {"emotional_tone": emotional_tone, "confidence": confidence,
              "importance": importance, "policy": policy, "metadata": metadata}  # fmt: skip
    added = await engine.add_detailed(
        kind, agent_id=agent, content=content, recall=recall,
        **{name: value for name, value in fields.items() if value is not None},
    )  # fmt: skip
    result: dict[str, Any] = {"id": str(added.id), "kind": kind, "created": added.created,
                              **lifetime(engine, added)}  # fmt: skip
    if recall:
        result["recalled"] = [{"id": str(h.id), "content": h.content} for h in added.recalled]
    return result if added.created else {**result, "raised": list(added.raised)}


def lifetime(engine: Engine, added: Added) -> dict[str, Any]:
    """What an add answers of its memory's forgetting: its policy, prunes_at and
    forgotten_in, and for a short-lived one a warning naming the arguments that keep
    it (those of remember and of mem0's add)."""
    default = engine.settings.decay.default_policy
    warning = added.warning(f"give policy={default!r} or an importance to keep it")
    return added.lifetime() | ({"warning": warning} if warning else {})


async def feedback(
    engine: Engine, agent: str | None, ids: list[str], verdict: Literal["useful", "wrong"]
) -> dict[str, Any]:
    """Say how recalled memories served: "useful" strengthens them (and links them to
    each other), "wrong" weakens them (a fact also loses confidence) until they are
    forgotten."""
    for (spec, owner), found in (await engine.locate(ids, agent=agent)).items():
        await engine.feedback(spec, found, verdict, agent=owner)
    return {"ids": ids, "verdict": verdict}


async def forget(engine: Engine, agent: str | None, ids: list[str]) -> dict[str, Any]:
    """Forget memories on request (the user asks, or they are obsolete). Recoverable
    with recover."""
    for (spec, owner), found in (await engine.locate(ids, agent=agent)).items():
        await engine.forget(spec, found, trigger="api", agent=owner)
    return {"forgotten": ids}


async def recover(engine: Engine, agent: str | None, ids: list[str]) -> dict[str, Any]:
    """Bring forgotten (or faded) memories back, with their content and history."""
    recovered: list[str] = []
    for (spec, owner), found in (await engine.locate(ids, agent=agent)).items():
        selector = Selector(ids=tuple(found), agent=owner)  # no other agent's, whatever the id
        report = await engine.recover(spec, selector, command="api")
        recovered += [str(row["id"]) for row in report.rows]
    missing = sorted({str(parse_id(i)) for i in ids} - set(recovered))
    if missing:  # live already: nothing to bring back
        raise InputError(f"not forgotten: {some(missing)}")
    return {"recovered": recovered}


async def explain(engine: Engine, agent: str | None, id: str) -> dict[str, Any]:
    """Why a memory has its salience now, and when it will be forgotten if not used."""
    return (await engine.explain(None, id, agent=agent)).as_dict()


async def stats(engine: Engine, agent: str) -> dict[str, Any]:
    """How many memories the agent has, live and forgotten, per kind."""
    return (await engine.stats(agent)).as_dict()
