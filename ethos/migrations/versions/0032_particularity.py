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
needs PARTICULARITY_MIN vectors of the agent to mean anything.

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

-- NULL where the agent has fewer than 10 vectors, or they all point one way.
CREATE FUNCTION ethos_particularity(agent text, embedding vector) RETURNS float8
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT (embedding <=> s.total) / nullif(1 - vector_norm(s.total) / s.vectors, 0)
    FROM agent_vector_stats AS s
    WHERE s.agent_id = agent AND s.vectors >= 10
$$;

-- The policy of the highest tier an importance reaches, else the settings' otherwise.
CREATE FUNCTION ethos_importance_tier(importance float8) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        (SELECT t.policy FROM importance_tiers AS t WHERE t.min_importance <= importance
         ORDER BY t.min_importance DESC LIMIT 1),
        (SELECT s.importance_otherwise FROM ethos_settings AS s),
        'working')
$$;

CREATE FUNCTION ethos_tier_by_vector() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    weight float8 := coalesce((SELECT s.auto_importance_particularity FROM ethos_settings AS s),
                              2);
    p float8;
    by_words float8;
    raised float8;
BEGIN
    IF weight = 0 THEN
        RETURN NULL;
    END IF;
    p := ethos_particularity(NEW.agent_id, NEW.embedding);
    IF p IS NULL THEN
        RETURN NULL;
    END IF;
    IF NEW.source_type = 'episodic_traces' THEN
        SELECT m.auto_importance INTO by_words FROM episodic_traces AS m
        WHERE m.id = NEW.source_id AND m.auto_importance IS NOT NULL AND NOT m.pruned
          AND m.retrieval_count = 0 AND m.due_at = '-infinity'
          AND m.policy = ethos_importance_tier(m.auto_importance);
    ELSE
        SELECT m.auto_importance INTO by_words FROM semantic_facts AS m
        WHERE m.id = NEW.source_id AND m.auto_importance IS NOT NULL AND NOT m.pruned
          AND m.retrieval_count = 0 AND m.due_at = '-infinity'
          AND m.policy = ethos_importance_tier(m.auto_importance);
    END IF;
    IF by_words IS NULL THEN
        RETURN NULL;
    END IF;
    raised := 1 - power(1 - by_words, power(p, weight));
    IF NEW.source_type = 'episodic_traces' THEN
        UPDATE episodic_traces
        SET auto_importance = raised, auto_particularity = p,
            policy = ethos_importance_tier(raised)
        WHERE id = NEW.source_id;
    ELSE
        UPDATE semantic_facts
        SET auto_importance = raised, auto_particularity = p,
            policy = ethos_importance_tier(raised)
        WHERE id = NEW.source_id;
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
        DROP FUNCTION ethos_particularity(text, vector);
        ALTER TABLE ethos_settings DROP COLUMN auto_importance_particularity;
        ALTER TABLE episodic_traces DROP COLUMN auto_particularity;
        ALTER TABLE semantic_facts DROP COLUMN auto_particularity;
        ALTER TABLE memory_vectors DROP COLUMN auto_particularity;
    """)
