"""The memory tables ethos knows: every fact that sets one apart, in one place."""

from __future__ import annotations

from dataclasses import dataclass

from ethos.domain.errors import InputError

# Columns every memory table has: what a sweep, LTP, explain and recovery read and write.
# Why a memory was pruned (the prune_reason column's CHECK says the same).
PRUNE_REASONS = ("decay", "expired", "feedback", "merged", "manual")

MEMORY_COLUMNS = frozenset(
    {
        "id", "agent_id", "content", "salience", "strength", "anchor_at", "retrieval_count",
        "reinforcement",
        "last_retrieved_at", "created_at", "pruned", "pruned_at", "prune_reason", "pinned",
        "metadata", "policy", "importance", "due_at", "prune_at", "surfaced_count",
        "useful_count", "wrong_count", "content_key", "merged_into", "client_key", "updated_at",
        "content_tsv", "auto_importance", "auto_particularity", "auto_answer",
    }
)  # fmt: skip


@dataclass(frozen=True)
class TableSpec:
    """Every fact that sets one memory table apart from the others. Code that needs a
    per-table fact reads it here; a table the code does not know is an error, never a
    silent default."""

    name: str
    alias: str  # the short name the CLI and API accept: vector, episode, fact
    plural: str  # how a sweep report counts its rows: "15 vectors"
    ltp_boost: str  # the [ltp] setting that multiplies the strength at each retrieval
    emotion_column: str | None = None  # E in the formula; 0 where there is none
    has_confidence: bool = False  # pruned on a confidence curve of its own, not salience
    has_expiry: bool = False  # expires_at prunes regardless of salience
    has_embedding: bool = False  # an embedding column, searched by similarity
    # its rows are a timeline (turns of a conversation): recall may score a row with the
    # rows just before and after it (search.context_weight)
    is_timeline: bool = False
    # its rows are stated by the caller unless it says otherwise (column stated): automatic
    # importance only lengthens their life (decision 0023)
    has_stated: bool = False

    def __hash__(self) -> int:
        # The name identifies the table; hashing it alone keeps specs cheap as dict keys
        # (LTP keys every event by (spec, id)).
        return hash(self.name)

    @property
    def input_fields(self) -> frozenset[str]:
        """The fields an add() accepts for this table beyond the common ones."""
        fields = set()
        if self.emotion_column:
            fields.add(self.emotion_column)
        if self.has_confidence:
            fields.add("confidence")
        if self.has_expiry:
            fields.add("expires_at")
        if self.has_embedding:
            fields.add("embedding")
        if self.has_stated:
            fields.add("stated")
        return frozenset(fields)

    @property
    def due_table(self) -> str:
        """Its hints of when to look at a row again (migration 0007)."""
        return f"{self.name}_due"

    @property
    def columns(self) -> frozenset[str]:
        """The columns ethos reads and writes in this table."""
        extra = set(self.input_fields)
        if self.has_confidence:
            extra.add("confidence_strength")
        return MEMORY_COLUMNS | extra


VECTORS = TableSpec(
    "memory_vectors", "vector", "vectors", "vector_boost",
    has_expiry=True, has_embedding=True,
)  # fmt: skip
EPISODES = TableSpec(
    "episodic_traces",
    "episode",
    "episodes",
    "episode_boost",
    emotion_column="emotional_tone",
    is_timeline=True,
)
FACTS = TableSpec(
    "semantic_facts", "fact", "facts", "fact_boost", has_confidence=True, has_expiry=True,
    has_stated=True,
)  # fmt: skip
MEMORY_TABLES: tuple[TableSpec, ...] = (VECTORS, EPISODES, FACTS)
# The tables whose memories have embeddings (memory_embeddings: no memories of their own).
SOURCE_TABLES: tuple[TableSpec, ...] = (EPISODES, FACTS)
_BY_NAME = {spec.name: spec for spec in MEMORY_TABLES} | {s.alias: s for s in MEMORY_TABLES}


def table_spec(name: str | TableSpec) -> TableSpec:
    """Resolve a table name or alias (vector, episode, fact), or pass one of the memory
    tables' specs through; anything else is an error."""
    if isinstance(name, TableSpec):
        if name in MEMORY_TABLES:
            return name
        name = name.name
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        names = ", ".join(f"{s.name} ({s.alias})" for s in MEMORY_TABLES)
        raise InputError(f"unknown table {name!r}: use one of {names}") from None
