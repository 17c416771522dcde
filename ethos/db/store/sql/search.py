"""The statements of search: vector and text recall, locating memories, vectors and
their index (the LangGraph items' are in items.py)."""

from __future__ import annotations

from functools import cache

from ethos.db.store.query import Query, sql, statements
from ethos.db.store.sql.fragments import (
    TEXT_CONFIG,
    UNEXPIRED,
    above_threshold,
    held,
    salience_expr,
    unexpired,
)
from ethos.domain.tables import SOURCE_TABLES, VECTORS, TableSpec

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)

# Index builds get more memory than the server's default 64MB: HNSW builds are ~4x
# faster with 1GB. `SET` takes no bind parameter; the value is a validated setting.
INDEX_BUILD_MEMORY = "SET LOCAL maintenance_work_mem = '{memory}'"

BUILD_VECTOR_INDEX = STATEMENTS["build_vector_index"]


# Relevance leads, salience is a bounded prior: relevance × (1 + w × salience), salience in
# [0, 1], so a memory's salience moves its score by a factor of at most 1 + w
# (search.salience_weight; runbooks/recall.md has the figures that chose it).
def prior(salience: str) -> str:
    return f"(1 + %(salience_weight)s::float8 * {salience})"


def prior_on(relevance: str, salience: str) -> str:
    """The prior applied to a relevance that can be below 0 (a cosine): divided by it
    there, so that salience always raises a score, by a bounded factor."""
    return f"""CASE WHEN {relevance} >= 0 THEN {relevance} * {prior(salience)}
                    ELSE {relevance} / {prior(salience)} END"""


# Equal scores: the more salient first, then the newer, then by id (deterministic).
TIE_BREAK = "salience DESC, created_at DESC, id"


def _live_source(spec: TableSpec, embedding: str) -> str:
    """The embedding `embedding`'s source is a live memory of `spec` of agent %(agent)s
    at %(now)s holding one of mem0's terms %(matching)s: an embedding has no life of its
    own, it is read from its source's (decision record 0014). The agent is the value,
    not the embedding's column, so that Citus routes the whole statement to the agent's
    shard."""
    expiry = f" AND {unexpired('s')}" if spec.has_expiry else ""
    return f"""EXISTS (
                   SELECT FROM {spec.name} AS s JOIN decay_policies AS sp ON sp.name = s.policy
                   WHERE {embedding}.source_table = '{spec.name}' AND s.agent_id = %(agent)s
                     AND s.id = {embedding}.source_id AND NOT s.pruned{expiry}
                     AND {above_threshold(spec, alias="s", policy="sp")}
                     AND {held("s.metadata", "s.agent_id")})"""


def _by_source(spec: TableSpec) -> str:
    """The candidate embeddings of `spec`'s memories as those memories, each once (by
    its nearest embedding: a LangGraph item has one a field), with its salience."""
    return f"""SELECT DISTINCT ON (s.id) '{spec.name}' AS table_name, s.id, s.content,
               s.metadata, s.created_at, s.updated_at,
               1 - (c.embedding <=> %(embedding)s::vector) AS similarity,
               1 - c.distance AS relevance,
               {salience_expr(spec, alias="s", policy="sp")} AS salience
        FROM embedded AS c
        JOIN {spec.name} AS s ON s.agent_id = %(agent)s AND s.id = c.source_id
        JOIN decay_policies AS sp ON sp.name = s.policy
        WHERE c.source_table = '{spec.name}'
        ORDER BY s.id, c.distance"""


