"""The `ethos` command. Each subcommand is a small function over the Engine API;
errors become one line on stderr and a non-zero exit code."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from ethos import db, logs
from ethos.curve import plot, policy_curves
from ethos.daemon import Daemon, DaemonStopTimeout
from ethos.demo import run_demo
from ethos.engine import Engine
from ethos.errors import EthosError, InputError, NotFoundError
from ethos.inputs import host_port, parse_id, parse_time
from ethos.recovery import Selector
from ethos.retrieval import Hit
from ethos.roles import parse_agent_role
from ethos.settings import Settings, load_settings
from ethos.signals import on_stop
from ethos.sweep import Mode
from ethos.tables import MEMORY_TABLES, PRUNE_REASONS, table_spec

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2, like every other bad input
        print(f"ethos: error: {message}", file=sys.stderr)
        sys.exit(2)


# How far ahead of the database's clock a sweep's --now may be without --allow-future.
FUTURE_SKEW = timedelta(minutes=1)


def _time(name: str) -> Callable[[str], datetime]:
    def parse(value: str) -> datetime:
        try:
            return parse_time(value, name)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _table(value: str) -> str:
    try:
        return table_spec(value).name
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(json.dumps(data, default=_json_value) if getattr(args, "json", False) else text)


def _json_value(value: Any) -> Any:
    """Moments as ISO 8601, numbers as numbers, anything else (ids) as its text."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)


# --- commands -------------------------------------------------------------------------


async def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    url = await db.checked_url(settings)
    # Alembic runs its own event loop: give it a thread.
    await asyncio.to_thread(db.migrate, settings, url)
    async with Engine(settings, url=url):  # opening writes the policies of the settings
        pass
    print("database is at the latest schema")
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


async def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    fields = {
        "salience": args.salience,
        "emotional_tone": args.emotional_tone,
        "confidence": args.confidence,
        "embedding": args.embedding,
        "source_type": args.source_type,
        "source_id": args.source_id,
        "created_at": args.created_at,
        "expires_at": args.expires_at,
        "pinned": args.pinned,
        "metadata": json.loads(args.metadata) if args.metadata else {},
        "policy": args.policy,
        "importance": args.importance,
    }
    async with Engine(settings) as engine:
        added = await engine.add_detailed(
            args.table,
            agent_id=args.agent,
            content=args.content,
            recall=args.recall,
            **{k: v for k, v in fields.items() if v is not None},
        )
    raised = f"; raised: {', '.join(added.raised)}" if added.raised else ""
    text = (
        str(added.id)
        if added.created
        else f"{added.id} (a duplicate: the existing memory, retrieved{raised})"
    )
    text += "".join(f"\n  recalled {h.table} {h.id}: {h.content}" for h in added.recalled)
    data: dict[str, Any] = {"id": str(added.id), "created": added.created}
    if args.recall:
        data["recalled"] = [{"table": h.table, "id": str(h.id)} for h in added.recalled]
    emit(args, data if added.created else {**data, "raised": list(added.raised)}, text)
    return 0


async def cmd_sweep(args: argparse.Namespace, settings: Settings) -> int:
    mode: Mode = "full" if args.full else "prune" if args.prune else "due"
    async with Engine(settings) as engine:
        if args.now is not None and not args.allow_future:
            ahead = args.now - await engine.now()
            if ahead > FUTURE_SKEW:
                raise InputError(
                    f"--now is {ahead} ahead of the database's clock: a sweep then prunes"
                    " memories that are live now (--allow-future if that is meant)"
                )
        tables = args.table or None
        progress = None
        if sys.stderr.isatty() and not args.json:
            progress = await _progress_bar(engine, tables, args.agent, mode, args.now)
        report = await engine.sweep(
            now=args.now,
            tables=tables,
            agent=args.agent,
            dry_run=args.dry_run,
            mode=mode,
            progress=progress,
        )
    prefix = "dry run, nothing written:" if args.dry_run else "swept"
    emit(args, report.as_dict(), f"{prefix} {report.summary()} at {report.now.isoformat()}")
    return 0


