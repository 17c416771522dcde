"""Automatic importance weighs a statement's memories together, not one at a time.

0029 measured each memory's words in its BEFORE INSERT trigger: a query a row, with a
primary-key probe of lexeme_stats a word (~50 µs for a memory of 9 words). A bulk insert
on top of existing memories paid that for every row: 1.5x the time with automatic
importance off (issue 24's goal: 1.2x).

Now the insert trigger gives a measured memory the importance of its words all counting
1 (its text's length: exactly what it gets when its agent is not counted yet, and an
upper bound otherwise), and its tier; an AFTER INSERT statement trigger then weighs the
new memories of agents the statistics count, all at once (one join of their words with
lexeme_stats, which the planner makes a hash join for a large statement), and writes the
importance and tier of those whose weight is less. What a memory gets is unchanged: the
same words, weights, formula and tiers, against the statistics as they were before the
statement (the trigger's name sorts it before `*_text_stats_insert`, which adds the
statement's own words; and before `*_hint_new_rows`, whose hints then point at the rows'
final places). Only a statement's RETURNING sees the first measure; and a source written
with its vector in one statement (a CTE) is tiered by its vector before it is weighed,
where 0029 weighed it first.

The trigger runs with its owner's rights (a role allowed to insert needs no grant on the
columns it sets). Like the other trigger functions that do, it is no longer PUBLIC's to
attach to a table of one's own (where it would read any agent's statistics), and all the
functions that run with their owner's rights now search the session's temporary schema
last (a review of this migration found both).

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-25
"""

from ethos.migrations import earlier_function, execute_script

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

UPGRADE = r"""
CREATE OR REPLACE FUNCTION ethos_init_decay_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    auto boolean;
    half float8;
    otherwise text;
    fallback text;
    agent_policy text;
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
    -- One query: the settings (none yet: the defaults) and the agent's own policy.
    SELECT s.auto_importance, s.auto_importance_half, s.importance_otherwise, s.default_policy,
           (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id)
    INTO auto, half, otherwise, fallback, agent_policy
    FROM (SELECT) AS one LEFT JOIN ethos_settings AS s ON true;
    IF importance IS NULL AND agent_policy IS NULL AND measured AND coalesce(auto, true) THEN
        -- Every word counting 1; the statement's end weighs the words of a counted agent.
        importance := ethos_auto_importance(ethos_text_length(NEW.content_tsv),
                                            coalesce(half, 4));
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

-- The new rows the insert trigger measured, of agents the statistics count: the sum of
-- their words' weights (ethos_word_weight, the agent's lexeme left out), and the
-- importance and tier that gives where it is less. What the insert trigger measured is
-- told by its own conditions and the value and tier it gave: a row written with an
-- auto_importance of its own (a copy from another database, a restore with its policy)
-- keeps it. A large statement's words are hashed: with the default 4MB of work_mem the
-- hashes of 200,000 rows spilled to disk and the planner probed lexeme_stats by key
-- instead (7.0 s against 5.1 s with 64MB).
CREATE FUNCTION ethos_weigh_new_rows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT SET work_mem = '64MB' AS $$
DECLARE
    auto boolean := coalesce((SELECT s.auto_importance FROM ethos_settings AS s), true);
    half float8 := coalesce((SELECT s.auto_importance_half FROM ethos_settings AS s), 4);
BEGIN
    IF NOT auto OR NOT EXISTS (SELECT FROM new_rows AS n
                               JOIN agent_text_stats AS a ON a.agent_id = n.agent_id
                               WHERE n.auto_importance IS NOT NULL) THEN
        RETURN NULL;  -- nothing to weigh: a first load, named policies, vectors of sources
    END IF;
    EXECUTE format($u$
        UPDATE %I.%I AS t
        SET auto_importance = m.importance,
            policy = coalesce(ethos_importance_tier(m.importance), 'standard')
        FROM (SELECT r.id, ethos_auto_importance(r.words, $1) AS importance
              FROM (SELECT n.id,
                           sum(ethos_word_weight(u.lexeme, a.docs, coalesce(l.docs, 0)))
                               AS words
                    FROM new_rows AS n
                    JOIN agent_text_stats AS a ON a.agent_id = n.agent_id
                    CROSS JOIN unnest(array_remove(tsvector_to_array(n.content_tsv),
                                                   ethos_agent_lexeme(n.agent_id)))
                        AS u (lexeme)
                    LEFT JOIN lexeme_stats AS l
                        ON l.agent_id = n.agent_id AND l.lexeme = u.lexeme
                    WHERE n.importance IS NULL %s
                      AND n.auto_importance
                          = ethos_auto_importance(ethos_text_length(n.content_tsv), $1)
                      AND NOT EXISTS (SELECT FROM agent_policies AS p
                                      WHERE p.agent_id = n.agent_id)
                      AND n.policy = coalesce(ethos_importance_tier(n.auto_importance),
                                              'standard')
                    GROUP BY n.id) AS r) AS m
        WHERE t.id = m.id AND m.importance < t.auto_importance$u$,
        TG_TABLE_SCHEMA, TG_TABLE_NAME,
        CASE WHEN TG_TABLE_NAME = 'memory_vectors' THEN 'AND n.source_id IS NULL' END)
    USING half;
    RETURN NULL;
END
$$;

DROP FUNCTION ethos_informative_words(text, tsvector);
"""