def build_nearest_query(*, exact: bool) -> Query:
    """The nearest live memories of one agent by their vectors (none below its prune
    threshold) holding one of mem0's terms %(matching)s (any when NULL) to the query
    centred on the agent's vectors, re-ranked by that closeness × the salience prior: the
    agent's vectors (memory_vectors) and its episodes and facts, by their embeddings
    (memory_embeddings: an embedding is live while its source is, and a hit is its source,
    with its source's salience).

    Centred: the query less search.vector_centering × the mean direction of the agent's
    vectors (migration 0030). What every memory of the agent shares (its speakers, its
    register) then counts for none of them, and a memory near that mean (chatter) no
    longer comes near every query. `similarity` is the plain cosine to the query;
    `relevance`, what the ranking uses, the cosine to the centred one (below 0: less
    related than the agent's average memory). A query that is the mean itself is not
    centred.

    An embedding's candidates are found by its index in half precision (ethos_half),
    then ranked by the full vectors, as the agent's own vectors are.

    Through the HNSW indexes, the scans are bounded (hnsw.max_scan_tuples): an agent with
    few memories near the query can leave them short of k. `exact` then scans that
    agent's rows through their b-tree indexes instead; `+ 0` keeps the planner from
    using the HNSW ordering for it.
    """
    distance = "m.embedding <=> (SELECT centred FROM query)"
    order = f"({distance}) + 0" if exact else distance
    # the embeddings' index holds them in half precision: their candidates are found by
    # it, then ranked by their full vectors (`distance`)
    half = "ethos_half(m.embedding) <=> ethos_half((SELECT centred FROM query))"
    embedded_order = order if exact else half
    sources = " OR ".join(_live_source(spec, "m") for spec in SOURCE_TABLES)
    by_source = "\n        UNION ALL\n        ".join(
        f"({_by_source(spec)})" for spec in SOURCE_TABLES
    )
    return sql(f"""
    WITH query AS MATERIALIZED (
        SELECT CASE WHEN vector_norm(c.centred) > 1e-6 THEN c.centred ELSE q.raw END AS centred
        FROM (SELECT %(embedding)s::vector AS raw) AS q
        LEFT JOIN agent_vector_stats AS s ON s.agent_id = %(agent)s
        CROSS JOIN LATERAL (
            SELECT l2_normalize(q.raw) - s.total * array_fill(
                       (%(centering)s::float8 / s.vectors)::real, ARRAY[vector_dims(s.total)]
                   )::vector AS centred
        ) AS c
    ),
    own AS MATERIALIZED (
        SELECT m.*, {distance} AS distance
        FROM memory_vectors AS m
        WHERE m.agent_id = %(agent)s AND NOT m.pruned AND {UNEXPIRED}
          AND (SELECT {above_threshold(VECTORS, policy="ap")}
               FROM decay_policies AS ap WHERE ap.name = m.policy)
          AND {held()}
        ORDER BY {order}
        LIMIT %(candidates)s
    ),
    embedded AS MATERIALIZED (
        SELECT m.source_table, m.source_id, m.embedding, {distance} AS distance
        FROM (SELECT m.* FROM memory_embeddings AS m
              WHERE m.agent_id = %(agent)s AND ({sources})
              ORDER BY {embedded_order}
              LIMIT %(candidates)s) AS m
    ),
    ranked AS (
        SELECT '{VECTORS.name}' AS table_name, c.id, c.content, c.metadata, c.created_at,
               c.updated_at, 1 - (c.embedding <=> %(embedding)s::vector) AS similarity,
               1 - c.distance AS relevance, {salience_expr(VECTORS, alias="c")} AS salience
        FROM own AS c JOIN decay_policies AS p ON p.name = c.policy
        UNION ALL
        {by_source}
    )
    SELECT r.*, {prior_on("r.relevance", "r.salience")} AS score
    FROM ranked AS r
    ORDER BY score DESC, {TIE_BREAK}
    LIMIT %(k)s
    """)


SEARCH_VECTORS = build_nearest_query(exact=False)
SEARCH_VECTORS_EXACT = build_nearest_query(exact=True)


# BM25's term-frequency saturation k1 and length normalisation b (Robertson & Zaragoza
# 2009), Anserini's defaults for short texts: on LoCoMo r@10 0.627 against Lucene's
# 1.2/0.75 at 0.617 (runbooks/recall.md).
BM25_K1, BM25_B = 0.9, 0.4


def _share(idf: str, tf: str, length: str) -> str:
    """BM25's share of one lexeme of IDF `idf` held `tf` times by a text of `length`
    (among memories of average length q.avg_length). Increasing in tf, decreasing in
    length: at a lexeme's largest tf and smallest length it bounds every row's share."""
    return (
        f"{idf} * {tf} * {BM25_K1 + 1} / ({tf} + {BM25_K1} * (1 - {BM25_B} + {BM25_B}"
        f" * {length} / q.avg_length))"
    )


def bm25(tsv: str) -> str:
    """The BM25 score of the text search vector `tsv` for the query's lexemes and IDFs
    (q.lexemes, q.idfs) and the agent's average length (q.avg_length): a term's
    frequency is its number of positions, a text's length its distinct lexemes.

    Only the query's lexemes of `tsv` are read, in the tsvector's own (sorted) order, so
    a row's score is one sum in one order whatever the plan: the query's lexemes are
    weighted A (a memory's own positions carry the default weight D) and kept."""
    share = _share(
        "q.idfs[array_position(q.lexemes, u.lexeme)]",
        "coalesce(array_length(u.positions, 1), 1)",
        f"ethos_text_length({tsv})",
    )
    return f"""(SELECT coalesce(sum({share}), 0)
                FROM unnest(ts_filter(setweight({tsv}, 'A', q.lexemes), '{{a}}')) AS u)"""


