"""Commands that run and watch the engine: migrate, db, sweep (with its progress
bar), daemon, status, stats and roles."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import datetime

from ethos import db
from ethos.adapters.cli.lookups import warn_if_absent
from ethos.adapters.cli.moments import refuse_future
from ethos.adapters.cli.output import emit, table_text
from ethos.adapters.cli.progress import RERUN, draw, on_terminal
from ethos.domain.errors import ConfigError, InputError
from ethos.domain.inputs import host_port
from ethos.domain.roles import parse_agent_role
from ethos.domain.tables import MEMORY_TABLES
from ethos.services.daemon import Daemon, DaemonStopTimeout, Observe
from ethos.services.engine import Engine, Stats, Status, migrate
from ethos.services.sweep import Mode
from ethos.settings import Settings
from ethos.signals import on_stop


async def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    await migrate(settings, await db.checked_url(settings))
    print("database is at the latest schema")
    return 0


async def cmd_distribute(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        done = await engine.distribute()
    moved = ", ".join(done.distributed) or "none"
    emit(
        args,
        done.as_dict(),
        f"distributed by agent over {done.nodes} workers: {moved} now"
        f" ({len(done.already)} tables held already); reference tables now:"
        f" {', '.join(done.reference) or 'none'}; {sum(done.hinted.values())} rows hinted"
        " again on their shards"
        + (
            f"; left on the coordinator, keyed without the agent: {', '.join(done.left)}"
            " (run `ethos migrate`, then this again)"
            if done.left
            else ""
        ),
    )
    return 0


async def cmd_db_url(args: argparse.Namespace, settings: Settings) -> int:
    print(await db.resolve_url(settings))
    return 0


async def cmd_db_stop(args: argparse.Namespace, settings: Settings) -> int:
    if settings.database.url:
        raise InputError("database.url is set: ethos does not stop a server it did not start")
    stopped = db.stop_embedded(settings.data_dir)
    print(
        f"embedded PostgreSQL {'stopped' if stopped else 'was not running'} ({settings.data_dir})"
    )
    return 0


async def cmd_sweep(args: argparse.Namespace, settings: Settings) -> int:
    mode: Mode = "full" if args.full else "prune" if args.prune else "due"
    async with Engine(settings) as engine:
        await refuse_future(
            engine, args.now, args.allow_future, "a sweep then prunes memories that are live now"
        )
        await warn_if_absent(engine, args.agent)
        tables = args.table or None
        # What it has to do: the progress bar's and the closing line's totals.
        whole = mode == "full" or args.agent is not None or args.dry_run
        totals = await _sweep_totals(engine, tables, args.agent, whole, args.now, mode)
        progress = None
        if on_terminal(args):

            def progress(table: str, scanned: int, done: bool) -> None:
                draw(table, scanned, totals[table], last=done, full=done)

        stop = asyncio.Event()
        with on_stop(stop.set) as signals:
            report = await engine.sweep(
                now=args.now,
                tables=tables,
                agent=args.agent,
                dry_run=args.dry_run,
                mode=mode,
                trigger="manual",
                stop=stop,
                progress=progress,
            )
    prefix = "dry run, nothing written:" if args.dry_run else "swept"
    emit(args, report.as_dict(), f"{prefix} {report.summary()} at {report.now.isoformat()}")
    if report.status != "interrupted":
        return 0
    if progress is not None:
        print(file=sys.stderr)
    far = ", ".join(
        f"{c.scanned} of {totals[name]} {name}"
        for name, c in report.tables.items()
        if c.scanned or totals[name]
    )
    audit = f" (audit: sweep_runs #{report.run_id})" if report.run_id else ""
    print(f"ethos: interrupted: {prefix} {far or '0 rows'}{audit}; {RERUN}", file=sys.stderr)
    return 128 + signals[0] if signals else 130


async def _sweep_totals(
    engine: Engine,
    tables: list[str] | None,
    agent: str | None,
    whole: bool,
    now: datetime | None,
    mode: str,
) -> dict[str, int]:
    """The rows a sweep will read, by table: every live row (`whole`: a full sweep, a
    dry run, one agent's), or those due (as their hints count them)."""
    names = tables or [s.name for s in MEMORY_TABLES]
    if whole:
        return {name: await engine.count_live(name, agent) for name in names}
    at = now or await engine.now()
    return {name: await engine.count_due(name, at, prune=mode == "prune") for name in names}


def _metrics_observer(settings: Settings) -> Observe | None:
    """The metrics adapter where [metrics] listen is set (the metrics extra)."""
    if not settings.metrics.listen:
        return None
    try:
        from ethos.adapters import metrics
    except ImportError as exc:
        hint = "pip install 'ethos[metrics]'"
        raise ConfigError(f"metrics.listen needs the metrics extra: {hint} ({exc})") from None
    return metrics.observe


async def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    if args.metrics:
        host_port(args.metrics, "--metrics")
        settings.metrics.listen = args.metrics
    stop = asyncio.Event()
    with on_stop(stop.set):
        try:
            await Daemon(settings, observe=_metrics_observer(settings)).run(stop)
        except DaemonStopTimeout as exc:
            # What did not stop may never stop: leave without waiting for it.
            print(f"ethos: error: {exc}", file=sys.stderr)
            os._exit(1)
    return 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        status = await engine.status(settings.daemon.alive_seconds)
    emit(args, status.as_dict(), _status_text(status))
    return 0


def _status_text(status: Status) -> str:
    lines = [f"daemons: {len(status.daemons)}"]
    for d in status.daemons:
        lock = ", holds the leader lock" if d["holds_leader_lock"] else ""
        due = (
            f", next sweep due {d['next_sweep_due']:%Y-%m-%d %H:%M:%S%z}"
            if d["next_sweep_due"]
            else ""
        )
        lines.append(
            f"  {d['id']} ({d['role']}{lock}), heartbeat {d['heartbeat_at']:%H:%M:%S%z}{due},"
            f" LTP backlog {d['ltp_backlog']}, dropped {d['ltp_dropped']}"
        )
    last = status.last_sweep
    if last:
        lines.append(
            f"last sweep: #{last['id']} {last['status']} ({last['trigger']}) started"
            f" {last['started_at']:%Y-%m-%d %H:%M:%S%z}, {last['duration_ms'] or 0:.0f} ms,"
            f" {last['scanned']} scanned, {last['updated']} updated, {last['pruned']} pruned"
        )
    else:
        lines.append("last sweep: none yet")
    return "\n".join(lines)


async def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        stats = await engine.stats(args.agent)
        await warn_if_absent(engine, args.agent)
    emit(args, stats.as_dict(), _stats_text(stats))
    return 0


def _stats_text(stats: Stats) -> str:
    sections = [
        ("memories", stats.counts, ["table_name", "live", "pruned", "pinned"]),
        (
            "average salience by age (live)",
            stats.salience_by_age,
            ["table_name", "age_bucket", "avg_salience", "count"],
        ),
        ("at risk (near the prune threshold)", stats.at_risk, ["table_name", "count"]),
        (
            "most retrieved",
            stats.most_retrieved,
            ["table_name", "content", "retrieval_count", "salience"],
        ),
        (
            "recent sweeps",
            stats.recent_sweeps,
            [
                "id",
                "trigger",
                "status",
                "started_at",
                "scanned",
                "updated",
                "pruned",
                "rows_per_second",
            ],
        ),
        ("LTP in daemons", stats.ltp, ["daemon_id", "role", "ltp_backlog", "ltp_dropped"]),
        (
            "by policy",
            stats.policies,
            ["table_name", "policy", "live", "pruned", "avg_salience"],
        ),
    ]
    return "\n".join(line for s in sections for line in [*table_text(*s), ""]).rstrip()


async def cmd_roles(args: argparse.Namespace, settings: Settings) -> int:
    agents = [parse_agent_role(value) for value in args.agent_role]
    async with Engine(settings) as engine:
        statements = await engine.make_roles(args.app, args.eraser, agents, dry_run=args.dry_run)
    text = ";\n".join(statements) + ";"
    if not args.dry_run:
        text += f"\n-- {len(statements)} statements applied"
    emit(args, {"statements": statements, "applied": not args.dry_run}, text)
    return 0
