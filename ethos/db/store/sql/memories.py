"""The statements of memories: insert, fetch, deduplicate, list, update."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    UNEXPIRED,
    above_threshold,
    embedding_at,
    held,
    identity,
)
from ethos.domain.explain import lifetime_columns
from ethos.domain.tables import TableSpec

# The plain statements, in the .sql file of the same name beside this one. Each builder
# below makes a memory table's (its name, the columns given, the parts only some tables have, vary).
STATEMENTS = statements(__file__)


@cache
def build_insert_query(spec: TableSpec, columns: tuple[str, ...]) -> Query:
    """columns come from inputs.MemoryInput, a fixed set. Returns what the write path
    made of the row that says when it will be forgotten (its policy, its curve)."""
    values = ", ".join(f"%({c})s" for c in columns)
    returned = ", ".join(lifetime_columns(spec))
    return sql(
        f"INSERT INTO {spec.name} ({', '.join(columns)}) VALUES ({values}) RETURNING {returned}"
    )


# The array type each column of inputs.MemoryInput.columns() is bound as, written in
# bulk (build_insert_set_query), and the cast of its elements where it is not the column's.
_BULK_TYPES = {
    "agent_id": ("text", ""), "content": ("text", ""), "salience": ("float8", ""),
    "emotional_tone": ("float8", ""), "confidence": ("float8", ""),
    "created_at": ("timestamptz", ""), "expires_at": ("timestamptz", ""),
    "pinned": ("boolean", ""), "policy": ("text", ""), "importance": ("float8", ""),
    "stated": ("boolean", ""), "metadata": ("text", "::jsonb"),
}  # fmt: skip


@cache
def build_insert_set_query(spec: TableSpec, columns: tuple[str, ...]) -> Query:
    """Many memories in one statement, each column bound as one array (the embeddings
    as embedding_at's flat array), written in the arrays' order: the write path's row
    trigger sees each, its statement trigger all of them at once, as for a COPY."""
    bound = [c for c in columns if c != "embedding"]
    arrays = ", ".join(f"%({c})s::{_BULK_TYPES[c][0]}[]" for c in bound)
    values = ", ".join(
        embedding_at("r.k") if c == "embedding" else f"r.{c}{_BULK_TYPES[c][1]}" for c in columns
    )
    return sql(f"""
    INSERT INTO {spec.name} ({", ".join(columns)})
    SELECT {values}
    FROM unnest({arrays}) WITH ORDINALITY AS r ({", ".join(bound)}, k)
    ORDER BY r.k
    """)


@cache
def build_fetch_memory_query(spec: TableSpec) -> Query:
    """Memory %(id)s of %(agent)s (of any agent when NULL: the caller refuses an id
    several hold), a table's."""
    return sql(f"""
    SELECT * FROM {spec.name}
    WHERE id = %(id)s AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    """)


@cache
def build_count_live_query(spec: TableSpec) -> Query:
    """A table's live memories, of %(agent)s (every agent's when NULL)."""
    return sql(f"""
    SELECT count(*) FROM {spec.name}
    WHERE NOT pruned AND (%(agent)s::text IS NULL OR agent_id = %(agent)s)
    """)


# The dashboard's and `ethos stats`' figures, by name (the .sql file's stats_<name>).
STATS = {
    name: STATEMENTS[f"stats_{name}"]
    for name in ("counts", "salience_by_age", "at_risk", "most_retrieved", "recent_sweeps",
                 "ltp", "policies")
}  # fmt: skip


LOCK_CONTENT = STATEMENTS["lock_content"]


@cache
def build_find_duplicate_query(spec: TableSpec) -> Query:
    """A memory of the agent with the same normalised content (a vector: and an
    embedding at least %(near)s cosine-similar), the earliest, that is still a memory at
    %(now)s: not pruned, not expired, not below its threshold (a sweep would prune it,
    and the new one with it). Of the same identity as the new memory (its %(metadata)s;
    fragments.identity): a repeat for other mem0 owners, or a LangGraph item, is another
    memory."""
    near = (
        "AND 1 - (m.embedding <=> %(embedding)s::vector) >= %(near)s::float8"
        if spec.has_embedding
        else ""
    )
    unexpired = f"AND {UNEXPIRED}" if spec.has_expiry else ""
    return sql(f"""
    SELECT m.id FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy
    WHERE m.agent_id = %(agent)s AND m.content_key = ethos_content_key(%(content)s)
      AND NOT m.pruned {unexpired} AND {above_threshold(spec)}
      {near}
      AND {identity()} = {identity("%(metadata)s::jsonb", "%(agent)s::text", "NULL::text")}
    ORDER BY m.created_at, m.id LIMIT 1
    """)


@cache
def build_raise_repeat_query(spec: TableSpec) -> Query:
    """A repeat asks for more: the memory %(id)s of agent %(agent)s becomes pinned if
    asked, takes the metadata keys it lacks and the higher importance; what changed is
    returned."""
    return sql(f"""
    WITH old AS (
        SELECT id, pinned, metadata, importance FROM {spec.name}
        WHERE agent_id = %(agent)s AND id = %(id)s FOR UPDATE
    ), new AS (
        UPDATE {spec.name} AS m
        SET pinned = m.pinned OR %(pinned)s,
            metadata = %(metadata)s::jsonb || m.metadata,
            importance = greatest(m.importance, %(importance)s::float8)
        FROM old WHERE m.agent_id = %(agent)s AND m.id = old.id
        RETURNING m.pinned, m.metadata, m.importance, m.policy
    )
    SELECT new.policy,
           new.pinned AND NOT old.pinned AS pinned,
           new.metadata <> old.metadata AS metadata,
           new.importance IS DISTINCT FROM old.importance AS importance
    FROM new, old
    """)


@cache
def build_list_memories_query(spec: TableSpec, *, pruned: bool) -> Query:
    """Memories of %(agent)s (every agent's when NULL) holding the mem0 owners and the
    metadata of one of %(matching)s (any when NULL), live ones newest first (not those
    expired by %(now)s: search leaves them out, the next sweep prunes them), pruned ones
    most recently pruned first: %(limit)s after %(offset)s."""
    order = "pruned_at DESC" if pruned else "created_at DESC"
    return sql(f"""
    SELECT * FROM {spec.name} AS m WHERE {_listed(spec, pruned)}
    ORDER BY {order}, id DESC
    LIMIT %(limit)s OFFSET %(offset)s
    """)


@cache
def build_count_memories_query(spec: TableSpec, *, pruned: bool) -> Query:
    """How many memories the listing of %(agent)s and %(matching)s holds in all."""
    return sql(f"SELECT count(*) FROM {spec.name} AS m WHERE {_listed(spec, pruned)}")


def _listed(spec: TableSpec, pruned: bool) -> str:
    live = "pruned" if pruned else "NOT pruned"
    if spec.has_expiry and not pruned:
        live += f" AND {UNEXPIRED}"
    return f"(%(agent)s::text IS NULL OR agent_id = %(agent)s) AND {live} AND {held()}"


AGENT_COUNTS = STATEMENTS["agent_counts"]
AGENT_HOLDS_MEMORIES = STATEMENTS["agent_holds_memories"]
KNOWN_AGENTS = STATEMENTS["known_agents"]
PRUNED_BY_REASON = STATEMENTS["pruned_by_reason"]
RARE_WORDS = STATEMENTS["rare_words"]
WORDS_OF = STATEMENTS["words_of"]
AUTO_HALF = STATEMENTS["auto_half"]
IMPORTANCE_TIER = STATEMENTS["importance_tier"]
REVISIONS_OF = STATEMENTS["revisions_of"]


@cache
def build_update_memory_query(spec: TableSpec) -> Query:
    """A live memory's (of %(agent)s) text %(content)s and metadata %(metadata)s (each
    kept when NULL), and where the table has one, its expiry %(expires_at)s (when
    %(expire)s), updated at %(now)s; its curve and history stay. %(embedding)s, when
    given, is a vector's new text's (an episode's or fact's: store.memories, EMBED)."""
    embedding = ""
    if spec.has_embedding:
        embedding = "embedding = coalesce(%(embedding)s::vector, embedding),"
    expiry = ""
    if spec.has_expiry:
        expiry = "expires_at = CASE WHEN %(expire)s THEN %(expires_at)s ELSE expires_at END,"
    return sql(f"""
    WITH updated AS (
        UPDATE {spec.name}
        SET content = coalesce(%(content)s, content), {embedding} {expiry}
            metadata = coalesce(%(metadata)s::jsonb, metadata), updated_at = %(now)s
        WHERE agent_id = %(agent)s AND id = %(id)s AND NOT pruned
        RETURNING id, agent_id, content
    )
    SELECT id FROM updated
    """)