def word_statistics(agent: str) -> str:
    """The select list and FROM of the words of %(text)s as the memories of `agent` (an
    SQL expression) see them: its distinct lexemes with their IDF among that agent's
    memories (q.lexemes, q.idfs), and their average length (q.avg_length), as `bm25`
    reads them; and for each lexeme the most times one memory holds it and the fewest
    lexemes of a memory holding it (q.max_tfs, q.min_lengths; NULL: unknown). (The
    lexemes are unnested in a select list: Citus refuses a set-returning function in a
    FROM beside a reference to `agent`'s row, where the statement spans agents.)"""
    return f"""w.lexemes, w.idfs, w.max_tfs, w.min_lengths,
               coalesce(s.length::float8 / nullif(s.docs, 0), 1) AS avg_length
        FROM (SELECT) AS one
        LEFT JOIN agent_text_stats AS s ON s.agent_id = {agent}
        CROSS JOIN LATERAL (
            SELECT array_agg(x.lexeme) AS lexemes,
                   array_agg(ethos_idf(coalesce(s.docs, 0), coalesce(l.docs, 0))) AS idfs,
                   array_agg(l.max_tf) AS max_tfs, array_agg(l.min_length) AS min_lengths
            FROM (SELECT unnest(tsvector_to_array(to_tsvector({TEXT_CONFIG}, %(text)s)))
                         AS lexeme) AS x
            LEFT JOIN lexeme_stats AS l ON l.agent_id = {agent} AND l.lexeme = x.lexeme
        ) AS w"""


# The query %(text)s of agent %(agent)s: its words (any of them), the agent's lexeme, and
# the statistics of its words among the agent's memories.
_TEXT_QUERY = f"""q AS (
        SELECT ethos_text_query({TEXT_CONFIG}, %(text)s) AS words,
               quote_literal(ethos_agent_lexeme(%(agent)s))::tsquery AS agent,
               {word_statistics("%(agent)s")}
    )"""


# MaxScore (Turtle & Flood 1995), exact: a row's BM25 share from one lexeme is at most
# its share at the lexeme's largest tf in one memory and the shortest memory holding it
# (lexeme_stats: bounds kept by the write path, migration 0028), and below idf × (k1 + 1)
# whatever its tf and length (where those are unknown). The query's lexemes go to levels
# by how common they are among the agent's memories: taking them most frequent first,
# a lexeme is on level j while the summed bounds so far stay below REACHES[j - 1] × the
# query's highest IDF (what a row holding the rarest lexeme once, at average length,
# scores); the rest, and the rarest always, are on level 0. A row belongs to the lowest
# level of the lexemes it holds, and scores below the summed bounds of its level and the
# more common ones (the level's bound). Each table scores the rows of level 0 first; the
# rows of each next level are read only when fewer than %(candidates)s were found so far
# or the last of them does not score above that level's bound. Which lexemes go where
# changes the cost, never the result (runbooks/recall.md has the figures). A bound is
# widened by BOUND_MARGIN (relative) so that a row's sum, added in another order than
# the bound's, cannot pass it by a rounding.
REACHES = (1.0, 0.5)
BOUND_MARGIN = 1e-9
LEVELS = range(len(REACHES) + 1)

_LEXEME_BOUND = f"""CASE WHEN w.max_tf IS NULL OR w.min_length IS NULL
                    THEN w.idf * {BM25_K1 + 1}
                    ELSE {_share("w.idf", "w.max_tf", "w.min_length")} END"""

_REACHED = " + ".join(f"(w.reach < {reach} * w.top)::int" for reach in REACHES)


def _level_words(level: int, *, rarer: bool = False) -> str:
    """The tsquery of the lexemes on `level` (or, `rarer`, on the levels below it)."""
    which = f"x.level < {level}" if rarer else f"x.level = {level}"
    return f"""(SELECT string_agg(quote_literal(x.lexeme), ' | ') FILTER (WHERE {which})
                FROM x)::tsquery AS {"rarer" if rarer else "words"}_{level}"""


