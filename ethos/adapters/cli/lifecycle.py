"""Commands that end or bring back memories: recover, merge, forget, purge
and erase."""

from __future__ import annotations

import argparse
import sys
import uuid

from ethos.adapters.cli.lookups import warn_if_absent
from ethos.adapters.cli.output import emit
from ethos.adapters.cli.progress import watched
from ethos.domain.errors import InputError
from ethos.domain.inputs import parse_id
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import Settings


async def cmd_recover(args: argparse.Namespace, settings: Settings) -> int:
    if args.table is None and not args.id:
        raise InputError("give the table (episode|fact|vector), or the memories' `ids`")
    ids = [parse_id(i) for i in args.id or ()]
    by_table = {args.table: ids}
    if args.table is None:  # by id alone: the ids' tables
        async with Engine(settings) as engine:
            found = await engine.locate(ids, agent=args.agent)
        by_table = {}
        for (spec, _), held in found.items():
            by_table.setdefault(spec.name, []).extend(held)
    # (one table's ids name one agent's memories each: an id of several agents' was
    # refused without --agent)
    for table, held in by_table.items():
        code = await _recover(args, settings, table, held)
        if code:  # interrupted: the next table waits for the same command again
            return code
    return 0


async def _recover(
    args: argparse.Namespace, settings: Settings, table: str, ids: list[uuid.UUID]
) -> int:
    selector = Selector(
        ids=tuple(ids),
        agent=args.agent,
        since=args.since,
        until=args.until,
        reason=args.reason,
    )
    verb = "would recover" if args.dry_run else "recovered"
    with watched(args, verb, f"{table} rows") as run:
        async with Engine(settings) as engine:
            await warn_if_absent(engine, args.agent)
            report = await engine.recover(
                table,
                selector,
                now=args.now,
                dry_run=args.dry_run,
                command=" ".join(["ethos", *sys.argv[1:]]),
                watch=run.watch,
            )
    lines = [f"{run.closing()} (strength {report.strength})"]
    lines += [f"  {r['id']}  {r['prune_reason']:<8} {r['content']}" for r in report.rows[:20]]
    if len(report.rows) > 20:
        lines.append(f"  ... and {len(report.rows) - 20} more (--json lists them all)")
    emit(args, report.as_dict(), "\n".join(lines))
    return run.finished()


async def cmd_merge(args: argparse.Namespace, settings: Settings) -> int:
    verb = "would merge" if args.dry_run else "merged"
    with watched(args, verb, "duplicates") as run:
        async with Engine(settings) as engine:
            await warn_if_absent(engine, args.agent)
            report = await engine.merge(
                args.table, agent=args.agent, near=args.near, now=args.now,
                dry_run=args.dry_run, trigger="manual", watch=run.watch,
            )  # fmt: skip
    lines = [
        f"{table}: {verb} {c['merged']} duplicates in {c['groups']} groups"
        for table, c in report.counts.items()
    ]
    emit(args, report.as_dict(), "\n".join(lines))
    return run.finished()


async def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        report = await engine.forget(
            args.table, args.ids, now=args.now, trigger="manual", agent=args.agent
        )
    forgot = ", ".join(f"{n['manual']} {table} rows" for table, n in report.counts.items())
    text = f"forgot {forgot} (reason manual; ethos recover undoes it)"
    emit(args, report.as_dict(), text)
    return 0


async def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    verb = "would delete" if args.dry_run else "deleted"
    with watched(args, verb, "pruned rows") as run:
        async with Engine(settings) as engine:
            await warn_if_absent(engine, args.agent)
            report = await engine.purge(
                args.pruned_before, tables=args.table, agent=args.agent, reason=args.reason,
                now=args.now, dry_run=args.dry_run, trigger="manual", watch=run.watch,
            )  # fmt: skip
    lines = [
        f"{table}: {verb} {sum(c.values())} pruned rows"
        + (f" ({', '.join(f'{why} {n}' for why, n in sorted(c.items()))})" if c else "")
        for table, c in report.counts.items()
    ]
    emit(args, report.as_dict(), "\n".join([*lines, run.closing()]))
    return run.finished()


async def cmd_erase(args: argparse.Namespace, settings: Settings) -> int:
    verb = "would delete" if args.dry_run else "deleted"
    with watched(args, verb, "memories") as run:
        async with Engine(settings) as engine:
            await warn_if_absent(engine, args.agent)
            report = await engine.erase(
                args.agent, dry_run=args.dry_run, trigger="manual", watch=run.watch
            )
    lines = [f"{name}: {verb} {n}" for name, n in report.counts.items()]
    text = "\n".join([f"agent {args.agent}", *lines, run.closing()])
    emit(args, report.as_dict(), text)
    return run.finished()
