"""What bounds one lexeme's BM25 share among an agent's memories: lexeme_stats also keeps,
for each lexeme of an agent, the most positions it has in one memory (max_tf) and the
fewest distinct lexemes of a memory holding it (min_length). A memory's share from that
lexeme is at most idf × f(max_tf, min_length) (f: BM25's term saturation and length
normalisation, increasing in tf and decreasing in length), a tighter bound than
idf × (k1 + 1), so recall's MaxScore split (runbooks/recall.md) reads fewer rows.

Both are bounds, not exact extremes: adding memories widens them; removing memories
(deletes, text updates) leaves them as they were, still bounding what is left, and a
rebuild (ethos_text_stats_rebuild, or a TRUNCATE) makes them exact again. NULL (a
lexeme counted before this migration, which rebuilds the statistics) means unknown:
recall falls back to idf × (k1 + 1).

A text update that keeps a lexeme (its count unchanged) still widens its bounds: such
a lexeme is written, with a count change of 0, where it used to be skipped.

Revision ID: 0028
Revises: 0026
Create Date: 2026-11-24
"""

from ethos.migrations import earlier_function, execute_script

revision = "0028"
down_revision = "0026"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE lexeme_stats ADD COLUMN max_tf integer, ADD COLUMN min_length integer;

CREATE OR REPLACE FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[])
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    INSERT INTO agent_text_stats AS s (agent_id, docs, length)
    SELECT d.agent, sum(d.sign), sum(d.sign * ethos_text_length(d.tsv))
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET docs = s.docs + excluded.docs, length = s.length + excluded.length;

    -- A term's frequency is its number of positions, as recall's BM25 counts it; only
    -- the memories added (sign 1) widen the bounds (greatest and least skip NULL).
    INSERT INTO lexeme_stats AS s (agent_id, lexeme, docs, max_tf, min_length)
    SELECT d.agent, w.lexeme, sum(d.sign),
           max(coalesce(array_length(w.positions, 1), 1)) FILTER (WHERE d.sign > 0),
           min(ethos_text_length(d.tsv)) FILTER (WHERE d.sign > 0)
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
         unnest(d.tsv) AS w
    WHERE w.lexeme <> ethos_agent_lexeme(d.agent)
    GROUP BY d.agent, w.lexeme
    HAVING sum(d.sign) <> 0 OR bool_or(d.sign > 0)
    ORDER BY d.agent, w.lexeme
    ON CONFLICT (agent_id, lexeme) DO UPDATE
    SET docs = s.docs + excluded.docs,
        max_tf = greatest(s.max_tf, excluded.max_tf),
        min_length = least(s.min_length, excluded.min_length);

    DELETE FROM lexeme_stats AS s
    USING unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
          unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.lexeme = w.lexeme AND s.docs <= 0;

    DELETE FROM agent_text_stats AS s
    USING unnest(agents, signs) AS d (agent, sign)
    WHERE d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
$$;

SELECT ethos_text_stats_rebuild();
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    # 0016's ethos_text_stats_add, as it was (CREATE OR REPLACE keeps 0025's grants)
    execute_script(earlier_function("0016_lexeme_stats", "ethos_text_stats_add"))
    execute_script("ALTER TABLE lexeme_stats DROP COLUMN max_tf, DROP COLUMN min_length;")