_SPLIT = f"""x AS (
        SELECT w.lexeme, w.bound,
               CASE WHEN w.rarest THEN 0 ELSE {_REACHED} END AS level
        FROM (SELECT w.lexeme, w.bound, max(w.idf) OVER () AS top,
                     sum(w.bound) OVER (ORDER BY w.idf, w.lexeme) AS reach,
                     lead(w.lexeme) OVER (ORDER BY w.idf, w.lexeme) IS NULL AS rarest
              FROM q, LATERAL (
                  SELECT w.lexeme, w.idf, {_LEXEME_BOUND} AS bound
                  FROM unnest(q.lexemes, q.idfs, q.max_tfs, q.min_lengths)
                       AS w (lexeme, idf, max_tf, min_length)) AS w) AS w
    ),
    split AS (
        SELECT {", ".join(_level_words(level) for level in LEVELS)},
               {", ".join(_level_words(level, rarer=True) for level in LEVELS[1:])},
               {
    ", ".join(
        f"(SELECT (1 + {BOUND_MARGIN}) * coalesce(sum(x.bound) FILTER"
        f" (WHERE x.level >= {level}), 0) FROM x) AS bound_{level}"
        for level in LEVELS[1:]
    )
}
    )"""


_ORDER = "text_rank DESC, salience DESC, created_at DESC, id"


def _scored(spec: TableSpec, matches: str, where: str = "", *, split: bool = True) -> str:
    """The %(candidates)s best live rows of one agent in `spec`'s table among those whose
    text holds the tsquery `matches` (and `where`), by BM25 and the tie-breaks: every
    row scored in full (the reference the faster recall is tested against)."""
    live = f" AND {UNEXPIRED}" if spec.has_expiry else ""
    words = ", split AS s" if split else ""
    return f"""SELECT '{spec.name}' AS table_name, m.id, m.content, m.metadata,
                m.created_at, m.updated_at, {bm25("m.content_tsv")} AS text_rank,
                {salience_expr(spec)} AS salience
         FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy, q{words}
         WHERE m.content_tsv @@ ({matches} && q.agent) AND m.agent_id = %(agent)s{where}
           AND NOT m.pruned{live} AND {held()} AND {above_threshold(spec)}
         ORDER BY {_ORDER}
         LIMIT %(candidates)s"""


def _ranked(spec: TableSpec, matches: str, where: str = "") -> str:
    """Where each live row of one agent in `spec`'s table whose text holds the tsquery
    `matches` (and `where`) is (its ctid: the row version this statement sees), and its
    BM25; nothing else is computed for it."""
    live = f" AND {UNEXPIRED}" if spec.has_expiry else ""
    return f"""SELECT m.ctid AS at, {bm25("m.content_tsv")} AS text_rank
         FROM {spec.name} AS m, q, split AS s
         WHERE m.content_tsv @@ ({matches} && q.agent) AND m.agent_id = %(agent)s{where}
           AND NOT m.pruned{live} AND {held()}"""


def _best(spec: TableSpec, ranked: str) -> str:
    """The %(candidates)s best rows of `ranked` (a relation of `_ranked`) not below their
    prune threshold, by BM25 and the tie-breaks, as `_scored` gives them.

    The threshold (a salience) is checked in BM25 order and only until %(candidates)s
    rows pass: T, the BM25 of the last of them, is the lowest a candidate can have
    (each row below it has %(candidates)s better). The rows at or above T are then read
    in full and ranked with the tie-breaks; with fewer passing rows, T is the lowest of
    them and the same holds. A row is joined back by its place and its agent: on Citus a
    place repeats in every shard, and the agent keeps the join on the agent's one."""
    row = f"""{spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy"""
    return f"""SELECT '{spec.name}' AS table_name, m.id, m.content, m.metadata,
                m.created_at, m.updated_at, r.text_rank, {salience_expr(spec)} AS salience
         FROM {ranked} AS r JOIN {row} ON m.ctid = r.at AND m.agent_id = %(agent)s
         WHERE r.text_rank >= (
                   SELECT min(b.text_rank)
                   FROM (SELECT o.text_rank
                         FROM (SELECT * FROM {ranked} ORDER BY text_rank DESC) AS o
                         JOIN {row} ON m.ctid = o.at AND m.agent_id = %(agent)s
                         WHERE {above_threshold(spec)}
                         ORDER BY o.text_rank DESC
                         LIMIT %(candidates)s) AS b)
           AND {above_threshold(spec)}
         ORDER BY {_ORDER}
         LIMIT %(candidates)s"""


