"""Term statistics for ranking (BM25) and informativeness: per agent, how many of its
memories hold each lexeme, how many memories it has and their summed length.

What counts as one of an agent's documents: every stored episode, fact and vector that
embeds no other memory (a vector of an episode or fact repeats its text), live or
pruned (pruning is reversible and sweeps never touch text, so they never touch these
tables either). A document's length is its number of distinct lexemes, its lexemes
those of content_tsv (the agent's lexeme left out).

Kept up to date by the write path: statement-level triggers with transition tables for
inserts and deletes (a COPY or a bulk INSERT costs one aggregation, not one upsert per
row), a row trigger for the rare updates of text or agent (PostgreSQL allows no
transition tables on a trigger with a column list, and sweeps must not pay for one),
and a rebuild on TRUNCATE. Counts are upserted agent first, then lexemes in order, so
writers of one agent queue on its row instead of deadlocking; counts that reach 0 are
removed. The writing functions run as their owner (SECURITY DEFINER): the roles of
runbooks/operations.md need no grant beyond SELECT on these tables.

Functions for readers:
- ethos_idf(docs, df): BM25's IDF, ln(1 + (N − df + 0.5) / (df + 0.5)) (never negative);
- ethos_text_idf(agent, tsv): the summed IDF of tsv's lexemes for that agent (a lexeme
  the agent never wrote has df 0): how informative a text is among its memories;
- ethos_text_length(tsv): a document's length as counted here.

Revision ID: 0016
Revises: 0013
Create Date: 2026-11-23
"""

from ethos.migrations import execute_script

revision = "0016"
down_revision = "0013"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

FUNCTIONS = r"""
CREATE TABLE lexeme_stats (
    agent_id text NOT NULL,
    lexeme   text NOT NULL,
    docs     bigint NOT NULL,
    PRIMARY KEY (agent_id, lexeme)
);

CREATE TABLE agent_text_stats (
    agent_id text PRIMARY KEY,
    docs     bigint NOT NULL,
    length   bigint NOT NULL
);

CREATE FUNCTION ethos_text_length(tsv tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT greatest(length(tsv) - 1, 0) $$;

CREATE FUNCTION ethos_idf(docs bigint, df bigint) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ln(1 + (greatest(docs, df) - df + 0.5) / (df + 0.5))
$$;

CREATE FUNCTION ethos_text_idf(agent text, tsv tsvector) RETURNS float8
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(ethos_idf(coalesce(a.docs, 0), coalesce(l.docs, 0))), 0)
    FROM unnest(tsvector_to_array(tsv)) AS w (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN lexeme_stats AS l ON l.agent_id = agent AND l.lexeme = w.lexeme
    WHERE w.lexeme <> ethos_agent_lexeme(agent)
$$;

-- Add (sign 1) or take away (-1) documents: agents first, then lexemes, each in order;
-- counts taken down to 0 are removed (an erased agent leaves nothing here). As its
-- owner: roles that write memories need no grant on these derived tables.
CREATE FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[])
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    INSERT INTO agent_text_stats AS s (agent_id, docs, length)
    SELECT d.agent, sum(d.sign), sum(d.sign * ethos_text_length(d.tsv))
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET docs = s.docs + excluded.docs, length = s.length + excluded.length;

    INSERT INTO lexeme_stats AS s (agent_id, lexeme, docs)
    SELECT d.agent, w.lexeme, sum(d.sign)
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
         unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
    WHERE w.lexeme <> ethos_agent_lexeme(d.agent)
    GROUP BY d.agent, w.lexeme
    HAVING sum(d.sign) <> 0
    ORDER BY d.agent, w.lexeme
    ON CONFLICT (agent_id, lexeme) DO UPDATE SET docs = s.docs + excluded.docs;

    DELETE FROM lexeme_stats AS s
    USING unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
          unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.lexeme = w.lexeme AND s.docs <= 0;

    DELETE FROM agent_text_stats AS s
    USING unnest(agents, signs) AS d (agent, sign)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
$$;

-- Statement triggers: the rows a statement inserted (or deleted) that count.
CREATE FUNCTION ethos_text_stats_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted text := CASE WHEN TG_TABLE_NAME = 'memory_vectors' THEN 'source_id IS NULL'
                         ELSE 'true' END;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_text_stats_rebuild();
        RETURN NULL;
    END IF;
    EXECUTE format(
        'SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv),'
        ' array_agg(%s)) FROM %I WHERE %s',
        CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END,
        CASE WHEN TG_OP = 'INSERT' THEN 'new_rows' ELSE 'old_rows' END,
        counted);
    RETURN NULL;
END
$$;

-- Row trigger: a text, agent or (vector) source changed. OLD.source_id is only read
-- on memory_vectors (PL/pgSQL resolves a record's field when it runs the line).
CREATE FUNCTION ethos_text_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted_old boolean := true;
    counted_new boolean := true;
BEGIN
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        counted_old := OLD.source_id IS NULL;
        counted_new := NEW.source_id IS NULL;
    END IF;
    PERFORM ethos_text_stats_add(
        array_remove(ARRAY[CASE WHEN counted_old THEN OLD.agent_id END,
                           CASE WHEN counted_new THEN NEW.agent_id END], NULL),
        array_remove(ARRAY[CASE WHEN counted_old THEN OLD.content_tsv END,
                           CASE WHEN counted_new THEN NEW.content_tsv END], NULL),
        array_remove(ARRAY[CASE WHEN counted_old THEN -1 END,
                           CASE WHEN counted_new THEN 1 END], NULL));
    RETURN NULL;
END
$$;

CREATE FUNCTION ethos_text_stats_rebuild() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM lexeme_stats;
    DELETE FROM agent_text_stats;
    SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
    FROM (SELECT agent_id, content_tsv FROM episodic_traces
          UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
          UNION ALL SELECT agent_id, content_tsv FROM memory_vectors WHERE source_id IS NULL
         ) AS m;
$$;
"""

