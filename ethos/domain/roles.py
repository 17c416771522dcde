"""The database roles ethos runs as, with exactly the rights each needs (`ethos roles`).

- **app**: everything but hard deletes: adds, search and recall, sweeps, LTP and the
  queue of retrievals recorded from SQL, feedback, merges, forget,
  recover. It cannot DELETE a memory, cannot change a memory's id, agent or creation
  moment (column privileges), and can replace a text only as migration 0022 allows: the
  old one stays in memory_revisions, which it cannot write. Audit rows (sweep_runs,
  lifecycle_runs, recoveries) it may add and finish, never rewrite or delete.
- **eraser**: the app's rights and DELETE of memories: `ethos purge`, `ethos erase`.
- **agent roles** (optional): one database role per agent that connects with its own
  credentials. Row-level security on the memory tables, links, policies, revisions and
  term statistics lets such a role see, add and change only the rows of the agents it
  speaks for (ethos_agent_roles), even in hand-written SQL; the database picks the id of
  a memory it adds (it cannot take another agent's). The app and eraser see every row.

The plan is computed here from role names and the memory tables' columns (pure); the
store applies it in one transaction, revoking first so the grants are exactly these, and
writes which agents each agent role speaks for. Role names are checked against a strict
pattern before they reach a statement (DDL takes no parameters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from ethos.domain.errors import InputError
from ethos.domain.tables import MEMORY_TABLES

# The columns no role but the owner changes: a memory's identity.
FIXED_COLUMNS = ("id", "agent_id", "created_at")

MEMORY_NAMES = tuple(spec.name for spec in MEMORY_TABLES)
_DUE = tuple(f"{name}_due" for name in MEMORY_NAMES)
# Write rights by table; every other table and view is read-only (SELECT). Derived data
# the engine keeps and drops: tiers (replaced by `ethos settings apply`), per-agent
# policies, the sweep's schedule, links, retrievals recorded from SQL (popped FOR
# UPDATE). Runs: finished rows are final (a trigger, migration 0022).
APP_WRITES: Mapping[str, str] = {
    **dict.fromkeys(
        ("importance_tiers", "agent_policies", "memory_links", "retrieval_queue", *_DUE),
        "SELECT, INSERT, UPDATE, DELETE",
    ),
    **dict.fromkeys(
        (
            "decay_policies",
            "ethos_settings",
            "daemons",
            "retrieval_activity",
            "sweep_runs",
            "lifecycle_runs",
        ),
        "SELECT, INSERT, UPDATE",
    ),
    "memory_embeddings": "SELECT, INSERT, DELETE",  # written once; a new text's replace them
    "recoveries": "SELECT, INSERT",
    "retrieval_dead_letters": "SELECT, INSERT",  # events the database refused for good
    "ltp_flushes": "SELECT, INSERT, DELETE",  # receipts, aged out daily
}
ERASER_DELETES = MEMORY_NAMES
# Agent roles: what an agent's own connection may touch, under row-level security.
AGENT_READS = ("decay_policies", "importance_tiers", "ethos_settings", "word_prior")
# SELECT, own rows. The term statistics too: the insert trigger reads the writer's
# counts for automatic importance (on by default), and another agent's words are its own;
# so are its vectors' mean direction, which search centres the query on.
AGENT_ROWS = (
    "memory_embeddings",  # and INSERT, DELETE: an agent's adds write them
    "memory_links",
    "agent_policies",
    "memory_revisions",
    "lexeme_stats",
    "agent_text_stats",
    "agent_vector_stats",
)
# Row-level security's tables: the memories and everything keyed by their agent.
ROW_LEVEL = (*MEMORY_NAMES, *AGENT_ROWS)
OWN = "agent_id = ANY (ethos_own_agents())"
# The durable queue: an agent role may queue events of its agents' memories it sees, at a
# moment that has come (what ethos_record_retrieval checks, also for a plain INSERT).
QUEUE_CHECK = (
    f"{OWN} AND ethos_memory_is_visible(table_name, memory_id, agent_id)"
    " AND at <= now() + interval '5 minutes'"
)
# The columns of the queue an agent role writes: an event of a memory, not a group (the
# pairs of a group's memories learn links: one of 50,000 events would be 1.25e9 pairs),
# and its id (ethos_record_retrieval gives it; one agent's events key only their own).
QUEUE_COLUMNS = "agent_id, id, table_name, memory_id, at, kind"
# What Citus sends a shard beside the columns named: a memory's id, an event's moment
# of queueing (the coordinator fills in the defaults).
SHARD_COLUMNS = {**dict.fromkeys(MEMORY_NAMES, "id"), "retrieval_queue": "enqueued_at"}

NOT_AHEAD = "anchor_at <= now() + interval '5 minutes'"

# The role the SECURITY DEFINER functions belong to (the schema makes it, access.sql):
# under row security it needs a policy of its own on each table, as the app has.
DEFINER = "ethos_definer"

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _role(name: str, what: str) -> str:
    if not _NAME.match(name):
        raise InputError(
            f"{what}: {name!r} is not a role name ethos makes (lower-case letters, digits and _,"
            " starting with a letter or _, at most 63)"
        )
    return name


@dataclass(frozen=True)
class Roles:
    """The roles to make: app, eraser, and each agent role with the agents it speaks for."""

    app: str
    eraser: str
    agents: tuple[tuple[str, str], ...] = ()  # (role, agent id)

    def __post_init__(self) -> None:
        _role(self.app, "`app`")
        _role(self.eraser, "`eraser`")
        for role, agent in self.agents:
            _role(role, "`agents`")
            if not agent:
                raise InputError(f"`agents`: role {role} needs the agent it speaks for")
        if self.app == self.eraser or self.app in self.agent_roles:
            raise InputError("`app`, `eraser` and `agents` need different roles")

    @property
    def agent_roles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(role for role, _ in self.agents))

    @property
    def agents_group(self) -> str:
        """The group every agent role is a member of; the row policies name it."""
        return f"{self.app}_agents"


def parse_agent_role(value: str) -> tuple[str, str]:
    role, sep, agent = value.partition("=")
    if not sep:
        raise InputError(f"`agents`: {value!r} is not ROLE=AGENT (the agent it speaks for)")
    return role, agent


def plan(
    roles: Roles,
    database: str,
    columns: Mapping[str, Sequence[str]],
    existing: Set[str],
    former: Set[str] = frozenset(),
) -> list[str]:
    """The statements that make the roles have exactly their rights, from any state an
    earlier run left. `columns`: each memory table's columns (the app may update all but
    FIXED_COLUMNS); `existing`: the roles there already, which keep their password and
    attributes; `former`: the agent roles there are now (members of the agents' group,
    or named in ethos_agent_roles): those not named again lose every right."""
    app, eraser, group = roles.app, roles.eraser, roles.agents_group
    every = (app, eraser, group, *roles.agent_roles)
    dropped = sorted(former - {*roles.agent_roles, app, eraser, group})
    out = [
        f"CREATE ROLE {role} {'NOLOGIN' if role == group else 'LOGIN'}"
        for role in every
        if role not in existing
    ]
    db = _quoted(database)
    for role in dropped:
        out += [
            f"REVOKE {group} FROM {_quoted(role)}",
            f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {_quoted(role)}",
            f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {_quoted(role)}",
        ]
    for role in every:
        out += [
            f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
            f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}",
            f"GRANT CONNECT ON DATABASE {db} TO {role}",
            f"GRANT USAGE ON SCHEMA public TO {role}",
        ]
    out += [
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {app}",  # and the ethos_* views
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {app}",
        *(f"GRANT {rights} ON {table} TO {app}" for table, rights in APP_WRITES.items()),
        *_memory_writes(app, columns, agents=False),
        f"GRANT {app} TO {eraser}",
        f"GRANT DELETE ON {', '.join(ERASER_DELETES)} TO {eraser}",
    ]
    if not roles.agents:  # row-level security off: the group must hold nothing
        return out + _no_row_level()
    definer = DEFINER in existing  # (absent where the owner could not make it)
    return [
        *out,
        *(f"GRANT {group} TO {role}" for role in roles.agent_roles),
        f"GRANT SELECT ON {', '.join((*AGENT_READS, *AGENT_ROWS))} TO {group}",
        f"GRANT INSERT ({QUEUE_COLUMNS}) ON retrieval_queue TO {group}",  # under QUEUE_CHECK
        f"GRANT INSERT, DELETE ON memory_embeddings TO {group}",  # under row security
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {group}",
        *_memory_writes(group, columns, agents=True),
        *_row_level(roles, definer=definer),
    ]


def shard_grants(roles: Roles) -> list[str]:
    """On a Citus cluster, after `plan` has committed (a role it creates reaches the
    workers then). Citus sends a new row to its shard with the defaults the coordinator
    picked (SHARD_COLUMNS): the shards take them from the agents' group, and the
    coordinator's table still keeps the group from choosing them. (A shard made later,
    by a rebalance, copies the table's rights: it refuses the group's inserts until
    `ethos roles` runs again.) Each statement returns the shards that refused, with the
    reason."""
    if not roles.agents:
        return []
    return [
        f"SELECT shardid, result FROM run_command_on_shards('{table}',"
        f" $$GRANT INSERT ({columns}) ON %s TO {roles.agents_group}$$) WHERE NOT success"
        for table, columns in SHARD_COLUMNS.items()
    ]


def _memory_writes(role: str, columns: Mapping[str, Sequence[str]], *, agents: bool) -> list[str]:
    """INSERT, and UPDATE of every column but a memory's identity, on each memory table.
    Agent roles also SELECT (under row security), and insert every column but the id:
    the database picks it. An id is an agent's own, but the engine finds a memory by id
    alone, so a tenant that took another agent's id would reach that agent's memory."""
    out = []
    for spec in MEMORY_TABLES:
        writable = ", ".join(c for c in columns[spec.name] if c not in FIXED_COLUMNS)
        inserts = "INSERT"
        if agents:
            inserts = f"SELECT, INSERT ({', '.join(c for c in columns[spec.name] if c != 'id')})"
        out.append(f"GRANT {inserts}, UPDATE ({writable}) ON {spec.name} TO {role}")
    return out


def _row_level(roles: Roles, *, definer: bool) -> list[str]:
    """Row security on: the app (and the eraser, its member) sees every row, and so do
    the definer functions (`definer`: their role exists); an agent role only its agents'
    rows, in reads and writes alike."""
    out = _no_row_level()
    for table in (*ROW_LEVEL, "retrieval_queue"):
        out += [
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"CREATE POLICY ethos_service ON {table} TO {roles.app} USING (true) WITH CHECK (true)",
        ]
    if definer:
        out += [
            f"CREATE POLICY ethos_definer ON {table} TO {DEFINER} USING (true) WITH CHECK (true)"
            for table in ROW_LEVEL
        ]
    group = roles.agents_group
    out += [
        f"CREATE POLICY ethos_agent ON {table} TO {group} USING ({OWN}) WITH CHECK ({OWN})"
        for table in ROW_LEVEL
        if table not in MEMORY_NAMES
    ]
    # A memory: its agent's, and it starts when it is written (an anchor ahead would hold
    # it at full strength until then; the app may date a memory as its source did). Every
    # policy is permissive, one per command: Citus gives a shard a restrictive policy as
    # a permissive one, which would let any row in that passes the restriction alone.
    for table in MEMORY_NAMES:
        out += [
            f"CREATE POLICY ethos_agent ON {table} FOR SELECT TO {group} USING ({OWN})",
            f"CREATE POLICY ethos_agent_adds ON {table} FOR INSERT TO {group}"
            f" WITH CHECK ({OWN} AND {NOT_AHEAD})",
            f"CREATE POLICY ethos_agent_changes ON {table} FOR UPDATE TO {group}"
            f" USING ({OWN}) WITH CHECK ({OWN})",
        ]
    out.append(
        f"CREATE POLICY ethos_agent ON retrieval_queue FOR INSERT TO {group}"
        f" WITH CHECK ({QUEUE_CHECK})"
    )
    return out


def _no_row_level() -> list[str]:
    # ethos_agent_memory_starts_when_written: a restrictive policy earlier runs made
    return [
        *(
            f"DROP POLICY IF EXISTS {policy} ON {table}"
            for table in MEMORY_NAMES
            for policy in (
                "ethos_agent_memory_starts_when_written",
                "ethos_agent_adds",
                "ethos_agent_changes",
            )
        ),
        *(
            statement
            for table in (*ROW_LEVEL, "retrieval_queue")
            for statement in (
                f"DROP POLICY IF EXISTS ethos_service ON {table}",
                f"DROP POLICY IF EXISTS ethos_definer ON {table}",
                f"DROP POLICY IF EXISTS ethos_agent ON {table}",
                f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
            )
        ),
    ]


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
