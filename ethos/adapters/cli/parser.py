"""The argument parser: every subcommand, its flags, and the command it runs; a
bad input is one line and exit code 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from ethos.adapters.cli.lifecycle import (
    cmd_erase,
    cmd_forget,
    cmd_merge,
    cmd_purge,
    cmd_recover,
)
from ethos.adapters.cli.memories import (
    cmd_add,
    cmd_embed,
    cmd_explain,
    cmd_feedback,
    cmd_links,
    cmd_record_retrieval,
    cmd_search,
)
from ethos.adapters.cli.operations import (
    cmd_daemon,
    cmd_db_stop,
    cmd_db_url,
    cmd_distribute,
    cmd_migrate,
    cmd_roles,
    cmd_stats,
    cmd_status,
    cmd_sweep,
)
from ethos.adapters.cli.policies import (
    cmd_curve,
    cmd_move,
    cmd_policy_assign,
    cmd_policy_list,
    cmd_policy_show,
    cmd_policy_unassign,
    cmd_settings_apply,
)
from ethos.adapters.cli.servers import cmd_demo, cmd_mcp, cmd_serve
from ethos.domain.errors import InputError
from ethos.domain.inputs import parse_time
from ethos.domain.tables import PRUNE_REASONS, table_spec
from ethos.settings import Settings

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2, like every other bad input
        print(f"ethos: error: {message}", file=sys.stderr)
        sys.exit(2)


def _time(name: str) -> Callable[[str], datetime]:
    def parse(value: str) -> datetime:
        try:
            return parse_time(value, name)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _allow_future(p: argparse.ArgumentParser, flag: str = "--now") -> None:
    p.add_argument(
        "--allow-future", action="store_true", help=f"a {flag} more than a minute ahead of now"
    )


def _table(value: str) -> str:
    try:
        return table_spec(value).name
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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

    command(
        "distribute",
        cmd_distribute,
        "on a Citus coordinator: distribute the migrated tables by agent over its workers,"
        " in place (again: converges)",
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
    p.add_argument(
        "--embedding", help="a JSON array of numbers (an episode's or fact's: its embedding)"
    )
    p.add_argument("--created-at", type=_time("created-at"))
    _allow_future(p, "--created-at")
    p.add_argument("--expires-at", type=_time("expires-at"))
    p.add_argument("--pinned", action="store_true", default=None)
    p.add_argument("--metadata", help="a JSON object")
    p.add_argument("--policy", help="its decay policy (default: importance, agent, its words)")
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
    _allow_future(p)

    p = command("explain", cmd_explain, "why a memory has its salience, and when it fades out")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--agent", help="the memory's agent: read on its shard alone on a cluster")

    p = command(
        "daemon", cmd_daemon, "run the consolidation daemon until SIGTERM or SIGINT", reports=False
    )
    p.add_argument("--metrics", metavar="HOST:PORT", help="serve /metrics and /healthz there")
    command("status", cmd_status, "daemons, the leader lock, the last and next sweep, LTP")

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

    p = command("merge", cmd_merge, "merge duplicate memories already stored")
    p.add_argument("--table", type=_table, action="append", help="repeatable; default: all")
    p.add_argument("--agent")
    p.add_argument("--near", action="store_true", help="near-duplicate vectors too")
    p.add_argument("--now", type=_time("now"))
    p.add_argument("--dry-run", action="store_true")

    p = command("forget", cmd_forget, "prune memories on request (recoverable)")
    p.add_argument("table", type=_table)
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--agent", help="the memories' agent: no other agent's is touched")
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

    settings_parser = sub.add_parser("settings", help="the settings the database keeps")
    ssub = settings_parser.add_subparsers(
        dest="settings_command", required=True, parser_class=_Parser
    )
    apply_help = "write the policies, tiers and defaults of these settings to the database"
    p = ssub.add_parser("apply", help=apply_help, description=apply_help, parents=[as_json])
    p.set_defaults(func=cmd_settings_apply)
    p.add_argument("--dry-run", action="store_true", help="show the differences, write nothing")

    p = command("move", cmd_move, "move a memory to another policy, re-anchored at now")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--policy", required=True)
    p.add_argument("--agent", help="whose memory: needed where several agents hold the id")
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
    p.add_argument("--agent", help="the memories' agent: no other agent's is touched")
    p.add_argument("--now", type=_time("now"))
    _allow_future(p)

    p = command("links", cmd_links, "a memory's associations and their weights")
    p.add_argument("table", type=_table)
    p.add_argument("id")
    p.add_argument("--now", type=_time("now"))

    p = command("record-retrieval", cmd_record_retrieval, "strengthen memories read by other means")
    p.add_argument("table", type=_table)
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--agent", help="the memories' agent: no other agent's is touched")
    p.add_argument("--now", type=_time("now"))
    _allow_future(p)
    return parser