def _beside(spec: TableSpec, hit: str, *, before: bool) -> str:
    """The live row of the agent in `spec`'s timeline just before (or after) the row
    `hit` (by creation, then id) among those %(matching)s holds (in context, a filter
    leaves out what it does not hold), not below its prune threshold, with its BM25 and
    salience: what the turn next to a hit says."""
    side, order = ("<", "DESC") if before else (">", "ASC")
    live = f" AND {UNEXPIRED}" if spec.has_expiry else ""
    return f"""(SELECT m.id, m.content, m.metadata, m.created_at, m.updated_at,
                {bm25("m.content_tsv")} AS text_rank, {salience_expr(spec)} AS salience
         FROM {spec.name} AS m JOIN decay_policies AS p ON p.name = m.policy
         WHERE m.agent_id = %(agent)s AND NOT m.pruned{live} AND {held()}
           AND (m.created_at, m.id) {side} ({hit}.created_at, {hit}.id)
           AND {above_threshold(spec)}
         ORDER BY m.created_at {order}, m.id {order}
         LIMIT 1)"""


def _in_context(tables: tuple[TableSpec, ...]) -> str:
    """The CTEs over the candidates `found`: `beside`, the rows just before and after
    each of the %(k)s best by BM25 of a timeline table (two index probes a hit, so the
    cost follows k, not the candidates); `pool`, the candidates and those rows; `pairs`,
    the adjacent ones; and `relevance`, of every row of the pool: its BM25 +
    %(context_weight)s × the mean BM25 of its two neighbours (a row of the pool adjacent
    to it; a neighbour outside the pool counts 0). An answer often sits a turn away from
    the words of its question (the reply to it, or the turn that says "it" for the thing
    the question names)."""
    beside = "\n        UNION ALL\n        ".join(
        f"""SELECT '{spec.name}' AS table_name, f.id AS hit, n.*
        FROM (SELECT * FROM found WHERE table_name = '{spec.name}'
              ORDER BY {_ORDER} LIMIT %(k)s) AS f,
             q, LATERAL ({_beside(spec, "f", before=True)}
                         UNION ALL {_beside(spec, "f", before=False)}) AS n"""
        for spec in tables
        if spec.is_timeline
    )
    return f"""beside AS MATERIALIZED (
        {beside}
    ),
    pool AS (
        SELECT DISTINCT ON (p.id) p.*
        FROM (SELECT * FROM found
              UNION ALL
              SELECT {_FOUND_COLUMNS} FROM beside) AS p
        ORDER BY p.id
    ),
    pairs AS (  -- each adjacent pair once, whichever of the two found it
        SELECT DISTINCT least(b.hit, b.id) AS one, greatest(b.hit, b.id) AS other
        FROM beside AS b
    ),
    relevance AS (
        SELECT p.*, p.text_rank + %(context_weight)s::float8 / 2 * coalesce(
                   (SELECT sum(n.text_rank)
                    FROM pairs AS e JOIN pool AS n ON n.id = CASE WHEN e.one = p.id
                                                             THEN e.other ELSE e.one END
                    WHERE p.id IN (e.one, e.other)), 0) AS relevance
        FROM pool AS p
    )"""


# A row written in the moment the question names (%(moment_year)s, %(moment_month)s,
# %(moment_day)s: NULL matches any) weighs 1 + %(moment_weight)s times as much (UTC).
_IN_MOMENT = """(1 + %(moment_weight)s::float8 * (
        coalesce(extract(year FROM r.created_at AT TIME ZONE 'UTC') = %(moment_year)s::int, true)
        AND coalesce(extract(month FROM r.created_at AT TIME ZONE 'UTC') = %(moment_month)s::int,
                     true)
        AND coalesce(extract(day FROM r.created_at AT TIME ZONE 'UTC') = %(moment_day)s::int, true)
    )::int)"""

# A row its own words match: its text holds a word of the query. BM25's IDF is above 0
# for every lexeme (ethos_idf), so that is its own BM25 above 0; a row found only
# through the turns beside it (`_in_context`) scores 0 there (decision record 0021).
MATCHED = "f.text_rank > 0"

_FOUND_COLUMNS = "table_name, id, content, metadata, created_at, updated_at, text_rank, salience"


