"""The statements of distributing ethos's tables on a Citus cluster."""

from __future__ import annotations

from ethos.db.store.core import DISTRIBUTED_BY_AGENT, SHARD_GROUPS
from ethos.db.store.query import statements

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)

# The tables Citus distributes by agent, colocated with the first (whose shards name a
# shard group: core's shard_groups), and those it copies to every node (decision
# record 0019), the retrieval queue among them (its key leads with the agent since
# migration 0057). The rest stay on the coordinator: the audit and daemon tables, flush
# receipts and dead letters.
DISTRIBUTED = (
    "episodic_traces", "semantic_facts", "memory_vectors", "memory_embeddings", "memory_links",
    "memory_revisions", "agent_policies", "lexeme_stats", "agent_text_stats", "agent_vector_stats",
    "episodic_traces_due", "semantic_facts_due", "memory_vectors_due", "retrieval_queue",
)  # fmt: skip
# ethos_agent_roles too: the row policies of `ethos roles` read it on the workers, where
# an agent's statement runs (in ethos_own_agents(), migration 0049).
REFERENCE = (
    "decay_policies", "importance_tiers", "ethos_settings", "ethos_agent_roles", "word_prior"
)  # fmt: skip

ACTIVE_WORKERS = STATEMENTS["active_workers"]
CITUS_TABLES = STATEMENTS["citus_tables"]
MISSING_TABLES = STATEMENTS["missing_tables"]
KEYED_WITHOUT_AGENT = STATEMENTS["keyed_without_agent"]
PLANNED_ONCE = STATEMENTS["planned_once"]
CREATE_REFERENCE_TABLE = STATEMENTS["create_reference_table"]
CREATE_DISTRIBUTED_TABLE = STATEMENTS["create_distributed_table"]
# What only a Citus coordinator can plan (its catalogue and functions); the rest of this
# module's statements any server can.
NEEDS_CITUS = (
    DISTRIBUTED_BY_AGENT, SHARD_GROUPS, ACTIVE_WORKERS, CITUS_TABLES, CREATE_REFERENCE_TABLE,
    CREATE_DISTRIBUTED_TABLE,
)  # fmt: skip


# Citus refuses triggers on distributed tables unless told that they are safe. ethos's
# are: each statement in them names the agents of its rows, which routes it to the shard
# the trigger fires on (decision record 0019).
UNSAFE_TRIGGERS = "SET LOCAL citus.enable_unsafe_triggers = on"

# (DDL takes no bind parameter: the names below are the catalogue's or constants.)


def plan_each_call(function: str) -> str:
    """A function of PLANNED_ONCE (its signature, as the catalogue wrote it) planned each
    call again, as Citus needs."""
    return f"ALTER FUNCTION {function} RESET plan_cache_mode"


def user_triggers(table: str, *, on: bool) -> str:
    """A table's triggers on or off (a table of DISTRIBUTED)."""
    return f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER USER"


def vacuum(table: str) -> str:
    """A table vacuumed and analyzed after its rows moved: Citus copies them into the
    shards with no statistics and no visibility map, and a shard's plans (made once a
    session on its node) would be made blind. Outside a transaction block."""
    return f"VACUUM (ANALYZE) {table}"


def forget_hints(table: str) -> str:
    """A due table emptied before its rows move: a hint names places, which the move
    changes, and rows of any agent (build_rehint_query hints every row again after)."""
    return f"TRUNCATE {table}"