TABLE = """
CREATE TRIGGER {table}_text_stats_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_text_stats_changed();
CREATE TRIGGER {table}_text_stats_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_text_stats_changed();
CREATE TRIGGER {table}_text_stats_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_text_stats_changed();
CREATE TRIGGER {table}_text_stats_update AFTER UPDATE OF {columns} ON {table}
    FOR EACH ROW WHEN ({changed})
    EXECUTE FUNCTION ethos_text_stats_updated();
"""


def _changed(table: str) -> tuple[str, str]:
    """The columns whose update can change a table's counts, and the row condition (the
    text's lexemes hold its agent's lexeme: they change with the agent too)."""
    columns, changed = "content, agent_id, content_tsv", "OLD.content_tsv <> NEW.content_tsv"
    if table == "memory_vectors":
        columns += ", source_id"
        changed += " OR OLD.source_id IS DISTINCT FROM NEW.source_id"
    return columns, changed


def upgrade() -> None:
    execute_script(FUNCTIONS)
    for table in MEMORY_TABLES:
        columns, changed = _changed(table)
        execute_script(TABLE.format(table=table, columns=columns, changed=changed))
    execute_script("SELECT ethos_text_stats_rebuild();")


def downgrade() -> None:
    for table in MEMORY_TABLES:
        execute_script(
            "".join(
                f"DROP TRIGGER {table}_text_stats_{event} ON {table};"
                for event in ("insert", "delete", "truncate", "update")
            )
        )
    execute_script(
        """DROP FUNCTION ethos_text_stats_updated(); DROP FUNCTION ethos_text_stats_changed();
           DROP FUNCTION ethos_text_stats_rebuild();
           DROP FUNCTION ethos_text_stats_add(text[], tsvector[], integer[]);
           DROP FUNCTION ethos_text_idf(text, tsvector); DROP FUNCTION ethos_idf(bigint, bigint);
           DROP FUNCTION ethos_text_length(tsvector);
           DROP TABLE lexeme_stats; DROP TABLE agent_text_stats;"""
    )