@cache
def build_recall_query(
    tables: tuple[TableSpec, ...],
    *,
    split: bool = True,
    context: bool = False,
    moment: bool = False,
) -> Query:
    """Live memories of one agent in `tables` with any word of %(text)s (in the
    database's text configuration), none below its prune threshold at %(now)s, each
    holding one of mem0's terms %(matching)s (any when NULL), ranked by BM25 × the
    salience prior.

    Each table gives its %(candidates)s best by BM25, found through its GIN index (the
    agent's lexeme intersected with the words); expired ones are left out. With `split`
    (MaxScore, above) the rows of each level are scored only when they could be among a table's
    candidates, and a row's salience is computed only for the best by BM25
    (`_best`); without it, every matching row is scored in full (the same result,
    slower: the tests' reference).

    With `context` (and a timeline among `tables`), the candidates' neighbours in time
    join them and each is ranked by its relevance in context (`_in_context`) × the
    prior; without it, relevance is the BM25. With `moment`, a row written in the
    moment the question names weighs more (`_IN_MOMENT`). `matched`: the row's own words
    match the query (MATCHED), false for a row found only in context."""
    context = context and any(spec.is_timeline for spec in tables)
    ctes, parts = [], []
    for i, spec in enumerate(tables):
        if not split:
            parts.append(f"({_scored(spec, 'q.words', split=False)})")
            continue
        ctes.append(f"""ranked_{i}_0 AS MATERIALIZED (
        {_ranked(spec, "s.words_0")}
    ),
    best_{i}_0 AS MATERIALIZED (
        {_best(spec, f"ranked_{i}_0")}
    )""")
        for level in LEVELS[1:]:
            # The rows of this level, behind an uncorrelated condition: PostgreSQL gates
            # their scan with it (a one-time filter) and never runs it when the
            # candidates-th row so far scores above the level's bound (no row of the
            # level can then reach the candidates, ties included: it scores below it).
            gate = f"""
           AND (m.content_tsv @@ s.rarer_{level}) IS NOT TRUE
           AND (SELECT count(*) < %(candidates)s
                       OR min(r.text_rank) <= (SELECT bound_{level} FROM split)
                FROM best_{i}_{level - 1} AS r)"""
            ctes.append(f"""ranked_{i}_{level} AS MATERIALIZED (
        {_ranked(spec, f"s.words_{level}", gate)}
    ),
    best_{i}_{level} AS MATERIALIZED (
        SELECT * FROM best_{i}_{level - 1}
        UNION ALL
        ({_best(spec, f"ranked_{i}_{level}")})
        ORDER BY {_ORDER}
        LIMIT %(candidates)s
    )""")
        parts.append(f"(SELECT * FROM best_{i}_{LEVELS[-1]})")
    union = "\n        UNION ALL\n        ".join(parts)
    more = "".join(f",\n    {cte}" for cte in ([_SPLIT, *ctes] if split else []))
    ranked, relevance, in_context = "found", "r.text_rank", ""
    if context:
        ranked, relevance, in_context = "relevance", "r.relevance", f",\n    {_in_context(tables)}"
    if moment:
        relevance = f"{relevance} * {_IN_MOMENT}"
    return sql(f"""
    WITH {_TEXT_QUERY}{more},
    found AS (
        {union}
    ){in_context}
    SELECT f.*, f.relevance * {prior("f.salience")} AS score, {MATCHED} AS matched
    FROM (SELECT {", ".join(f"r.{c}" for c in _FOUND_COLUMNS.split(", "))},
                 {relevance} AS relevance
          FROM {ranked} AS r) AS f
    ORDER BY score DESC, {TIE_BREAK}
    LIMIT %(k)s
    """)


def _missing(spec: TableSpec) -> str:
    """The live memories of `spec` of %(agent)s (NULL: of every agent) with no
    embedding. An agent's runs in its session (StoreCore._fetch_of), which on a Citus
    cluster holds the agent's shards alone."""
    return f"""
    FROM {spec.name} AS m
    WHERE NOT m.pruned AND (m.agent_id = %(agent)s OR %(agent)s::text IS NULL)
      AND NOT EXISTS (SELECT 1 FROM memory_embeddings AS e
                      WHERE e.agent_id = m.agent_id AND e.source_id = m.id)"""


@cache
def build_missing_vectors_query(spec: TableSpec) -> Query:
    """The next %(limit)s live memories after %(after)s that no vector embeds. A
    builder: the table varies."""
    return sql(f"""
    SELECT m.id, m.agent_id, m.content {_missing(spec)}
      AND m.id > %(after)s
    ORDER BY m.id
    LIMIT %(limit)s
    """)


@cache
def build_count_missing_vectors_query(spec: TableSpec) -> Query:
    """How many live memories no vector embeds: `embed --missing`'s total. A builder:
    the table varies."""
    return sql(f"SELECT count(*) {_missing(spec)}")


LOCATE_MEMORIES = STATEMENTS["locate_memories"]
