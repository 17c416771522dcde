"""Automatic importance on by default, at less cost to a write (issue 24).

- `ethos_settings.auto_importance` defaults to true, and is set: a database no engine
  has opened since (plain SQL, COPY) measures its memories too; an engine writes its
  `[importance] auto` when it opens, as before.
- ethos_idf in float8: it was computed in numeric (`+ 0.5` is a numeric literal) and
  cast, and numeric ln took ~3.5 µs, once per word of every memory written (and once per
  query word in recall). float8 gives the same value to ~1e-16 relative.
- ethos_informative_words is a one-row SQL table function: the insert trigger's query
  inlines it (no PL/pgSQL call and no second query a row), its words' counts are joined
  rather than read by a subquery each (a subquery argument kept ethos_idf from being
  inlined), and a number is not looked up (it counts 1 whatever its frequency).
- ethos_auto_importance(words, half) holds the formula, 1 − 2^(−words / half), which no
  longer fails on a long text (2^(−words / half) underflowed: 0023's error at the content
  limit).
- The insert trigger reads the settings, the agent's own policy and whether the agent is
  counted yet in one query; a memory that names its policy reads nothing. An agent the
  statistics have not counted (its first memories, a first bulk load) has every word
  new to it: its words are the text's length, with no lookup. Otherwise one query
  measures the words (a primary-key probe a word: what is left of the cost, 1.5x on a
  bulk insert on top of existing memories, runbooks/recall.md); the tier as before.

What a memory gets is unchanged: the same words, weights, formula and tiers.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-24
"""

from ethos.migrations import earlier_function, execute_script

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE ethos_settings ALTER COLUMN auto_importance SET DEFAULT true;
UPDATE ethos_settings SET auto_importance = true;  -- an engine writes its own at open

CREATE OR REPLACE FUNCTION ethos_idf(docs bigint, df bigint) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ln(1 + (greatest(docs, df) - df + 0.5::float8) / (df + 0.5::float8))
$$;

DROP FUNCTION ethos_auto_importance(text, tsvector, float8);
DROP FUNCTION ethos_informative_words(text, tsvector);

-- The sum over a text's lexemes (its agent's left out) of ethos_word_weight: one row. A
-- SQL table function, so that the query reading it inlines it. Each word's count is one
-- lookup by the whole primary key (a LIMIT keeps it a lookup, not a join the planner
-- could turn into a scan of the agent's vocabulary); a number is not looked up.
CREATE FUNCTION ethos_informative_words(agent text, tsv tsvector)
RETURNS TABLE (words float8) LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(ethos_word_weight(u.lexeme, coalesce(a.docs, 0), coalesce(l.docs, 0))),
                    0)
    FROM unnest(array_remove(tsvector_to_array(tsv), ethos_agent_lexeme(agent))) AS u (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN LATERAL (SELECT s.docs FROM lexeme_stats AS s
                       WHERE s.agent_id = agent AND s.lexeme = u.lexeme
                         AND u.lexeme !~ '^[0-9]'
                       LIMIT 1) AS l ON true
$$;

-- 2^-1000 is 1 to a double: past it, power() would fail on the underflow (a long text).
CREATE FUNCTION ethos_auto_importance(words float8, half float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 1 - power(2, -least(words / half, 1000)) $$;

CREATE OR REPLACE FUNCTION ethos_init_decay_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    auto boolean;
    half float8;
    otherwise text;
    fallback text;
    agent_policy text;
    counted boolean;
    importance float8 := NEW.importance;
    measured boolean := true;
BEGIN
    NEW.strength := coalesce(NEW.strength, NEW.salience);
    NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
    IF TG_TABLE_NAME = 'semantic_facts' THEN
        NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
    END IF;
    IF NEW.policy IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        measured := NEW.source_id IS NULL;  -- the vector of an episode or fact: its own
    END IF;
    -- One query: the settings (none yet: the defaults), the agent's own policy, and
    -- whether the statistics count the agent yet.
    SELECT s.auto_importance, s.auto_importance_half, s.importance_otherwise, s.default_policy,
           (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id),
           EXISTS (SELECT FROM agent_text_stats AS t WHERE t.agent_id = NEW.agent_id)
    INTO auto, half, otherwise, fallback, agent_policy, counted
    FROM (SELECT) AS one LEFT JOIN ethos_settings AS s ON true;
    IF importance IS NULL AND agent_policy IS NULL AND measured AND coalesce(auto, true) THEN
        IF NOT counted THEN  -- every word is new to the agent: each counts 1
            importance := ethos_auto_importance(ethos_text_length(NEW.content_tsv),
                                                coalesce(half, 4));
        ELSE
            SELECT ethos_auto_importance(w.words, coalesce(half, 4)) INTO importance
            FROM ethos_informative_words(NEW.agent_id, NEW.content_tsv) AS w;
        END IF;
        NEW.auto_importance := importance;
    END IF;
    IF importance IS NOT NULL THEN
        NEW.policy := (SELECT t.policy FROM importance_tiers AS t
                       WHERE t.min_importance <= importance
                       ORDER BY t.min_importance DESC LIMIT 1);
    END IF;
    NEW.policy := coalesce(NEW.policy, CASE WHEN importance IS NOT NULL THEN otherwise END,
                           agent_policy, fallback, 'standard');
    RETURN NEW;
END
$$;
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script("""
DROP FUNCTION ethos_auto_importance(float8, float8);
DROP FUNCTION ethos_informative_words(text, tsvector);
ALTER TABLE ethos_settings ALTER COLUMN auto_importance SET DEFAULT false;
UPDATE ethos_settings SET auto_importance = false;
""")
    execute_script(earlier_function("0016_lexeme_stats", "ethos_idf"))
    for name in ("ethos_informative_words", "ethos_auto_importance", "ethos_init_decay_state"):
        execute_script(earlier_function("0023_auto_importance", name, "UPGRADE"))
