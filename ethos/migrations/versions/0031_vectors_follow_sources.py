"""The vector of an episode or fact has no life of its own: it lives, is pruned and is
recovered with its source.

Before, such a vector was a row on its own curve (the agent's policy or the default,
never its source's automatic tier) that nothing reinforced: recall reinforces the
source a vector stands for, not the vector. So a turn kept alive by use lost its
vector within weeks, and hybrid recall stopped finding it by meaning (LoCoMo replayed
with hybrid recall: 1,233 of 1,568 live turns had lost their vector; runbooks/recall.md),
while a forgotten turn's vector could outlive it.

Now:
- a vector with a source is written on the never-decaying `permanent` policy (a BEFORE
  INSERT trigger, whatever the writer asked), so no sweep decays or prunes it on its own;
  moving it to another policy is refused with one line (move the source instead);
- pruning or recovering a source does the same to its vector (an AFTER UPDATE OF pruned
  row trigger on the source tables: every path that prunes, sweeps, forget, merges,
  feedback, recovery, goes through it);
- search reads a source vector's liveness and salience from its source
  (build_search_query);
- the vectors already written are moved onto `permanent`, unscheduled, and given their
  sources' prune state.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

SOURCES = ("episodic_traces", "semantic_facts")

UPGRADE = r"""
-- The built-in never-decaying policy, for a database no engine has opened yet (an engine
-- writes every configured policy when it opens).
INSERT INTO decay_policies (name, curve, base_tau_days, ltp_multiplier, max_tau_days,
                            frequency_weight, emotional_weight, prune_threshold,
                            power_exponent, never_decays, lifetime_days)
VALUES ('permanent', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, true, NULL)
ON CONFLICT (name) DO NOTHING;

CREATE FUNCTION ethos_vector_follows_source() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.policy := 'permanent';
    RETURN NEW;
END
$$;

-- Runs before memory_vectors_init_decay_state (BEFORE triggers fire in name order), which
-- then finds the policy set.
CREATE TRIGGER memory_vectors_follow_source BEFORE INSERT ON memory_vectors
    FOR EACH ROW WHEN (NEW.source_id IS NOT NULL)
    EXECUTE FUNCTION ethos_vector_follows_source();

-- A move to another policy would give it a curve of its own again: refused, in one line.
CREATE FUNCTION ethos_vector_stays_with_source() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the vector % follows its source (% %): move the source instead',
        NEW.id, NEW.source_type, NEW.source_id USING ERRCODE = 'check_violation';
END
$$;

CREATE TRIGGER memory_vectors_stay_with_source BEFORE UPDATE OF policy ON memory_vectors
    FOR EACH ROW WHEN (NEW.source_id IS NOT NULL AND NEW.policy <> 'permanent')
    EXECUTE FUNCTION ethos_vector_stays_with_source();

CREATE FUNCTION ethos_source_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_vectors
    SET pruned = NEW.pruned, pruned_at = NEW.pruned_at, prune_reason = NEW.prune_reason
    WHERE source_type = TG_TABLE_NAME AND source_id = NEW.id AND pruned <> NEW.pruned;
    RETURN NULL;
END
$$;
"""

SOURCE = """
CREATE TRIGGER {table}_vector_follows AFTER UPDATE OF pruned ON {table}
    FOR EACH ROW WHEN (OLD.pruned <> NEW.pruned)
    EXECUTE FUNCTION ethos_source_pruned();

UPDATE memory_vectors AS v
SET policy = 'permanent', due_at = NULL, prune_at = NULL,
    pruned = s.pruned, pruned_at = s.pruned_at, prune_reason = s.prune_reason
FROM {table} AS s
WHERE v.source_type = '{table}' AND v.source_id = s.id;
"""


def upgrade() -> None:
    execute_script(UPGRADE)
    for table in SOURCES:
        execute_script(SOURCE.format(table=table))


def downgrade() -> None:
    execute_script(
        "".join(f"DROP TRIGGER {table}_vector_follows ON {table};" for table in SOURCES)
        + """DROP TRIGGER memory_vectors_follow_source ON memory_vectors;
             DROP TRIGGER memory_vectors_stay_with_source ON memory_vectors;
             DROP FUNCTION ethos_source_pruned(); DROP FUNCTION ethos_vector_follows_source();
             DROP FUNCTION ethos_vector_stays_with_source();"""
    )
