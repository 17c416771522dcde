"""The tables ethos keeps, as SQLAlchemy metadata: what Alembic compares the migrated
schema against. (Which memory tables there are, and how they differ: ethos.tables.)"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, REGCONFIG, TSVECTOR, UUID
from sqlalchemy.dialects.postgresql.base import ischema_names
from sqlalchemy.types import UserDefinedType

from ethos.decay import DecayParams


class Tid(UserDefinedType[str]):
    """PostgreSQL's tid (a row version's place), which SQLAlchemy does not name."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "tid"


ischema_names["tid"] = Tid  # so that reflection (Alembic's comparison) knows it too


class Xid8(UserDefinedType[str]):
    """PostgreSQL's xid8 (a transaction id that does not wrap around)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "xid8"


ischema_names["xid8"] = Xid8


def _memory_columns() -> list[Column[Any]]:
    now = text("now()")
    return [
        Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("ethos_uuid_v7()")),
        Column("agent_id", Text, nullable=False),
        Column("content", Text, nullable=False),
        Column("salience", Float, nullable=False, server_default=text("1.0")),
        # The state the curve starts from: strength S at anchor t0 (filled from
        # salience/created_at by a trigger when an insert leaves them out).
        Column("strength", Float, nullable=False),
        Column("anchor_at", DateTime(timezone=True), nullable=False),
        Column("retrieval_count", Integer, nullable=False, server_default=text("0")),
        # τ's n: the retrievals, each counted by its spacing (migration 0039)
        Column("reinforcement", Float, nullable=False, server_default=text("0")),
        Column("last_retrieved_at", DateTime(timezone=True)),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=now),
        Column("pruned", Boolean, nullable=False, server_default=text("false")),
        Column("pruned_at", DateTime(timezone=True)),
        Column("prune_reason", Text),
        Column("pinned", Boolean, nullable=False, server_default=text("false")),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        # Filled by the insert trigger when an insert names none (ethos.policies).
        Column("policy", Text, ForeignKey("decay_policies.name"), nullable=False),
        Column("importance", Float),
        # The importance its words gave it, when the caller gave none (migration 0023).
        Column("auto_importance", Float),
        # When a sweep must write the row next, and prune it (ethos.decay's schedule).
        Column("due_at", DateTime(timezone=True), server_default=text("'-infinity'")),
        Column("prune_at", DateTime(timezone=True), server_default=text("'-infinity'")),
        # What searches and feedback did to it (ethos.ltp).
        *(
            Column(name, Integer, nullable=False, server_default=text("0"))
            for name in ("surfaced_count", "useful_count", "wrong_count")
        ),
        # ethos_content_key(content), set by the insert trigger; where a merge sent it.
        Column("content_key", UUID(as_uuid=True), nullable=False),
        Column("merged_into", UUID(as_uuid=True)),
        # Its words and its agent's lexeme (migration 0010), set by a trigger.
        Column("content_tsv", TSVECTOR, nullable=False),
        # A client's name for it (unique among the agent's live memories), and when a
        # client last replaced it (the LangGraph store).
        Column("client_key", Text),
        Column("updated_at", DateTime(timezone=True)),
        # How far its vector lay from its agent's mean when written, relative to the
        # agent's average (migration 0032): what it did to auto_importance.
        Column("auto_particularity", Float),
        # How many times its words counted for answering a question (migration 0036).
        Column("auto_answer", Float),
    ]


def _due_table(metadata: MetaData, table: str) -> None:
    """Hints of when to look at rows again, each for a group of rows (see migrations
    0007, 0013 and 0024); no key: a row may be in several, stale ones cost a look."""
    Table(
        f"{table}_due",
        metadata,
        Column("prune", Boolean, nullable=False),
        Column("at", DateTime(timezone=True), nullable=False),
        Column("slice", SmallInteger, nullable=False),
        Column("n", Integer, nullable=False),
        Column("ids", ARRAY(UUID(as_uuid=True)), nullable=False),
        Column("places", ARRAY(Tid), nullable=False),  # each row's ctid then
        # The transaction that wrote it (0024): a full sweep drops those older than itself.
        Column("made", Xid8, nullable=False, server_default=text("pg_current_xact_id()")),
    )


# The columns of decay_policies holding a policy's numbers: DecayParams's fields but its
# curve and never_decays, in their order.
POLICY_NUMBER_COLUMNS = tuple(
    f.name for f in fields(DecayParams) if f.name not in ("curve", "never_decays")
)


def build_metadata(dimension: int) -> MetaData:
    """The declared schema; the embedding dimension comes from settings."""
    metadata = MetaData()
    Table(
        "memory_vectors",
        metadata,
        *_memory_columns(),
        Column("embedding", Vector(dimension), nullable=False),
        Column("expires_at", DateTime(timezone=True)),
        Column("source_type", Text),
        Column("source_id", UUID(as_uuid=True)),
    )
    Table(
        "episodic_traces",
        metadata,
        *_memory_columns(),
        Column("emotional_tone", Float, nullable=False, server_default=text("0")),
    )
    Table(
        "semantic_facts",
        metadata,
        *_memory_columns(),
        Column("confidence", Float, nullable=False, server_default=text("1.0")),
        Column("confidence_strength", Float, nullable=False),
        Column("expires_at", DateTime(timezone=True)),
    )
    for table in ("memory_vectors", "episodic_traces", "semantic_facts"):
        _due_table(metadata, table)
    Table(
        "sweep_runs",
        metadata,
        Column("id", BigInteger, primary_key=True),
        Column("trigger", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column("finished_at", DateTime(timezone=True)),
        Column("swept_at", DateTime(timezone=True), nullable=False),
        Column("agent_id", Text),
        Column("scanned", BigInteger, nullable=False, server_default=text("0")),
        Column("updated", BigInteger, nullable=False, server_default=text("0")),
        Column("pruned", BigInteger, nullable=False, server_default=text("0")),
        Column("tables", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("error", Text),
        Column("daemon_id", Text),
        Column("mode", Text, nullable=False, server_default=text("'due'")),
        Column("owner", Text),
    )
    Table(
        "daemons",
        metadata,
        Column("id", Text, primary_key=True),
        Column("host", Text, nullable=False),
        Column("pid", Integer, nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column(
            "heartbeat_at", DateTime(timezone=True), nullable=False, server_default=text("now()")
        ),
        Column("stopped_at", DateTime(timezone=True)),
        Column("role", Text, nullable=False),
        Column("lock_backend_pid", Integer),
        Column("next_sweep_due", DateTime(timezone=True)),
        Column("ltp_backlog", BigInteger, nullable=False, server_default=text("0")),
        Column("ltp_dropped", BigInteger, nullable=False, server_default=text("0")),
    )
    Table(
        "retrieval_activity",
        metadata,
        Column("id", Boolean, primary_key=True, server_default=text("true")),
        Column("last_retrieval_at", DateTime(timezone=True), nullable=False),
    )
    Table(
        "decay_policies",
        metadata,
        Column("name", Text, primary_key=True),
        Column("curve", Text, nullable=False),
        *(Column(name, Float, nullable=False) for name in POLICY_NUMBER_COLUMNS),
        Column("never_decays", Boolean, nullable=False),
        Column("promote_after", Integer),
        Column(
            "promote_to",
            Text,
            ForeignKey("decay_policies.name", deferrable=True, initially="DEFERRED"),
        ),
        Column("promotion_counts", ARRAY(Integer), nullable=False, server_default=text("'{}'")),
        Column("promotion_targets", ARRAY(Text), nullable=False, server_default=text("'{}'")),
        Column("lifetime_days", Float),
        Column("configured", Boolean, nullable=False, server_default=text("true")),
        Column("changed_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    )
    Table(
        "ethos_settings",
        metadata,
        Column("id", Boolean, primary_key=True, server_default=text("true")),
        Column("default_policy", Text, ForeignKey("decay_policies.name"), nullable=False),
        Column("importance_otherwise", Text, ForeignKey("decay_policies.name"), nullable=False),
        Column("at_risk_margin", Float, nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column("links_tau_days", Float, nullable=False, server_default=text("30")),
        Column("links_prune_weight", Float, nullable=False, server_default=text("0.05")),
        Column("text_config", REGCONFIG, nullable=False, server_default=text("'english'")),
        Column("auto_importance", Boolean, nullable=False, server_default=text("true")),
        Column("auto_importance_half", Float, nullable=False, server_default=text("4.25")),
        Column("auto_importance_particularity", Float, nullable=False, server_default=text("2")),
        Column("auto_importance_answer", Float, nullable=False, server_default=text("4")),
    )
    Table(
        "importance_tiers",
        metadata,
        Column("policy", Text, ForeignKey("decay_policies.name"), primary_key=True),
        Column("min_importance", Float, nullable=False),
    )
    Table(
        "agent_policies",
        metadata,
        Column("agent_id", Text, primary_key=True),
        Column("policy", Text, ForeignKey("decay_policies.name"), nullable=False),
        Column(
            "assigned_at", DateTime(timezone=True), nullable=False, server_default=text("now()")
        ),
    )
    Table(
        "memory_links",
        metadata,
        Column("agent_id", Text, nullable=False),
        Column("a_table", Text, nullable=False),
        Column("a_id", UUID(as_uuid=True), primary_key=True),
        Column("b_table", Text, nullable=False),
        Column("b_id", UUID(as_uuid=True), primary_key=True),
        Column("weight", Float, nullable=False),
        Column("weighted_at", DateTime(timezone=True), nullable=False),
        *(
            Column(name, Integer, nullable=False, server_default=text("0"))
            for name in ("co_retrievals", "useful_count", "wrong_count")
        ),
        Column("fades_at", DateTime(timezone=True), nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    )
    Table(
        "recoveries",
        metadata,
        Column("id", BigInteger, primary_key=True),
        Column(
            "recovered_at", DateTime(timezone=True), nullable=False, server_default=text("now()")
        ),
        Column("recovered_as_of", DateTime(timezone=True), nullable=False),
        Column("table_name", Text, nullable=False),
        Column("selector", JSONB, nullable=False),
        Column("command", Text, nullable=False),
        Column("recovered", BigInteger, nullable=False),
        Column("strength", Float, nullable=False),
    )
    Table(
        "consolidation_runs",
        metadata,
        Column("id", BigInteger, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("trigger", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column("finished_at", DateTime(timezone=True)),
        Column("as_of", DateTime(timezone=True), nullable=False),
        Column("selector", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("error", Text),
        Column("owner", Text),
    )
    Table(
        "memory_revisions",
        metadata,
        Column("id", BigInteger, primary_key=True, autoincrement=False),
        Column("table_name", Text, nullable=False),
        Column("memory_id", UUID(as_uuid=True), nullable=False),
        Column("agent_id", Text, nullable=False),
        Column("content", Text, nullable=False),
        Column("metadata", JSONB),
        Column("revised_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column("revised_by", Text, nullable=False, server_default=text("CURRENT_USER")),
    )
    Table(
        "ethos_agent_roles",
        metadata,
        Column("role_name", Text, primary_key=True),
        Column("agent_id", Text, primary_key=True),
    )
    Table(
        "retrieval_dead_letters",
        metadata,
        Column("id", BigInteger, primary_key=True, autoincrement=False),
        Column("table_name", Text, nullable=False),
        Column("memory_id", UUID(as_uuid=True), nullable=False),
        Column("at", DateTime(timezone=True), nullable=False),
        Column("kind", Text, nullable=False),
        Column("grp", UUID(as_uuid=True)),
        Column("enqueued_at", DateTime(timezone=True), nullable=False),
        Column("reason", Text, nullable=False),
        Column("dead_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column("n", Integer, nullable=False, server_default=text("1")),
    )
    Table(
        "retrieval_queue",
        metadata,
        Column("id", BigInteger, primary_key=True),
        Column("table_name", Text, nullable=False),
        Column("memory_id", UUID(as_uuid=True), nullable=False),
        Column("at", DateTime(timezone=True), nullable=False),
        Column("kind", Text, nullable=False, server_default=text("'retrieval'")),
        Column("grp", UUID(as_uuid=True)),
        Column(
            "enqueued_at", DateTime(timezone=True), nullable=False, server_default=text("now()")
        ),
    )
    # Term statistics of each agent's texts (migration 0016): documents per lexeme, and
    # documents and their summed length per agent; kept by triggers on the memory tables.
    # Per lexeme also bounds of its BM25 share (0028): the most positions it has in one
    # memory, the fewest lexemes of a memory holding it (NULL: unknown).
    Table(
        "lexeme_stats",
        metadata,
        Column("agent_id", Text, primary_key=True),
        Column("lexeme", Text, primary_key=True),
        Column("docs", BigInteger, nullable=False),
        Column("max_tf", Integer),
        Column("min_length", Integer),
    )
    Table(
        "agent_text_stats",
        metadata,
        Column("agent_id", Text, primary_key=True),
        Column("docs", BigInteger, nullable=False),
        Column("length", BigInteger, nullable=False),
    )
    # What each agent's vectors share (0030): how many, and their sum at unit length;
    # search centres the query on their mean. Kept by triggers on memory_vectors.
    Table(
        "agent_vector_stats",
        metadata,
        Column("agent_id", Text, primary_key=True),
        Column("vectors", BigInteger, nullable=False),
        Column("total", Vector(), nullable=False),
    )
    Table(
        "ltp_flushes",
        metadata,
        Column("id", UUID(as_uuid=True), primary_key=True),
        Column("applied_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    )
    return metadata