# The functions that run with their owner's rights. Those of triggers are the owner's alone
# to attach: a role may create a trigger on a temporary table of its own with any function
# it may execute, and these read every agent's statistics and write where the trigger's
# table says. Every one of them searches the session's temporary schema last: first (the
# default when a path does not name it), a temporary table or view of the caller's named
# like one they read would be read, or run, with the owner's rights.
DEFINERS = (
    "ethos_agents_of(text)",
    "ethos_text_stats_add(text[], tsvector[], integer[])",
    "ethos_text_stats_analyze()",
    "ethos_text_stats_rebuild()",
    "ethos_vector_stats_add(text[], vector[], integer)",
    "ethos_vector_stats_rebuild()",
)
DEFINER_TRIGGERS = (
    "ethos_drop_revisions()",
    "ethos_keep_revision()",
    "ethos_text_stats_changed()",
    "ethos_text_stats_updated()",
    "ethos_tier_by_vector()",
    "ethos_vector_stats_changed()",
    "ethos_vector_stats_updated()",
    "ethos_weigh_new_rows()",
)
TEMP_LAST = (
    "SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);\n"
)


def _search_paths() -> str:
    """Each definer's search_path set to the migration's own (pg_temp last, or not)."""
    return "".join(
        f"ALTER FUNCTION {f} SET search_path FROM CURRENT;\n"
        for f in (*DEFINERS, *DEFINER_TRIGGERS)
    )


TRIGGER = """
CREATE TRIGGER {table}_auto_importance AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ethos_weigh_new_rows();
"""


def upgrade() -> None:
    execute_script(
        TEMP_LAST
        + UPGRADE
        + "".join(TRIGGER.format(table=t) for t in TABLES)
        + _search_paths()
        + "".join(f"REVOKE EXECUTE ON FUNCTION {f} FROM PUBLIC;\n" for f in DEFINER_TRIGGERS)
    )


def downgrade() -> None:
    execute_script(
        "".join(f"GRANT EXECUTE ON FUNCTION {f} TO PUBLIC;\n" for f in DEFINER_TRIGGERS[:-1])
        + _search_paths()
        + "".join(f"DROP TRIGGER {t}_auto_importance ON {t};\n" for t in TABLES)
        + "DROP FUNCTION ethos_weigh_new_rows();\n"
        + earlier_function("0029_auto_importance_on", "ethos_informative_words", "UPGRADE")
        + "\n"
        + earlier_function("0029_auto_importance_on", "ethos_init_decay_state", "UPGRADE")
    )
