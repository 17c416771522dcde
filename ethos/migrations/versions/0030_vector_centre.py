"""What an agent's memory vectors have in common: agent_vector_stats keeps, for each
agent, how many vectors it has and their sum (each one scaled to unit length), so that
search can take the agent's mean direction off the query (search.vector_centering,
runbooks/recall.md). A memory near that mean (chatter, a greeting, a turn like every
other) is near every query too; centred, the query finds what is particular to it.

Written only by triggers on memory_vectors, as the term statistics are: statement
triggers add what an INSERT wrote and take away what a DELETE removed, a row trigger
follows an UPDATE that changes an embedding or an agent, a TRUNCATE rebuilds. Pruned
vectors count (a soft delete does not change what the agent's memories share), so a
sweep writes nothing here. The sum is float4, as the vectors are: rounding drifts by
~1e-5 of the mean over 100,000 adds and deletes; ethos_vector_stats_rebuild() makes it
exact again.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE agent_vector_stats (
    agent_id text PRIMARY KEY,
    vectors  bigint NOT NULL,
    total    vector NOT NULL
);

-- Add (sign 1) or take away (-1) vectors, agents in order; an agent taken down to none
-- is removed. As its owner: roles that write memories need no grant here.
CREATE FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer)
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    INSERT INTO agent_vector_stats AS s (agent_id, vectors, total)
    SELECT d.agent, sign * count(*), sum(l2_normalize(d.embedding))
    FROM unnest(agents, embeddings) AS d (agent, embedding)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET vectors = s.vectors + excluded.vectors,
        total = CASE WHEN sign > 0 THEN s.total + excluded.total
                     ELSE s.total - excluded.total END;

    DELETE FROM agent_vector_stats AS s
    WHERE sign < 0 AND s.agent_id = ANY (agents) AND s.vectors <= 0;
$$;

CREATE FUNCTION ethos_vector_stats_rebuild() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM agent_vector_stats;
    INSERT INTO agent_vector_stats (agent_id, vectors, total)
    SELECT agent_id, count(*), sum(l2_normalize(embedding))
    FROM memory_vectors
    GROUP BY agent_id;
$$;

-- Statement triggers: the vectors a statement inserted (or deleted).
CREATE FUNCTION ethos_vector_stats_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_vector_stats_rebuild();
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), 1)
        FROM new_rows;
    ELSE
        PERFORM ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), -1)
        FROM old_rows;
    END IF;
    RETURN NULL;
END
$$;

-- Row trigger: an embedding or its agent changed.
CREATE FUNCTION ethos_vector_stats_updated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM ethos_vector_stats_add(ARRAY[OLD.agent_id], ARRAY[OLD.embedding], -1);
    PERFORM ethos_vector_stats_add(ARRAY[NEW.agent_id], ARRAY[NEW.embedding], 1);
    RETURN NULL;
END
$$;

REVOKE EXECUTE ON FUNCTION ethos_vector_stats_add(text[], vector[], integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION ethos_vector_stats_rebuild() FROM PUBLIC;

CREATE TRIGGER memory_vectors_vector_stats_insert AFTER INSERT ON memory_vectors
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_vector_stats_changed();
CREATE TRIGGER memory_vectors_vector_stats_delete AFTER DELETE ON memory_vectors
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_vector_stats_changed();
CREATE TRIGGER memory_vectors_vector_stats_truncate AFTER TRUNCATE ON memory_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_vector_stats_changed();
CREATE TRIGGER memory_vectors_vector_stats_update AFTER UPDATE OF embedding, agent_id
    ON memory_vectors
    FOR EACH ROW WHEN (OLD.embedding <> NEW.embedding OR OLD.agent_id <> NEW.agent_id)
    EXECUTE FUNCTION ethos_vector_stats_updated();

SELECT ethos_vector_stats_rebuild();
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script(
        "".join(
            f"DROP TRIGGER memory_vectors_vector_stats_{event} ON memory_vectors;"
            for event in ("insert", "delete", "truncate", "update")
        )
        + """DROP FUNCTION ethos_vector_stats_updated(); DROP FUNCTION ethos_vector_stats_changed();
           DROP FUNCTION ethos_vector_stats_rebuild();
           DROP FUNCTION ethos_vector_stats_add(text[], vector[], integer);
           DROP TABLE agent_vector_stats;"""
    )
