"""The statements of the LangGraph store's items: facts an agent names by key, their
vectors (one per indexed field), the namespaces that hold them."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    TEXT_CONFIG,
    UNEXPIRED,
    above_threshold,
    embedding_at,
    pruned_set,
    salience_expr,
)
from ethos.db.store.sql.search import bm25, prior, prior_on, word_statistics
from ethos.domain.tables import FACTS

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)


# A live, unexpired item of one namespace (agent) by its key.
_ITEM_LIVE = f"NOT m.pruned AND {UNEXPIRED}"


def item_agent(alias: str = "m") -> str:
    """The agent of the item `alias` as the items' index orders it: byte by byte
    (COLLATE "C", so that the namespaces under a prefix are one range of it; equality is
    the same in every deterministic collation). A statement finds items through that
    index only by comparing this."""
    return f'{alias}.agent_id COLLATE "C"'


GET_ITEM = STATEMENTS["get_item"]


@cache
def build_refresh_item_ttls_query(*, by_agent: bool) -> Query:
    """LangGraph's refresh_ttl: the items among %(ids)s (of agent %(agent)s: by_agent, as
    a Citus cluster needs; else each of its agent in %(agents)s: two agents may hold one
    id) that have a ttl (minutes, kept in their value's JSON under %(ttl_key)s) expire
    that long after %(now_epoch)s (seconds since 1970: a timestamptz plus an interval is
    STABLE, which Citus refuses beside a column in an UPDATE). The rows are locked in id
    order, as an LTP flush locks them (build_lock_query, by agent where it is by agent):
    two writers of the items they share, each in its plan's order, would deadlock."""
    items = (
        "agent_id = %(agent)s AND id = ANY(%(ids)s::uuid[])"
        if by_agent
        else "(agent_id, id) IN (SELECT * FROM unnest(%(agents)s::text[], %(ids)s::uuid[]))"
    )
    return sql(f"""
    UPDATE semantic_facts AS m
    SET expires_at = to_timestamp(%(now_epoch)s::float8
                                  + (m.metadata ->> %(ttl_key)s)::float8 * 60)
    FROM (SELECT id, agent_id FROM semantic_facts
          WHERE {items} AND metadata ? %(ttl_key)s AND NOT pruned
          ORDER BY id FOR NO KEY UPDATE) AS locked
    WHERE m.agent_id = locked.agent_id AND m.id = locked.id
    """)


# The items' columns: each one's array parameter and its type.
_ITEM_COLUMNS = (
    ("agent", "agents", "text"),
    ("key", "keys", "text"),
    ("content", "contents", "text"),
    ("value", "values", "text"),
    ("expires_at", "expires_at", "timestamptz"),
    ("policy", "policies", "text"),
    ("embedded", "embedded", "boolean"),
)


def _put_items_input(*, one: bool) -> str:
    """The items, a row each, numbered n from 1. One item is read as the arrays' first
    elements: PostgreSQL guesses ten rows for an unnest of a parameter, so the generic
    plan of a put over unnest looks dearer than a custom one and every put would be
    planned anew; a single row costs the same in both, and the generic plan, planned
    once a connection, wins after the first five puts."""
    if one:
        columns = ", ".join(f"(%({array})s::{kind}[])[1] AS {name}"
                            for name, array, kind in _ITEM_COLUMNS)  # fmt: skip
        return f"item AS MATERIALIZED (SELECT {columns}, 1::bigint AS n)"
    arrays = ", ".join(f"%({array})s::{kind}[]" for _, array, kind in _ITEM_COLUMNS)
    names = ", ".join(name for name, _, _ in _ITEM_COLUMNS)
    return f"""item AS MATERIALIZED (
    SELECT * FROM unnest({arrays}) WITH ORDINALITY AS i ({names}, n)
)"""


# The live items put or deleted, locked first, in id order, as an LTP flush and a ttl
# refresh lock them: the parts below reach them in orders of their own (by key, puts
# before deletes), which beside those writers made deadlocks (a second's wait each).
_PUT_ITEMS_LOCKED = f"""locked AS MATERIALIZED (
    SELECT m.id FROM semantic_facts AS m JOIN item AS i
         ON {item_agent()} = i.agent AND m.client_key = i.key
    WHERE NOT m.pruned
    ORDER BY m.id FOR NO KEY UPDATE OF m
)"""
# (Each part that writes first waits for it: a condition on no column is tested once,
# before the part reads a row.)
_AFTER_LOCKING = "AND (SELECT count(*) FROM locked) >= 0"

_PUT_ITEMS_PUT = f"""expired AS (  -- an expired item under a key put, pruned (reason expired)
    UPDATE semantic_facts AS m
    SET {pruned_set("expired")}
    FROM item AS i
    WHERE {item_agent()} = i.agent AND m.client_key = i.key AND i.value IS NOT NULL
      AND NOT m.pruned AND m.expires_at <= %(now)s {{after_locking}}
    RETURNING m.id
),
put AS (  -- a new item, or the live one's value replaced (keeping its history)
    INSERT INTO semantic_facts AS m (agent_id, client_key, content, metadata, expires_at,
                                     policy, created_at, updated_at)
    SELECT i.agent, i.key, i.content, i.value::jsonb, i.expires_at, i.policy, %(now)s, %(now)s
    FROM item AS i
    WHERE i.value IS NOT NULL AND (SELECT count(*) FROM expired) >= 0
    ORDER BY i.n
    ON CONFLICT (agent_id, client_key) WHERE client_key IS NOT NULL AND NOT pruned
    DO UPDATE SET content = excluded.content, metadata = excluded.metadata,
                  expires_at = excluded.expires_at, updated_at = excluded.updated_at,
                  policy = coalesce(%(given_policies)s::jsonb -> m.agent_id ->> m.client_key,
                                    m.policy)
    RETURNING m.id, m.agent_id, m.client_key, (m.xmax = 0) AS created
),
put_item AS MATERIALIZED (
    SELECT p.*, i.n, i.embedded
    FROM put AS p JOIN item AS i ON i.agent = p.agent_id AND i.key = p.client_key
)"""

# Each put item whose vectors are given: its embeddings, in place of those it had (one a
# text of its indexed fields, %(vector_fields)s: its field's path), all in one call of
# ethos_embed (a batch is one INSERT of embeddings). A new item had none: only the
# replaced ones' are cleared (a batch of new items alone runs no DELETE, nor the trigger
# a DELETE fires even when it deletes nothing).
# (ethos_embed, VOLATILE, sees the items this statement has put: `put_item` is read whole
# before it is called.)
_PUT_ITEMS_EMBEDDED = f"""embedded AS (
    SELECT ethos_embed('semantic_facts', coalesce(v.owners, '{{}}'), coalesce(v.ids, '{{}}'),
                       coalesce(v.fields, '{{}}'), coalesce(v.embeddings, '{{}}'),
                       c.owners, c.ids)
    FROM (SELECT array_agg(agent_id) AS owners, array_agg(id) AS ids
          FROM put_item WHERE embedded AND NOT created) AS c,
         (SELECT array_agg(p.agent_id ORDER BY e.k) AS owners,
                 array_agg(p.id ORDER BY e.k) AS ids,
                 array_agg(e.field ORDER BY e.k) AS fields,
                 array_agg({embedding_at("e.k")} ORDER BY e.k) AS embeddings
          FROM unnest(%(vector_items)s::bigint[], %(vector_fields)s::text[])
               WITH ORDINALITY AS e (n, field, k)
          JOIN put_item AS p ON p.n = e.n) AS v
    WHERE (SELECT count(*) FROM put_item WHERE embedded) > 0
)"""

_PUT_ITEMS_DELETED = f"""deleted AS (  -- a soft delete, reason manual, recoverable
    UPDATE semantic_facts AS m
    SET {pruned_set("manual")}
    FROM item AS i
    WHERE {item_agent()} = i.agent AND m.client_key = i.key AND i.value IS NULL
      AND NOT m.pruned {{after_locking}}
    RETURNING i.n
)"""


@cache
def build_put_items_query(
    *, one: bool, puts: bool, deletes: bool, embeds: bool, locks_first: bool
) -> Query:
    """A batch of puts, in one statement (one round trip, one transaction). The items:
    one row each of the arrays %(agents)s, %(keys)s, %(contents)s, %(values)s (JSON;
    NULL: a delete), %(expires_at)s, %(policies)s (NULL: the insert trigger chooses; a
    replaced item keeps its own) and %(embedded)s (whether its vectors are given), one
    put an item (the caller keeps the last of a batch's puts of one item) in the order
    their rows are to be locked in. %(given_policies)s: the policies given, as JSON
    {agent: {key: policy}}, where a replaced item reads its own (excluded.policy is the
    trigger's choice, and Citus plans no subquery in DO UPDATE). Their vectors:
    %(vector_items)s (an item's position, from 1), %(vector_fields)s, and their
    numbers %(embeddings)s, %(dimension)s each (embedding_binds). `one`: the batch is one
    item (its statement is planned once a connection, not at each put). Each put item
    whose vectors are given gets them in place of those it had (one per text of its
    indexed fields, as LangGraph embeds each field; search scores an item by its
    nearest). Returns the position of each put that made an item or deleted one.

    Only the parts a batch needs are in its statement: `puts` (some value is put),
    `deletes` (some is None), `embeds` (some put's vectors are given): an INSERT fires
    its table's statement trigger even when it adds no row.
    `locks_first`: the live items are locked first, in id order (_PUT_ITEMS_LOCKED; not
    on a Citus cluster, which locks rows of one shard alone, and where a batch of
    several agents' items is a statement on several: there a batch that loses a
    deadlock runs again).

    The CTEs share one snapshot, so order is forced where it matters: `expired` runs
    before any insert (the insert reads its count), so a put over an expired item finds
    its key free and makes a new item, as a put after an expiry would."""
    ctes, results = [_put_items_input(one=one)], []
    if locks_first:
        ctes.append(_PUT_ITEMS_LOCKED)
    after_locking = _AFTER_LOCKING if locks_first else ""
    if puts:
        ctes.append(_PUT_ITEMS_PUT.format(after_locking=after_locking))
        created = "SELECT n FROM put_item WHERE created"
        if embeds:
            ctes.append(_PUT_ITEMS_EMBEDDED)
            created += " AND (SELECT count(*) FROM embedded) >= 0"
        results.append(created)
    if deletes:
        ctes.append(_PUT_ITEMS_DELETED.format(after_locking=after_locking))
        results.append("SELECT n FROM deleted")
    written = ",\n".join(ctes)
    selected = "\nUNION ALL\n".join(results) or "SELECT n FROM item WHERE false"
    return sql(f"WITH {written}\n{selected}")


# LangGraph's scores of a vector match, by its index's distance_type: the cosine
# similarity, the inner product, the negative L2 distance (higher is nearer).
ITEM_SCORES = {
    "cosine": "1 - (v.embedding <=> %(embedding)s::vector)",
    "inner_product": "-(v.embedding <#> %(embedding)s::vector)",
    "l2": "-(v.embedding <-> %(embedding)s::vector)",
}


def build_search_items_query(*, ranked_by: str | None, everywhere: bool = False) -> Query:
    """Live, unexpired items under the namespace %(prefix)s (the agent itself, or any
    agent under it: "prefix.…"; `everywhere`: all, the prefix empty), passing the
    filter (containment %(contains)s and the jsonpath %(path)s over %(vars)s), in the
    order LangGraph documents: most recently updated first without a query; with one,
    by the score of its nearest vector to %(embedding)s (ranked_by a distance of
    ITEM_SCORES: an item has a vector per indexed field) or by BM25 ("text": of
    %(text)s), with the salience prior; none below its prune threshold. %(limit)s after
    %(offset)s. With a query every item is returned, as LangGraph's stores do (without
    an index, or for items put without a vector): those matched first, scored, then the
    others newest first. The score of a vector match is LangGraph's (ITEM_SCORES), not
    the score × salience that orders it; of a text match, its rank.

    Under a prefix, the items are read from one range of their index: byte by byte
    (item_agent), the agents from the prefix itself up to the prefix and "/", the byte
    after "."; its agent and those under it are the ones of that range that pass the
    test of the prefix."""
    join, score, rank = "", "NULL::float8", ""
    under = f"""
      AND {item_agent()} >= %(prefix)s AND {item_agent()} < %(prefix)s || '/'
      AND (m.agent_id = %(prefix)s OR starts_with(m.agent_id, %(prefix)s || '.'))"""
    if everywhere:
        under = ""
    order = newest = "coalesce(m.updated_at, m.created_at) DESC, m.id"
    salience = prior(salience_expr(FACTS))
    if ranked_by in ITEM_SCORES:
        join = f"""LEFT JOIN LATERAL (
                 SELECT max({ITEM_SCORES[ranked_by]}) AS score FROM memory_embeddings AS v
                 WHERE v.agent_id = m.agent_id AND v.source_id = m.id) AS v ON true"""
        score = "v.score"
        rank = prior_on(score, salience_expr(FACTS))
    elif ranked_by == "text":  # BM25 as recall ranks, each item among its own agent's
        score = rank = (
            f"CASE WHEN m.content_tsv @@ t.words THEN {bm25('m.content_tsv')} * {salience} END"
        )
        join = f"""CROSS JOIN (SELECT ethos_text_query({TEXT_CONFIG}, %(text)s) AS words) AS t
    CROSS JOIN LATERAL (SELECT {word_statistics("m.agent_id")}) AS q"""
    elif ranked_by is not None:
        raise ValueError(f"unknown item ranking {ranked_by!r}")
    if rank:
        order = f"{rank} DESC NULLS LAST, {newest}"  # PostgreSQL reuses a selected score
    return sql(f"""
    SELECT m.id, m.agent_id, m.client_key, m.metadata, m.created_at,
           coalesce(m.updated_at, m.created_at) AS updated_at, m.expires_at, {score} AS score
    FROM semantic_facts AS m JOIN decay_policies AS p ON p.name = m.policy
    {join}
    WHERE m.client_key IS NOT NULL AND {_ITEM_LIVE} AND {above_threshold(FACTS)}{under}
      AND m.metadata @> %(contains)s::jsonb
      AND jsonb_path_match(m.metadata, %(path)s::jsonpath, %(vars)s::jsonb)
    ORDER BY {order}
    LIMIT %(limit)s OFFSET %(offset)s
    """)


# Items by ranking (None: newest first, "text", or a distance of ITEM_SCORES) and
# whether they are searched everywhere (no prefix) or under a prefix.
SEARCH_ITEMS = {
    (ranked_by, everywhere): build_search_items_query(ranked_by=ranked_by, everywhere=everywhere)
    for ranked_by in (None, "text", *ITEM_SCORES)
    for everywhere in (False, True)
}

ITEM_NAMESPACES = STATEMENTS["item_namespaces"]
