"""Automatic importance: a memory written with no importance and no policy, of an agent
with no policy of its own, gets an importance from how informative its text is among
the agent's memories, and through the importance tiers its policy. Computed by the
insert trigger (so plain SQL and COPY get it too) from the lexeme statistics of 0016:

- informative words: the sum over the text's lexemes of idf(lexeme) / idf(a lexeme the
  agent never wrote), 1 for a word new to the agent, near 0 for one in all its memories
  (a scale that does not grow with the agent); a number counts as 1 whatever its
  frequency (a date, an amount, a count: what questions come back to). Greetings,
  fillers and repeats hold few such words.
- importance = 1 − 2^(−words / half), `[importance] auto_half` (ethos_settings): half
  words make 0.5.

It is kept in `auto_importance` (the caller's stays in `importance`, which always wins).
The row's own words join the statistics after its statement: a memory is measured
against those before it. A statement that writes 10,000 memories or more analyzes the
statistics tables at its end, so that lookups are planned on what they hold.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-24
"""

from ethos.migrations import earlier_function, execute_script

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

UPGRADE = r"""
ALTER TABLE ethos_settings
    ADD COLUMN auto_importance boolean NOT NULL DEFAULT false,
    ADD COLUMN auto_importance_half double precision NOT NULL DEFAULT 4
        CHECK (auto_importance_half > 0);

-- PL/pgSQL: its plans are prepared once per session, not at every row of an insert. Each
-- lexeme is looked up by the whole primary key, which no plan turns into a scan of the
-- agent's vocabulary (a generic plan for "agent_id = $1 AND lexeme = ANY ($2)" may).
-- What one word counts for among `total` memories, `df` of which hold it: 1 for a word
-- the agent never wrote, near 0 for one in all its memories; a number counts 1.
CREATE FUNCTION ethos_word_weight(lexeme text, total bigint, df bigint) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN lexeme ~ '^[0-9]' THEN 1
                ELSE ethos_idf(total, df) / ethos_idf(total, 0) END
$$;

CREATE FUNCTION ethos_informative_words(agent text, tsv tsvector) RETURNS float8
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    total bigint := coalesce((SELECT a.docs FROM agent_text_stats AS a
                              WHERE a.agent_id = agent), 0);
BEGIN
    RETURN (
        SELECT coalesce(sum(ethos_word_weight(u.lexeme, total, coalesce(
                                (SELECT l.docs FROM lexeme_stats AS l
                                 WHERE l.agent_id = agent AND l.lexeme = u.lexeme),
                                0))), 0)
        FROM unnest(array_remove(tsvector_to_array(tsv), ethos_agent_lexeme(agent)))
             AS u (lexeme));
END
$$;

-- A statement that wrote many memories changed the statistics tables by as much: the
-- planner learns of it at once (as their owner), not at autovacuum's next round, so the
-- lookups above are not planned as scans of what it still thinks is an empty table.
CREATE FUNCTION ethos_text_stats_analyze() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE lexeme_stats, agent_text_stats;
END
$$;

CREATE OR REPLACE FUNCTION ethos_text_stats_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted text := CASE WHEN TG_TABLE_NAME = 'memory_vectors' THEN 'source_id IS NULL'
                         ELSE 'true' END;
    written record;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_text_stats_rebuild();
        RETURN NULL;
    END IF;
    -- One pass over the rows: their counts added, and how many the statement wrote.
    EXECUTE format(
        'SELECT ethos_text_stats_add(array_agg(agent_id) FILTER (WHERE %2$s),'
        ' array_agg(content_tsv) FILTER (WHERE %2$s), array_agg(%1$s) FILTER (WHERE %2$s)),'
        ' count(*) AS n FROM %3$I',
        CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END, counted,
        CASE WHEN TG_OP = 'INSERT' THEN 'new_rows' ELSE 'old_rows' END) INTO written;
    IF written.n >= 10000 THEN
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION ethos_auto_importance(agent text, tsv tsvector, half float8) RETURNS float8
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT 1 - power(2, -ethos_informative_words(agent, tsv) / half)
$$;

CREATE OR REPLACE FUNCTION ethos_init_decay_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    settings ethos_settings;
    measured boolean := true;
BEGIN
    NEW.strength := coalesce(NEW.strength, NEW.salience);
    NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
    IF TG_TABLE_NAME = 'semantic_facts' THEN
        NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
    END IF;
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        measured := NEW.source_id IS NULL;  -- the vector of an episode or fact: its own
    END IF;
    SELECT * INTO settings FROM ethos_settings;
    IF NEW.policy IS NULL AND NEW.importance IS NULL AND measured
       AND coalesce(settings.auto_importance, false)
       AND NOT EXISTS (SELECT FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id) THEN
        NEW.auto_importance := ethos_auto_importance(
            NEW.agent_id, NEW.content_tsv, settings.auto_importance_half);
    END IF;
    IF NEW.policy IS NULL AND coalesce(NEW.importance, NEW.auto_importance) IS NOT NULL THEN
        NEW.policy := coalesce(
            (SELECT t.policy FROM importance_tiers AS t
             WHERE t.min_importance <= coalesce(NEW.importance, NEW.auto_importance)
             ORDER BY t.min_importance DESC LIMIT 1),
            settings.importance_otherwise);
    END IF;
    IF NEW.policy IS NULL THEN
        NEW.policy := coalesce(
            (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id),
            settings.default_policy,
            'standard');
    END IF;
    RETURN NEW;
END
$$;
"""


def upgrade() -> None:
    execute_script(UPGRADE)
    for table in TABLES:
        execute_script(
            f"ALTER TABLE {table} ADD COLUMN auto_importance double precision"
            f" CHECK (auto_importance >= 0 AND auto_importance <= 1);"
        )


def downgrade() -> None:
    for table in TABLES:
        execute_script(f"ALTER TABLE {table} DROP COLUMN auto_importance;")
    execute_script(earlier_function("0016_lexeme_stats", "ethos_text_stats_changed"))
    execute_script("""
DROP FUNCTION ethos_text_stats_analyze();
DROP FUNCTION ethos_auto_importance(text, tsvector, float8);
DROP FUNCTION ethos_informative_words(text, tsvector);
DROP FUNCTION ethos_word_weight(text, bigint, bigint);
ALTER TABLE ethos_settings DROP COLUMN auto_importance, DROP COLUMN auto_importance_half;
""")
    execute_script(earlier_function("0006_policies", "ethos_init_decay_state"))