async def _progress_bar(
    engine: Engine,
    tables: list[str] | None,
    agent: str | None,
    mode: str,
    now: datetime | None,
) -> Callable[[str, int, bool], None]:
    names = tables or [s.name for s in MEMORY_TABLES]
    if mode == "full" or agent is not None:
        totals = {name: await engine.count_live(name, agent) for name in names}
    else:
        at = now or await engine.now()
        totals = {name: await engine.count_due(name, at, prune=mode == "prune") for name in names}

    def show(table: str, scanned: int, done: bool) -> None:
        total = max(totals[table], 1)
        filled = 30 if done else min(30, 30 * scanned // total)
        bar = "#" * filled + "." * (30 - filled)
        end = "\n" if done else ""
        print(f"\r{table:<16} [{bar}] {scanned}/{totals[table]}", end=end, file=sys.stderr)

    return show


async def cmd_explain(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        info = await engine.explain(args.table, args.id, now=args.now)
    text = "\n".join(f"{key:>18}: {value}" for key, value in info.items())
    emit(args, info, text)
    return 0


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        if args.query is not None:
            if args.expand:
                raise InputError("--expand goes with --embedding")
            hits = await engine.recall(
                args.agent, args.query, k=args.k, tables=args.table, at=args.now,
                record=not args.no_record,
            )  # fmt: skip
        else:
            if args.table:
                raise InputError("--table goes with --query (--embedding searches vectors)")
            hits = await engine.search(
                args.agent, args.embedding, k=args.k, now=args.now, expand=args.expand,
                record=not args.no_record,
            )  # fmt: skip
    # The engine is closed: the LTP of these hits has been applied (or counted as dropped).
    stats = engine.ltp.stats

    def why(h: Hit) -> str:
        if h.via:
            return f"  (linked to {h.via})"
        return f"  sim {h.similarity:.4f}" if h.similarity is not None else ""

    def relevance(h: Hit) -> str:
        return f"rel {h.relevance:.4f}" if h.relevance is not None else "rel -     "

    lines = [
        f"{h.score:.4f}  {relevance(h)}  sal {h.salience:.4f}  {h.table:<15} {h.id}"
        f"  {h.content}{why(h)}"
        for h in hits
    ]
    # What the hits were recorded as: retrievals that reinforce them, surfacings that
    # only count (ltp.on_search = "count"), or nothing (--no-record).
    recorded = "none" if args.no_record else settings.ltp.on_search
    reinforced = [str(h.id) for h in hits] if recorded == "reinforce" and not stats.dropped else []
    emit(
        args,
        {"hits": [h.as_dict() for h in hits], "recorded": recorded, "reinforced": reinforced,
         "ltp": stats.as_dict()},
        "\n".join(lines) or "no hits",
    )  # fmt: skip
    return _ltp_exit(stats.dropped)


async def cmd_embed(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        made = await engine.embed_missing(args.agent)
    lines = [f"{table}: {n} vectors written" for table, n in made.items()]
    emit(args, {"written": made}, "\n".join(lines))
    return 0


@contextmanager
def _extra(name: str, command: str) -> Iterator[None]:
    """The imports inside come with an optional extra: without it, one line says which."""
    try:
        yield
    except ImportError as exc:
        raise InputError(
            f"ethos {command} needs the {name} extra: pip install 'ethos[{name}]' ({exc})"
        ) from None


async def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    with _extra("mcp", "mcp"):
        from ethos.integrations.door import door_for
        from ethos.integrations.mcp import build_server, serve_http
    if args.http is None:
        await build_server(settings, agent=args.agent).run_stdio_async()
        return 0
    host, port = host_port(args.http, "--http")
    door = door_for(
        host,
        tokens={args.token_env or settings.mcp.token_env: "write"},
        allowed_hosts=settings.mcp.allowed_hosts,
        allowed_origins=settings.mcp.allowed_origins,
        flag="--http",
        section="mcp",
    )  # before anything is opened: a refused bind changes nothing
    await serve_http(build_server(settings, agent=args.agent), host, port, door)
    return 0


async def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    with _extra("server", "serve"):
        from ethos.integrations.http import serve_http
    host, port = host_port(args.http, "--http")
    await serve_http(settings, host, port, token_env=args.token_env)
    return 0


async def cmd_feedback(args: argparse.Namespace, settings: Settings) -> int:
    kind = "useful" if args.useful else "wrong"
    async with Engine(settings) as engine:
        await engine.check_ids(args.table, args.ids)
        await engine.feedback(args.table, args.ids, kind, at=args.now)
    stats = engine.ltp.stats
    text = (
        f"{stats.applied} {kind} applied, {stats.skipped} skipped (unknown or pruned),"
        f" {stats.pruned} pruned by it, {stats.links} links updated, {stats.dropped} dropped"
    )
    emit(args, {"table": args.table, "feedback": kind, **stats.as_dict()}, text)
    return _ltp_exit(stats.dropped)


async def cmd_links(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        links = await engine.links(args.table, args.id, now=args.now)
    lines = [f"{link['weight']:.4f}  {link['table']}  {link['id']}" for link in links]
    emit(args, {"table": args.table, "id": args.id, "links": links}, "\n".join(lines) or "no links")
    return 0


async def cmd_record_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        await engine.check_ids(args.table, args.ids)
        await engine.record_retrieval(args.table, args.ids, now=args.now)
    stats = engine.ltp.stats
    text = (
        f"{stats.applied} applied, {stats.skipped} skipped (unknown or pruned),"
        f" {stats.reinforced} sources reinforced, {stats.dropped} dropped"
    )
    emit(args, {"table": args.table, **stats.as_dict()}, text)
    return _ltp_exit(stats.dropped)


def _ltp_exit(dropped: int) -> int:
    if dropped:
        print(f"ethos: error: {dropped} retrievals could not be applied", file=sys.stderr)
        return 1
    return 0


async def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    if args.metrics:
        host_port(args.metrics, "--metrics")
        settings.metrics.listen = args.metrics
    stop = asyncio.Event()
    with on_stop(stop.set):
        try:
            await Daemon(settings).run(stop)
        except DaemonStopTimeout as exc:
            # What did not stop may never stop: leave without waiting for it.
            print(f"ethos: error: {exc}", file=sys.stderr)
            os._exit(1)
    return 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        status = await engine.status(settings.consolidation.alive_seconds)
    emit(args, status, _status_text(status))
    return 0


def _status_text(status: dict[str, Any]) -> str:
    lines = [f"daemons: {len(status['daemons'])}"]
    for d in status["daemons"]:
        lock = ", holds the sweep lock" if d["holds_sweep_lock"] else ""
        due = (
            f", next sweep due {d['next_sweep_due']:%Y-%m-%d %H:%M:%S%z}"
            if d["next_sweep_due"]
            else ""
        )
        lines.append(
            f"  {d['id']} ({d['role']}{lock}), heartbeat {d['heartbeat_at']:%H:%M:%S%z}{due},"
            f" LTP backlog {d['ltp_backlog']}, dropped {d['ltp_dropped']}"
        )
    last = status["last_sweep"]
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
    emit(args, stats, _stats_text(stats))
    return 0


def _table_text(title: str, rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """A plain aligned table."""
    if not rows:
        return [f"{title}: none"]
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    line = "  ".join
    return [
        f"{title}:",
        "  " + line(c.ljust(w) for c, w in zip(columns, widths, strict=True)),
        *("  " + line(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells),
    ]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 10 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _stats_text(stats: dict[str, list[dict[str, Any]]]) -> str:
    sections = [
        ("memories", stats["counts"], ["table_name", "live", "pruned", "pinned"]),
        (
            "average salience by age (live)",
            stats["salience_by_age"],
            ["table_name", "age_bucket", "avg_salience", "count"],
        ),
        ("at risk (near the prune threshold)", stats["at_risk"], ["table_name", "count"]),
        (
            "most retrieved",
            stats["most_retrieved"],
            ["table_name", "content", "retrieval_count", "salience"],
        ),
        (
            "recent sweeps",
            stats["recent_sweeps"],
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
        ("LTP in daemons", stats["ltp"], ["daemon_id", "role", "ltp_backlog", "ltp_dropped"]),
        (
            "by policy",
            stats["policies"],
            ["table_name", "policy", "live", "pruned", "avg_salience"],
        ),
    ]
    return "\n".join(line for s in sections for line in [*_table_text(*s), ""]).rstrip()


async def cmd_recover(args: argparse.Namespace, settings: Settings) -> int:
    selector = Selector(
        ids=tuple(parse_id(i) for i in args.id or ()),
        agent=args.agent,
        since=args.since,
        until=args.until,
        reason=args.reason,
    )
    async with Engine(settings) as engine:
        report = await engine.recover(
            args.table,
            selector,
            now=args.now,
            dry_run=args.dry_run,
            command=" ".join(["ethos", *sys.argv[1:]]),
        )
    verb = "would recover" if args.dry_run else "recovered"
    lines = [f"{verb} {len(report.rows)} {report.table} rows (strength {report.strength})"]
    lines += [f"  {r['id']}  {r['prune_reason']:<8} {r['content']}" for r in report.rows[:20]]
    if len(report.rows) > 20:
        lines.append(f"  ... and {len(report.rows) - 20} more (--json lists them all)")
    emit(args, report.as_dict(), "\n".join(lines))
    return 0


async def cmd_consolidate(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        report = await engine.consolidate(
            args.table, agent=args.agent, near=args.near, now=args.now, dry_run=args.dry_run,
            trigger="manual",
        )  # fmt: skip
    verb = "would merge" if args.dry_run else "merged"
    lines = [
        f"{table}: {verb} {c['merged']} duplicates in {c['groups']} groups"
        for table, c in report.counts.items()
    ]
    emit(args, report.as_dict(), "\n".join(lines))
    return 0


async def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        report = await engine.forget(args.table, args.ids, now=args.now, trigger="manual")
    text = f"forgot {len(args.ids)} {args.table} rows (reason manual; ethos recover undoes it)"
    emit(args, report.as_dict(), text)
    return 0


async def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        report = await engine.purge(
            args.pruned_before, tables=args.table, agent=args.agent, reason=args.reason,
            now=args.now, dry_run=args.dry_run, trigger="manual",
        )  # fmt: skip
    verb = "would delete" if args.dry_run else "deleted"
    lines = [
        f"{table}: {verb} {sum(c.values())} pruned rows"
        + (f" ({', '.join(f'{why} {n}' for why, n in sorted(c.items()))})" if c else "")
        for table, c in report.counts.items()
    ]
    emit(args, report.as_dict(), "\n".join(lines))
    return 0


async def cmd_erase(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        report = await engine.erase(args.agent, dry_run=args.dry_run, trigger="manual")
    verb = "would delete" if args.dry_run else "deleted"
    lines = [f"{name}: {verb} {n}" for name, n in report.counts.items()]
    emit(args, report.as_dict(), f"agent {args.agent}\n" + "\n".join(lines))
    return 0


async def cmd_roles(args: argparse.Namespace, settings: Settings) -> int:
    agents = [parse_agent_role(value) for value in args.agent_role]
    async with Engine(settings) as engine:
        statements = await engine.make_roles(args.app, args.eraser, agents, dry_run=args.dry_run)
    text = ";\n".join(statements) + ";"
    if not args.dry_run:
        text += f"\n-- {len(statements)} statements applied"
    emit(args, {"statements": statements, "applied": not args.dry_run}, text)
    return 0


async def cmd_curve(args: argparse.Namespace, settings: Settings) -> int:
    policies = list(settings.policy_table.values())
    if args.plot:
        plot(policies, Path(args.plot))
    curves = policy_curves(policies)
    lines = []
    for c in curves:
        p = c["settings"]
        promotion = (
            f", promoted to {c['promote_to']} at {c['promote_after']} retrievals"
            if c["promote_to"]
            else ""
        )
        lines += [
            f"{c['name']}: {p['curve']} curve, threshold {p['prune_threshold']}{promotion}"
            + (" (never decays)" if p["never_decays"] else ""),
            f"  {'retrievals':>10} {'tau days':>10} {'half-life':>10} {'pruned after (E=0)':>19}"
            f" {'(E=1)':>8}",
        ]
        lines += [
            f"  {r['retrievals']:>10} {r['tau_days']:>10.3g} {_days(r['half_life_days']):>10}"
            f" {_days(r['days_until_pruned_emotion_0']):>19}"
            f" {_days(r['days_until_pruned_emotion_1']):>8}"
            for r in c["curve"]
        ]
    if args.plot:
        lines.append(f"plot written to {args.plot}")
    emit(args, {"policies": curves, "plot": args.plot}, "\n".join(lines))
    return 0


def _days(value: float | None) -> str:
    if value is None:
        return "never"
    return f"{value * 24:.3g} h" if value < 2 else f"{value:.4g} d"


async def cmd_policy_list(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        policies = await engine.policies()
    configured = settings.policy_table
    data = [{**p.as_dict(), "configured": p.name in configured} for p in policies]
    lines = [_policy_line(p) for p in data]
    emit(args, {"policies": data}, "\n".join(lines))
    return 0


async def cmd_policy_show(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        found = {p.name: p for p in await engine.policies()}
        if args.name not in found:
            settings.policy(args.name)  # one line naming the policies there are
        agents = await engine.policy_agents(args.name)
    data = {
        **found[args.name].as_dict(),
        "configured": args.name in settings.policy_table,
        "agents": agents,
    }
    text = "\n".join(
        [_policy_line(data), *(f"{k:>18}: {v}" for k, v in data.items() if k != "name")]
    )
    emit(args, data, text)
    return 0


def _policy_line(p: dict[str, Any]) -> str:
    life = "never pruned" if p["lifetime_days"] is None else f"lives {_days(p['lifetime_days'])}"
    promotion = f", to {p['promote_to']} at {p['promote_after']}" if p["promote_to"] else ""
    gone = "" if p["configured"] else " (no longer configured)"
    if p["never_decays"]:
        return f"{p['name']:<12} never decays{promotion}{gone}"
    return (
        f"{p['name']:<12} {p['curve']:<11} tau {p['base_tau_days']:.4g} d, threshold"
        f" {p['prune_threshold']}, {life}{promotion}{gone}"
    )


async def cmd_policy_assign(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        await engine.assign_policy(args.agent, args.policy)
    emit(
        args,
        {"agent": args.agent, "policy": args.policy},
        f"new memories of {args.agent} get {args.policy}",
    )
    return 0


async def cmd_policy_unassign(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        old = await engine.unassign_policy(args.agent)
    text = (
        f"{args.agent} had no policy of its own"
        if old is None
        else f"{args.agent} no longer has {old}: new memories get the default"
    )
    emit(args, {"agent": args.agent, "policy": old}, text)
    return 0


async def cmd_move(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        moved = await engine.move(args.table, args.id, args.policy, now=args.now)
    text = (
        f"moved {moved['id']} from {moved['old_policy']} to {moved['policy']}"
        f" (salience {moved['salience']:.4f} at {moved['now']})"
    )
    emit(args, moved, text)
    return 0


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    # The demo tells its own story: per-sweep log events would drown it.
    if settings.logging.level == "info":
        logs.configure(settings.logging.model_copy(update={"level": "warning"}))
    async with Engine(settings) as engine:
        await run_demo(engine)
    return 0


# --- parser ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ethos", description="A PostgreSQL-native memory decay engine.")
    parser.add_argument("--config", help="config file (default: $ETHOS_CONFIG or ./ethos.toml)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    # Every command that reports something can report it as JSON.
    as_json = _Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")

    def command(
        name: str, func: Command, help: str, *, reports: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, parents=[as_json] if reports else [])
        p.set_defaults(func=func)
        return p

    command(
        "migrate",
        cmd_migrate,
        "bring the database schema up to date (alembic upgrade head)",
        reports=False,
    )

    dbp = sub.add_parser("db", help="the embedded PostgreSQL")
    dbsub = dbp.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    dbsub.add_parser("url", help="print a libpq URI (psql accepts it)").set_defaults(
        func=cmd_db_url
    )
    dbsub.add_parser("stop", help="stop the embedded server").set_defaults(func=cmd_db_stop)

    p = command("add", cmd_add, "add one memory and print its id")
    p.add_argument("table", type=_table, metavar="episode|fact|vector")
    p.add_argument("--agent", required=True)
    p.add_argument("--content", required=True)
    p.add_argument("--salience", type=float)
    p.add_argument("--emotional-tone", type=float)
    p.add_argument("--confidence", type=float)
    p.add_argument("--embedding", help="a JSON array of numbers")
    p.add_argument("--source-type", type=_table)
    p.add_argument("--source-id")
    p.add_argument("--created-at", type=_time("created-at"))
    p.add_argument("--expires-at", type=_time("expires-at"))
    p.add_argument("--pinned", action="store_true", default=None)
    p.add_argument("--metadata", help="a JSON object")
    p.add_argument("--policy", help="its decay policy (default: importance, agent, default)")
    p.add_argument("--importance", type=float, help="0..1; picks a policy when none is given")
    p.add_argument(
        "--recall", type=int, default=0, metavar="K",
        help="first recall (and reinforce) the K memories the text brings back",
    )  # fmt: skip

    p = command("sweep", cmd_sweep, "decay and prune what is due, now or at --now")
    p.add_argument("--now", type=_time("now"))
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--full", action="store_true", help="every live row, due or not")
    kind.add_argument("--prune", action="store_true", help="only the rows due to be pruned")
    p.add_argument("--table", type=_table, action="append", help="repeatable; default: all")
    p.add_argument("--agent")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument(
        "--allow-future", action="store_true", help="a --now more than a minute ahead of now"
    )

    p = command("explain", cmd_explain, "why a memory has its salience, and when it fades out")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--now", type=_time("now"))

    p = command(
        "daemon", cmd_daemon, "run the consolidation daemon until SIGTERM or SIGINT", reports=False
    )
    p.add_argument("--metrics", metavar="HOST:PORT", help="serve /metrics and /healthz there")
    command("status", cmd_status, "daemons, the sweep lock, the last and next sweep, LTP")

    p = command("stats", cmd_stats, "what the monitoring views say, as readable tables")
    p.add_argument("--agent")

    p = command("recover", cmd_recover, "bring pruned memories back with a fresh start")
    p.add_argument("table", type=_table)
    p.add_argument("--id", action="append", help="repeatable")
    p.add_argument("--agent")
    p.add_argument("--since", type=_time("since"), help="pruned at or after")
    p.add_argument("--until", type=_time("until"), help="pruned before")
    p.add_argument("--reason", choices=PRUNE_REASONS)
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--dry-run", action="store_true")

    p = command("consolidate", cmd_consolidate, "merge duplicate memories already stored")
    p.add_argument("--table", type=_table, action="append", help="repeatable; default: all")
    p.add_argument("--agent")
    p.add_argument("--near", action="store_true", help="near-duplicate vectors too")
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--dry-run", action="store_true")

    p = command("forget", cmd_forget, "prune memories on request (recoverable)")
    p.add_argument("table", type=_table)
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--now", type=_time("now"))

    p = command("purge", cmd_purge, "hard-delete memories pruned before a moment (for good)")
    p.add_argument("--pruned-before", type=_time("pruned-before"), required=True)
    p.add_argument("--table", type=_table, action="append", help="repeatable; default: all")
    p.add_argument("--agent")
    p.add_argument("--reason", choices=PRUNE_REASONS)
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--dry-run", action="store_true")

    p = command("erase", cmd_erase, "hard-delete everything of one agent (for good)")
    p.add_argument("--agent", required=True)
    confirm = p.add_mutually_exclusive_group(required=True)
    confirm.add_argument("--yes", action="store_true", help="really delete")
    confirm.add_argument("--dry-run", action="store_true", help="count what would go")

    p = command("roles", cmd_roles, "make the database roles ethos runs as (run as the owner)")
    p.add_argument("--app", required=True, help="daemons, search, CLI: all but hard deletes")
    p.add_argument("--eraser", required=True, help="the app's rights and purge, erase")
    p.add_argument(
        "--agent-role", action="append", default=[], metavar="ROLE=AGENT",
        help="repeatable: a role that sees only AGENT's rows (turns row-level security on)",
    )  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="print the statements, change nothing")

    p = command("curve", cmd_curve, "time to prune by retrievals and emotion, under these settings")
    p.add_argument("--plot", metavar="FILE.png")

    command(
        "demo", cmd_demo, "sample memories of two agents through 28 simulated days", reports=False
    )

    policy = sub.add_parser("policy", help="decay policies and per-agent decay domains")
    psub = policy.add_subparsers(dest="policy_command", required=True, parser_class=_Parser)

    def policy_command(name: str, func: Command, help: str) -> argparse.ArgumentParser:
        p = psub.add_parser(name, help=help, description=help, parents=[as_json])
        p.set_defaults(func=func)
        return p

    policy_command("list", cmd_policy_list, "the policies, each with its curve and lifetime")
    p = policy_command("show", cmd_policy_show, "one policy, and the agents assigned to it")
    p.add_argument("name")
    p = policy_command("assign", cmd_policy_assign, "give an agent's new memories a policy")
    p.add_argument("agent")
    p.add_argument("policy")
    p = policy_command("unassign", cmd_policy_unassign, "an agent's new memories: the default")
    p.add_argument("agent")

    p = command("move", cmd_move, "move a memory to another policy, re-anchored at now")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--policy", required=True)
    p.add_argument("--now", type=_time("now"))

    p = command("search", cmd_search, "an agent's memories that answer a query, by text or vector")
    p.add_argument("--agent", required=True)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", help="words: recall by text (hybrid with a provider)")
    what.add_argument("--embedding", help="a JSON array of numbers: nearest vectors")
    p.add_argument("--table", type=_table, action="append", help="with --query; repeatable")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--expand", action="store_true", help="add the hits' linked memories")
    p.add_argument(
        "--no-record",
        action="store_true",
        help="look only: the hits are neither reinforced nor counted",
    )

    p = command("embed", cmd_embed, "write the vectors episodes and facts lack (a provider)")
    p.add_argument("--missing", action="store_true", required=True, help="those with none")
    p.add_argument("--agent")

    p = command(
        "mcp", cmd_mcp, "serve memory tools over MCP (stdio; --http HOST:PORT)", reports=False
    )
    p.add_argument("--agent", help="every tool works on this agent (default: tools take agent)")
    p.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP at /mcp instead of stdio")
    p.add_argument(
        "--token-env", metavar="NAME", help="the variable holding the bearer token (--http)"
    )

    p = command("serve", cmd_serve, "the HTTP API (mem0's shape) and the dashboard", reports=False)
    p.add_argument("--http", metavar="HOST:PORT", required=True, help="where to listen")
    p.add_argument(
        "--token-env", metavar="NAME", help="the token that reads and writes ([server] token_env)"
    )

    p = command("feedback", cmd_feedback, "memories the agent used, or found wrong")
    p.add_argument("table", type=_table)
    p.add_argument("ids", nargs="+", metavar="ID")
    verdict = p.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--useful", action="store_true", help="reinforce (one retrieval)")
    verdict.add_argument("--wrong", action="store_true", help="weaken (× feedback.wrong_factor)")
    p.add_argument("--now", type=_time("now"))

    p = command("links", cmd_links, "a memory's associations and their weights")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--now", type=_time("now"))

    p = command("record-retrieval", cmd_record_retrieval, "strengthen memories read by other means")
    p.add_argument("table", type=_table)
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--now", type=_time("now"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
        logs.configure(settings.logging)
        code: int = asyncio.run(args.func(args, settings))
        return code
    except NotFoundError as exc:
        if getattr(args, "json", False):  # which ids, for a caller that reads the JSON
            print(json.dumps({"error": str(exc), "unknown_ids": exc.ids}))
        return _fail(str(exc))
    except EthosError as exc:
        return _fail(str(exc))
    except json.JSONDecodeError as exc:
        return _fail(f"invalid JSON: {exc}")
    except OSError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130


def _fail(message: str) -> int:
    line = logs.redact_secrets(message.splitlines()[0]) if message else "failed"
    print(f"ethos: error: {line}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
