"""The argument parser: every subcommand, its flags, and the command it runs; a
bad input is one line and exit code 2."""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from ethos.adapters.cli.imports import cmd_import
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
    cmd_history,
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
from ethos.domain.tables import MEMORY_TABLES, PRUNE_REASONS, TableSpec, table_spec
from ethos.services.engine.memories import IMPORT_BATCH
from ethos.settings import Settings

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


class _Parser(argparse.ArgumentParser):
    # A command whose memories are [TABLE] ID...: its words may come among its flags
    # (`forget episode --agent a ID`), as when the table was required.
    intermixed = False
    _intermixing = False

    def error(self, message: str) -> Any:  # one line, exit 2, like every other bad input
        print(f"ethos: error: {message}", file=sys.stderr)
        sys.exit(2)

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self.intermixed or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # the intermixed parse calls this twice, plainly
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


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


def _is_id(word: str) -> bool:
    try:
        uuid.UUID(word)
    except ValueError:
        return False
    return True


def _names_table(word: str) -> bool:
    try:
        table_spec(word)
    except InputError:
        return False
    return True


class _Ids(argparse.Action):
    """The ids after an optional table: a first word that is an id, not a table, is the
    first id (ids are UUIDs: no table is named like one)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: Any, option_string: str | None = None,
    ) -> None:  # fmt: skip
        ids = [values] if isinstance(values, str) else list(values)
        table = namespace.table
        if table is not None and _is_id(table):
            ids.insert(0, table)
            table = None
        if table is None and len(ids) == 1 and _names_table(ids[0]):
            raise argparse.ArgumentError(self, "give the id after the table")
        if self.nargs is None and len(ids) > 1:
            raise argparse.ArgumentError(self, f"one id (got {len(ids)})")
        try:
            namespace.table = None if table is None else _table(table)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(None, str(exc)) from None
        setattr(namespace, self.dest, ids if self.nargs else ids[0])


def _memories(p: argparse.ArgumentParser, *, many: bool) -> None:
    """[TABLE] ID (or ID...): the ids find their table and agent; a table given (as
    scripts did when it was needed) is checked, and a wrong one says where the id is."""
    assert isinstance(p, _Parser)
    p.intermixed = True
    p.add_argument(
        "table", nargs="?", metavar="TABLE",
        help="episode|fact|vector (optional: found from the id; where given, checked)",
    )  # fmt: skip
    ids = "the memories' ids (UUIDs)" if many else "the memory's id (a UUID)"
    p.add_argument(
        "ids" if many else "id", nargs="+" if many else None, metavar="ID", action=_Ids,
        help=ids,
    )  # fmt: skip


def _agent_of_ids(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent", help="the memories' agent: needed only where an id is several agents'"
    )


def _now(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--now", type=_time("now"), help=f"{what} (default: the database's clock)")


def _dry_run(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--dry-run", action="store_true", help=what)


def _tables(p: argparse.ArgumentParser, what: str = "repeatable; default: all") -> None:
    p.add_argument("--table", type=_table, action="append", help=f"episode|fact|vector: {what}")


# The flags of `add` that only some tables take, by the fact of TableSpec that gives them.
def _add_flags(p: argparse.ArgumentParser, spec: TableSpec) -> None:
    p.add_argument(
        "--embedding", help="a JSON array of numbers: its vector (default: the embedding"
        " provider's, of --content)",
    )  # fmt: skip
    if spec.emotion_column:
        p.add_argument(
            "--emotional-tone", type=float, help="0..1: how charged it was (lives longer)"
        )
    if spec.has_confidence:
        p.add_argument("--confidence", type=float, help="0..1: how sure (its own curve)")
    if spec.has_expiry:
        p.add_argument("--expires-at", type=_time("expires-at"), help="pruned then, used or not")


def _add_command(sub: argparse._SubParsersAction[_Parser], as_json: _Parser) -> None:
    """`add TABLE`: a subcommand per table, each with the flags its table takes alone
    (_add_flags) beside those every table takes."""
    add = sub.add_parser(
        "add", help="add one memory and print its id", description="add one memory and print"
        " its id; `ethos add TABLE --help` lists the flags that table takes",
    )  # fmt: skip
    tables = add.add_subparsers(
        dest="table", required=True, parser_class=_Parser, metavar="episode|fact|vector"
    )
    for spec in MEMORY_TABLES:
        what = f"add {'an' if spec.alias[0] in 'aeiou' else 'a'} {spec.alias} ({spec.name})"
        p = tables.add_parser(
            spec.alias, aliases=[spec.name], help=what, description=what, parents=[as_json]
        )
        p.set_defaults(func=cmd_add, table=spec.name)
        p.add_argument("--agent", required=True, help="whose memory it is")
        text = p.add_mutually_exclusive_group(required=True)
        text.add_argument("--content", metavar="TEXT", help="its text; - reads it from stdin")
        text.add_argument(
            "--content-file", metavar="PATH", help="its text, read from a file (UTF-8)"
        )
        p.add_argument("--salience", type=float, help="0..1: its salience at the start")
        _add_flags(p, spec)
        p.add_argument(
            "--created-at", type=_time("created-at"), help="when it happened (default: now)"
        )
        _allow_future(p, "--created-at")
        p.add_argument(
            "--pinned", action="store_true", default=None, help="kept: never pruned by decay"
        )
        p.add_argument("--metadata", help="a JSON object kept with it")
        p.add_argument("--policy", help="its decay policy (default: importance, agent, its words)")
        p.add_argument("--importance", type=float, help="0..1; picks a policy when none is given")
        p.add_argument(
            "--recall", type=int, default=0, metavar="K",
            help="first recall (and reinforce) the K memories the text brings back",
        )  # fmt: skip


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

    _add_command(sub, as_json)

    p = command("import", cmd_import, "add memories from JSON lines, a transaction a batch")
    p.add_argument(
        "file", metavar="FILE",
        help="one JSON object a line: table, agent, content and add's fields (created_at"
        " as ISO-8601); - reads stdin",
    )  # fmt: skip
    p.add_argument(
        "--batch-size", type=int, default=IMPORT_BATCH, metavar="N", help="lines a transaction"
    )
    _allow_future(p, "created_at")

    p = command("sweep", cmd_sweep, "decay and prune what is due, now or at --now")
    _now(p, "sweep as of this moment")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--full", action="store_true", help="every live row, due or not")
    kind.add_argument("--prune", action="store_true", help="only the rows due to be pruned")
    _tables(p)
    p.add_argument("--agent", help="this agent's memories alone (default: every agent's)")
    _dry_run(p, "count what it would decay and prune, change nothing")
    _allow_future(p)

    p = command("explain", cmd_explain, "why a memory has its salience, and when it fades out")
    _memories(p, many=False)
    _now(p, "explain it as of this moment")
    _agent_of_ids(p)

    p = command("history", cmd_history, "what happened to a memory: added, updated, pruned,"
                " recovered")  # fmt: skip
    _memories(p, many=False)
    _agent_of_ids(p)

    p = command(
        "daemon", cmd_daemon, "run the consolidation daemon until SIGTERM or SIGINT", reports=False
    )
    p.add_argument("--metrics", metavar="HOST:PORT", help="serve /metrics and /healthz there")
    command("status", cmd_status, "daemons, the leader lock, the last and next sweep, LTP")

    p = command("stats", cmd_stats, "what the monitoring views say, as readable tables")
    p.add_argument("--agent", help="this agent's alone (default: every agent's)")

    p = command("recover", cmd_recover, "bring pruned memories back with a fresh start")
    p.add_argument(
        "table", type=_table, nargs="?", metavar="TABLE",
        help="episode|fact|vector (optional with --id: found from the ids)",
    )  # fmt: skip
    p.add_argument("--id", action="append", help="a pruned memory's id (repeatable)")
    p.add_argument("--agent", help="this agent's memories alone")
    p.add_argument("--since", type=_time("since"), help="pruned at or after")
    p.add_argument("--until", type=_time("until"), help="pruned before")
    p.add_argument("--reason", choices=PRUNE_REASONS, help="pruned for this reason")
    _now(p, "the fresh start's moment")
    _dry_run(p, "list what it would recover, change nothing")

    p = command("merge", cmd_merge, "merge duplicate memories already stored")
    _tables(p)
    p.add_argument("--agent", help="this agent's memories alone (default: every agent's)")
    p.add_argument("--near", action="store_true", help="near-duplicate vectors too")
    _now(p, "the merge's moment")
    _dry_run(p, "count what it would merge, change nothing")

    p = command("forget", cmd_forget, "prune memories on request (recoverable)")
    _memories(p, many=True)
    _agent_of_ids(p)
    _now(p, "the moment they are pruned at")

    p = command("purge", cmd_purge, "hard-delete memories pruned before a moment (for good)")
    p.add_argument(
        "--pruned-before", type=_time("pruned-before"), required=True,
        help="delete the memories pruned before this moment",
    )  # fmt: skip
    _tables(p)
    p.add_argument("--agent", help="this agent's memories alone (default: every agent's)")
    p.add_argument("--reason", choices=PRUNE_REASONS, help="pruned for this reason alone")
    _now(p, "the purge's moment")
    _dry_run(p, "count what it would delete, delete nothing")

    p = command("erase", cmd_erase, "hard-delete everything of one agent (for good)")
    p.add_argument("--agent", required=True, help="the agent whose memories all go")
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
    _dry_run(p, "print the statements, change nothing")

    p = command("curve", cmd_curve, "time to prune by retrievals and emotion, under these settings")
    p.add_argument("--plot", metavar="FILE.png", help="draw the curves in this image too")

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
    p.add_argument("name", help="the policy's name")
    p = policy_command("assign", cmd_policy_assign, "give an agent's new memories a policy")
    p.add_argument("agent", help="the agent")
    p.add_argument("policy", help="the policy its new memories get")
    p = policy_command("unassign", cmd_policy_unassign, "an agent's new memories: the default")
    p.add_argument("agent", help="the agent")

    settings_parser = sub.add_parser("settings", help="the settings the database keeps")
    ssub = settings_parser.add_subparsers(
        dest="settings_command", required=True, parser_class=_Parser
    )
    apply_help = "write the policies, tiers and defaults of these settings to the database"
    p = ssub.add_parser("apply", help=apply_help, description=apply_help, parents=[as_json])
    p.set_defaults(func=cmd_settings_apply)
    _dry_run(p, "show the differences, write nothing")

    p = command("move", cmd_move, "move a memory to another policy, re-anchored at now")
    _memories(p, many=False)
    p.add_argument("--policy", required=True, help="the policy it moves to")
    _agent_of_ids(p)
    _now(p, "the moment it is re-anchored at")

    p = command("search", cmd_search, "an agent's memories that answer a query, by text or vector")
    p.add_argument("--agent", required=True, help="whose memories")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", help="words: recall by text (hybrid with a provider)")
    what.add_argument("--embedding", help="a JSON array of numbers: nearest vectors")
    _tables(p, "with --query; repeatable; default: all")
    p.add_argument("-k", type=int, default=10, help="how many hits (default: 10)")
    _now(p, "search as of this moment")
    p.add_argument("--expand", action="store_true", help="add the hits' linked memories")
    p.add_argument(
        "--no-record",
        action="store_true",
        help="look only: the hits are neither reinforced nor counted",
    )

    p = command("embed", cmd_embed, "write the vectors episodes and facts lack (a provider)")
    p.add_argument("--missing", action="store_true", required=True, help="those with none")
    p.add_argument("--agent", help="this agent's memories alone (default: every agent's)")

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
    _memories(p, many=True)
    verdict = p.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--useful", action="store_true", help="reinforce (one retrieval)")
    verdict.add_argument("--wrong", action="store_true", help="weaken (× feedback.wrong_factor)")
    _agent_of_ids(p)
    _now(p, "the moment it is applied at")
    _allow_future(p)

    p = command("links", cmd_links, "a memory's associations and their weights")
    _memories(p, many=False)
    _agent_of_ids(p)
    _now(p, "the weights as of this moment")

    p = command("record-retrieval", cmd_record_retrieval, "strengthen memories read by other means")
    _memories(p, many=True)
    _agent_of_ids(p)
    _now(p, "the moment they were read")
    _allow_future(p)
    return parser
