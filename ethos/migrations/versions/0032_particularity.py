"""A memory's vector tiers it too: how far it lies from what the agent's memories share.

Automatic importance (0023, 0029) counts a memory's informative words. With a vector,
a second signal comes at write for free: its particularity, how far the vector lies from
the agent's mean (agent_vector_stats, 0030), relative to how far the agent's vectors lie
from it on average:

    p = (1 − cos(v, mean)) / (1 − |mean|)

The average of 1 − cos(v, mean) over the agent's unit vectors is exactly 1 − |mean|, so
p is 1 for a typical memory, above for a particular one, below for chatter, whatever
the model's cosines look like. A memory's words w become w × p^k (k:
`[importance] auto_particularity`, 2 by default, 0 off), that is its automatic
importance a = 1 − 2^(−w/half) becomes 1 − (1 − a)^(p^k), and it is tiered again;
p is kept in its auto_particularity (memory_vectors has the column for the shared
layout; its own rows never get one).

The vector is written after its episode or fact (in the engine's add, in the same
transaction), so an AFTER INSERT trigger on the vector tiers the source again, only
while the source is as its insert left it: automatic importance, on the tier that gave,
never swept (unscheduled), never retrieved, live. The agent's mean is the one before the
statement that writes the vector (its statistics are kept by a statement trigger), and
needs 10 vectors of the agent to mean anything. A source is tiered this way once: a
second vector of it changes nothing. The trigger runs with its owner's rights (a role
allowed to insert vectors needs no grant on the columns it sets). A downgrade keeps the
importances and policies it gave.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-25
"""

from ethos.migrations import execute_script

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE ethos_settings ADD COLUMN auto_importance_particularity float8 NOT NULL DEFAULT 2;
ALTER TABLE episodic_traces ADD COLUMN auto_particularity float8;
ALTER TABLE semantic_facts ADD COLUMN auto_particularity float8;
ALTER TABLE memory_vectors ADD COLUMN auto_particularity float8;

-- NULL where the agent has fewer than 10 vectors. Where they nearly all point one way the
-- spread is taken as 0.001 at least (float4 sums can even make it negative).
CREATE FUNCTION ethos_particularity(agent text, embedding vector) RETURNS float8
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT greatest(embedding <=> s.total, 0)
           / greatest(1 - vector_norm(s.total) / s.vectors, 0.001)
    FROM agent_vector_stats AS s
    WHERE s.agent_id = agent AND s.vectors >= 10
$$;

-- 1 - (1 - importance)^(p^k), in logarithms: power() fails where the result underflows
-- (a long text, a very particular vector), and p is bounded as its effect is long before.
CREATE FUNCTION ethos_importance_raised(importance float8, p float8, k float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN importance >= 1 THEN 1
                ELSE 1 - exp(-least(-ln(1 - importance) * power(least(p, 1000), k), 700))
           END
$$;

-- The policy of the highest tier an importance reaches, else the settings' otherwise (as
-- ethos_init_decay_state picks it).
CREATE FUNCTION ethos_importance_tier(importance float8) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        (SELECT t.policy FROM importance_tiers AS t WHERE t.min_importance <= importance
         ORDER BY t.min_importance DESC LIMIT 1),
        (SELECT s.importance_otherwise FROM ethos_settings AS s))
$$;

-- The owner's rights: a role that may insert a vector need not be granted the columns it
-- sets on the source (nor be re-granted for a column this migration adds).
CREATE FUNCTION ethos_tier_by_vector() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    k float8 := coalesce((SELECT s.auto_importance_particularity FROM ethos_settings AS s), 2);
    p float8;
BEGIN
    IF k = 0 THEN
        RETURN NULL;
    END IF;
    p := ethos_particularity(NEW.agent_id, NEW.embedding);
    IF p IS NOT NULL THEN  -- only a source as its insert left it, once
        EXECUTE format($u$
            UPDATE %I
            SET auto_importance = ethos_importance_raised(auto_importance, $2, $3),
                auto_particularity = $2,
                policy = ethos_importance_tier(ethos_importance_raised(auto_importance, $2, $3))
            WHERE id = $1 AND auto_importance IS NOT NULL AND auto_particularity IS NULL
              AND NOT pruned AND retrieval_count = 0 AND due_at = '-infinity'
              AND policy = ethos_importance_tier(auto_importance)$u$, NEW.source_type)
        USING NEW.source_id, p, k;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_vectors_tier_source AFTER INSERT ON memory_vectors
    FOR EACH ROW WHEN (NEW.source_id IS NOT NULL)
    EXECUTE FUNCTION ethos_tier_by_vector();
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script("""
        DROP TRIGGER memory_vectors_tier_source ON memory_vectors;
        DROP FUNCTION ethos_tier_by_vector(); DROP FUNCTION ethos_importance_tier(float8);
        DROP FUNCTION ethos_importance_raised(float8, float8, float8);
        DROP FUNCTION ethos_particularity(text, vector);
        ALTER TABLE ethos_settings DROP COLUMN auto_importance_particularity;
        ALTER TABLE episodic_traces DROP COLUMN auto_particularity;
        ALTER TABLE semantic_facts DROP COLUMN auto_particularity;
        ALTER TABLE memory_vectors DROP COLUMN auto_particularity;
    """)
