"""Commands on memories: add, search, explain, embed, feedback, links and
record-retrieval."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ethos.adapters.cli.imports import read_content
from ethos.adapters.cli.lookups import located, warn_if_absent
from ethos.adapters.cli.moments import refuse_future
from ethos.adapters.cli.output import emit, ltp_exit
from ethos.adapters.cli.progress import watched
from ethos.domain.errors import InputError
from ethos.domain.inputs import parse_id
from ethos.services.engine import Engine
from ethos.services.retrieval import Hit
from ethos.settings import Settings

# What `add` passes on, by flag (each table's subcommand takes some of them).
ADD_FIELDS = (
    "salience", "emotional_tone", "confidence", "embedding", "created_at", "expires_at",
    "pinned", "policy", "importance",
)  # fmt: skip


async def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    # The flags of this table (its subcommand has no others).
    given = {name: getattr(args, name, None) for name in ADD_FIELDS}
    fields = given | {"metadata": json.loads(args.metadata) if args.metadata else {}}
    async with Engine(settings) as engine:
        added = await engine.add_detailed(
            args.table,
            agent_id=args.agent,
            content=read_content(args),
            recall=args.recall,
            allow_future=args.allow_future,
            **{k: v for k, v in fields.items() if v is not None},
        )
    raised = f"; raised: {', '.join(added.raised)}" if added.raised else ""
    text = (
        str(added.id)
        if added.created
        else f"{added.id} (a duplicate: the existing memory, retrieved{raised})"
    )
    lifetime = added.lifetime()
    text += f"\n  policy {added.policy}: " + (
        "never forgotten"
        if added.prunes_at is None
        else f"forgotten in {lifetime['forgotten_in']} ({lifetime['prunes_at']}) unless used"
    )
    text += "".join(f"\n  recalled {h.table} {h.id}: {h.content}" for h in added.recalled)
    data: dict[str, Any] = {"id": str(added.id), "created": added.created, **lifetime}
    warning = added.warning(
        f"give --policy {settings.decay.default_policy} or --importance to keep it"
    )
    if warning:
        data["warning"] = warning
        print(f"ethos: warning: {warning}", file=sys.stderr)
    if args.recall:
        data["recalled"] = [{"table": h.table, "id": str(h.id)} for h in added.recalled]
    emit(args, data if added.created else {**data, "raised": list(added.raised)}, text)
    return 0


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        if args.query is not None:
            if args.expand:
                raise InputError("--expand goes with --embedding")
            hits = await engine.recall(
                args.agent, args.query, k=args.k, tables=args.table, now=args.now,
                record=not args.no_record,
            )  # fmt: skip
        else:
            if args.table:
                raise InputError("--table goes with --query (--embedding searches vectors)")
            hits = await engine.nearest(
                args.agent, args.embedding, k=args.k, now=args.now, expand=args.expand,
                record=not args.no_record,
            )  # fmt: skip
        if not hits:
            await warn_if_absent(engine, args.agent)
    # The engine is closed: the LTP of these hits has been applied (or counted as dropped).
    stats = engine.ltp.stats

    def why(h: Hit) -> str:
        if h.via:
            return f"  (linked to {h.via})"
        if not h.matched:
            return "  (beside a match: counted, not reinforced)"
        return f"  sim {h.similarity:.4f}" if h.similarity is not None else ""

    def relevance(h: Hit) -> str:
        return f"rel {h.relevance:.4f}" if h.relevance is not None else "rel -     "

    lines = [
        f"{h.score:.4f}  {relevance(h)}  sal {h.salience:.4f}  {h.table:<15} {h.id}"
        f"  {h.content}{why(h)}"
        for h in hits
    ]
    # What the hits were recorded as: retrievals that reinforce them, surfacings that
    # only count (ltp.on_search = "count"; a hit found only through others, always),
    # or nothing (--no-record).
    recorded = "none" if args.no_record else settings.ltp.on_search
    reinforcing = recorded == "reinforce" and not stats.dropped
    reinforced = [str(h.id) for h in hits if h.matched] if reinforcing else []
    emit(
        args,
        {"hits": [h.as_dict() for h in hits], "recorded": recorded, "reinforced": reinforced,
         "ltp": stats.as_dict()},
        "\n".join(lines) or "no hits",
    )  # fmt: skip
    return ltp_exit(stats.dropped)


async def cmd_explain(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        account = await engine.explain(args.table, args.id, now=args.now, agent=args.agent)
    info, readable = account.as_dict(), account.readable()
    text = "\n".join(
        f"{key:>18}: {value}"
        + (f" ({readable[key]})" if value is not None and key in readable else "")
        for key, value in info.items()
    )
    emit(args, info, text)
    return 0


async def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        (spec, agent), memory_id = await engine.whose(args.id, agent=args.agent, table=args.table)
        events = await engine.history(spec, memory_id, agent=agent)
    lines = [f"{spec.alias} {memory_id} of agent {agent}"]
    for e in events:
        said = e.content if e.event in ("add", "update") else None
        details = {**e.details(), **({"was": e.old} if e.old is not None else {})}
        lines.append(
            f"  {e.at:%Y-%m-%d %H:%M:%S}  {e.event:<8}"
            + (f" {said}" if said is not None else "")
            + "".join(f"  ({key}: {value})" for key, value in details.items())
        )
    data = {"table": spec.name, "id": memory_id, "agent": agent,
            "events": [{"event": e.event, "at": e.at, "content": e.content, "old": e.old,
                        **e.details()} for e in events]}  # fmt: skip
    emit(args, data, "\n".join(lines))
    return 0


async def cmd_embed(args: argparse.Namespace, settings: Settings) -> int:
    with watched(args, "embedded", "memories") as run:
        async with Engine(settings) as engine:
            await warn_if_absent(engine, args.agent)
            made = await engine.embed_missing(args.agent, watch=run.watch)
    lines = [f"{table}: {n} vectors written" for table, n in made.by_table.items()]
    emit(args, {"written": made.as_dict()}, "\n".join([*lines, run.closing()]))
    return run.finished()


# What a feedback or retrieval at a --now to come would do.
AHEAD = "the memories would be stamped as retrieved at a moment to come"


async def cmd_feedback(args: argparse.Namespace, settings: Settings) -> int:
    kind = "useful" if args.useful else "wrong"
    async with Engine(settings) as engine:
        await refuse_future(engine, args.now, args.allow_future, AHEAD)
        for (spec, agent), ids in (await located(engine, args)).items():
            await engine.feedback(spec, ids, kind, agent=agent, now=args.now)
    stats = engine.ltp.stats
    text = (
        f"{stats.applied} {kind} applied, {stats.skipped} skipped (unknown or pruned),"
        f" {stats.pruned} pruned by it, {stats.links} links updated, {stats.dropped} dropped"
    )
    emit(args, {"feedback": kind, **stats.as_dict()}, text)
    return ltp_exit(stats.dropped)


async def cmd_links(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        (spec, agent), memory_id = await engine.whose(args.id, agent=args.agent, table=args.table)
        links = await engine.links(spec, memory_id, now=args.now, agent=agent)
    lines = [f"{link.weight:.4f}  {link.table}  {link.id}" for link in links]
    data = {"table": spec.name, "id": args.id, "links": [link.as_dict() for link in links]}
    emit(args, data, "\n".join(lines) or "no links")
    return 0


async def cmd_record_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        await refuse_future(engine, args.now, args.allow_future, AHEAD)
        for (spec, agent), ids in (await located(engine, args)).items():
            # a repeated id counts as repeated retrievals
            await engine.record_retrieval(spec, [i for i in args.ids if parse_id(i) in ids],
                                          agent=agent, now=args.now)  # fmt: skip
    stats = engine.ltp.stats
    text = (
        f"{stats.applied} applied, {stats.skipped} skipped (unknown or pruned),"
        f" {stats.dropped} dropped"
    )
    emit(args, stats.as_dict(), text)
    return ltp_exit(stats.dropped)
