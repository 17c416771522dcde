"""Decay policies: every memory has one, the curve is the policy's.

decay_policies holds the policies of the settings (written when ethos opens); each
memory table gains `policy` and `importance`; the decay functions take the policy's
curve (exponential or power); the insert trigger picks a policy for rows that name
none (importance, then the agent's policy, then the default). ethos_settings replaces
decay_settings: the threshold is the policy's now.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

import importlib

from ethos.migrations import execute_script

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

POLICIES = """
CREATE TABLE decay_policies (
    name              text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]*$'),
    curve             text NOT NULL CHECK (curve IN ('exponential', 'power')),
    base_tau_days     double precision NOT NULL CHECK (base_tau_days > 0),
    ltp_multiplier    double precision NOT NULL CHECK (ltp_multiplier >= 1),
    max_tau_days      double precision NOT NULL CHECK (max_tau_days >= base_tau_days),
    frequency_weight  double precision NOT NULL CHECK (frequency_weight >= 0),
    emotional_weight  double precision NOT NULL CHECK (emotional_weight >= 0),
    prune_threshold   double precision NOT NULL CHECK (prune_threshold > 0 AND prune_threshold < 1),
    power_exponent    double precision NOT NULL CHECK (power_exponent > 0),
    never_decays      boolean NOT NULL,
    promote_after     integer CHECK (promote_after >= 1),
    promote_to        text REFERENCES decay_policies (name) DEFERRABLE INITIALLY DEFERRED,
    -- Where a memory ends up by retrieval count, the rules chained: at
    -- promotion_counts[i] retrievals it belongs to promotion_targets[i].
    promotion_counts  integer[] NOT NULL DEFAULT '{}',
    promotion_targets text[] NOT NULL DEFAULT '{}',
    lifetime_days     double precision,  -- a plain memory's age at pruning (NULL: never)
    configured        boolean NOT NULL DEFAULT true,  -- false: gone from the settings
    changed_at        timestamptz NOT NULL DEFAULT now(),  -- when its parameters last changed
    CHECK ((promote_after IS NULL) = (promote_to IS NULL))
);
-- The first wave's defaults, so rows written before ethos first opens are valid.
INSERT INTO decay_policies (name, curve, base_tau_days, ltp_multiplier, max_tau_days,
                            frequency_weight, emotional_weight, prune_threshold,
                            power_exponent, never_decays, lifetime_days)
VALUES ('standard', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, false, 7 * ln(20));

-- What the insert trigger and the views read, written when ethos opens.
CREATE TABLE ethos_settings (
    id                   boolean PRIMARY KEY DEFAULT true CHECK (id),
    default_policy       text NOT NULL REFERENCES decay_policies (name),
    importance_otherwise text NOT NULL REFERENCES decay_policies (name),
    at_risk_margin       double precision NOT NULL,
    updated_at           timestamptz NOT NULL DEFAULT now()
);
INSERT INTO ethos_settings (default_policy, importance_otherwise, at_risk_margin)
VALUES ('standard', 'standard', 0.05);

-- Importance at write picks the policy of the highest tier it reaches.
CREATE TABLE importance_tiers (
    policy         text PRIMARY KEY REFERENCES decay_policies (name),
    min_importance double precision NOT NULL CHECK (min_importance BETWEEN 0 AND 1)
);

-- Per-agent decay domains: the policy of an agent's new memories.
CREATE TABLE agent_policies (
    agent_id    text PRIMARY KEY,
    policy      text NOT NULL REFERENCES decay_policies (name),
    assigned_at timestamptz NOT NULL DEFAULT now()
);

DROP VIEW ethos_at_risk;
DROP TABLE decay_settings;
"""

# Existing rows become `standard` without a rewrite (a constant default is stored once);
# then the default goes, so that the trigger can tell an insert that names no policy.
MEMORY_COLUMNS = """
ALTER TABLE {table}
    ADD COLUMN policy text NOT NULL DEFAULT 'standard' REFERENCES decay_policies (name),
    ADD COLUMN importance double precision CHECK (importance >= 0 AND importance <= 1);
ALTER TABLE {table} ALTER COLUMN policy DROP DEFAULT;
"""

FUNCTIONS = """
DROP FUNCTION ethos_salience(double precision, timestamptz, timestamptz, integer,
                             double precision, boolean, timestamptz, double precision,
                             double precision, double precision, double precision,
                             double precision);
DROP FUNCTION ethos_strength_at(double precision, timestamptz, integer, boolean, timestamptz,
                                double precision, double precision, double precision);

-- ln D(t) of the policy's curve: −t/τ (exponential), or −d·ln(1 + F·t/τ) with
-- F = 0.9^(−1/d) − 1 (power: FSRS's retrievability, 90% left at t = τ).
CREATE FUNCTION ethos_log_decay(t_days double precision, tau double precision, curve text,
                                power_exponent double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN curve = 'power'
                THEN -power_exponent
                     * ln(1 + (power(0.9, -1 / power_exponent) - 1) * t_days / tau)
                ELSE -t_days / tau
           END
$$;

CREATE FUNCTION ethos_strength_at(strength double precision, anchor_at timestamptz,
                                  n integer, frozen boolean, at timestamptz, curve text,
                                  base_tau_days double precision,
                                  ltp_multiplier double precision,
                                  max_tau_days double precision,
                                  power_exponent double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- S × D(t), computed as exp(ln S + ln D) floored at e^−700 so that very old rows
    -- cannot raise PostgreSQL's float underflow error. Frozen: pinned, or a policy
    -- that never decays.
    SELECT CASE
        WHEN frozen OR strength = 0 THEN strength
        ELSE exp(greatest(
            ln(strength) + ethos_log_decay(
                greatest(date_part('epoch', at - anchor_at), 0) / 86400.0,
                ethos_tau_days(n, base_tau_days, ltp_multiplier, max_tau_days),
                curve, power_exponent),
            -700))
    END
$$;

CREATE FUNCTION ethos_salience(strength double precision, anchor_at timestamptz,
                               created_at timestamptz, n integer,
                               emotion double precision, frozen boolean, at timestamptz,
                               curve text,
                               base_tau_days double precision,
                               ltp_multiplier double precision,
                               max_tau_days double precision,
                               frequency_weight double precision,
                               emotional_weight double precision,
                               power_exponent double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- min(1, S × D(t) × (1 + α·f) × (1 + β·E)), f = min(n / days_alive, 1)
    SELECT CASE WHEN frozen THEN strength ELSE least(1.0,
        ethos_strength_at(strength, anchor_at, n, false, at, curve,
                          base_tau_days, ltp_multiplier, max_tau_days, power_exponent)
        * (1 + frequency_weight
               * least(n / greatest(date_part('epoch', at - created_at) / 86400.0, 1), 1))
        * (1 + emotional_weight * least(greatest(emotion, 0), 1)))
    END
$$;

-- A row inserted by plain SQL or COPY starts its curve from the salience (and
-- confidence) it was given, anchored at its creation; with no policy named, it takes
-- the one its importance picks, else its agent's, else the default.
CREATE OR REPLACE FUNCTION ethos_init_decay_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.strength := coalesce(NEW.strength, NEW.salience);
    NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
    IF TG_TABLE_NAME = 'semantic_facts' THEN
        NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
    END IF;
    IF NEW.policy IS NULL AND NEW.importance IS NOT NULL THEN
        NEW.policy := coalesce(
            (SELECT t.policy FROM importance_tiers AS t
             WHERE t.min_importance <= NEW.importance
             ORDER BY t.min_importance DESC LIMIT 1),
            (SELECT s.importance_otherwise FROM ethos_settings AS s));
    END IF;
    IF NEW.policy IS NULL THEN
        NEW.policy := coalesce(
            (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id),
            (SELECT s.default_policy FROM ethos_settings AS s),
            'standard');
    END IF;
    RETURN NEW;
END
$$;
"""

VIEWS = """
-- The first wave's columns, then the policy's (a view only grows at its end).
CREATE OR REPLACE VIEW ethos_memories AS
    SELECT m.table_name, m.id, m.agent_id, m.content, m.salience, m.confidence,
           m.retrieval_count, m.last_retrieved_at, m.created_at, m.pruned, m.pruned_at,
           m.prune_reason, m.pinned,
           CASE
               WHEN m.created_at > now() - interval '1 day' THEN '<1d'
               WHEN m.created_at > now() - interval '7 days' THEN '1-7d'
               WHEN m.created_at > now() - interval '30 days' THEN '7-30d'
               ELSE '>30d'
           END AS age_bucket,
           m.policy, m.importance
    FROM (
        SELECT 'memory_vectors'::text AS table_name, id, agent_id, content, salience,
               NULL::double precision AS confidence, retrieval_count, last_retrieved_at,
               created_at, pruned, pruned_at, prune_reason, pinned, policy, importance
        FROM memory_vectors
        UNION ALL
        SELECT 'episodic_traces', id, agent_id, content, salience, NULL, retrieval_count,
               last_retrieved_at, created_at, pruned, pruned_at, prune_reason, pinned,
               policy, importance
        FROM episodic_traces
        UNION ALL
        SELECT 'semantic_facts', id, agent_id, content, salience, confidence, retrieval_count,
               last_retrieved_at, created_at, pruned, pruned_at, prune_reason, pinned,
               policy, importance
        FROM semantic_facts
    ) AS m;

-- Live memories within at_risk_margin of their policy's threshold (facts on their
-- confidence, as they are pruned), as of the last sweep's stored values. Pinned
-- memories and those of a policy that never decays are never at risk.
CREATE VIEW ethos_at_risk AS
    SELECT m.table_name, m.id, m.agent_id, left(m.content, 80) AS content,
           coalesce(m.confidence, m.salience) AS value, p.prune_threshold, m.policy,
           m.retrieval_count, m.last_retrieved_at
    FROM ethos_memories AS m
    JOIN decay_policies AS p ON p.name = m.policy
    CROSS JOIN ethos_settings AS s
    WHERE NOT m.pruned AND NOT m.pinned AND NOT p.never_decays
      AND coalesce(m.confidence, m.salience) < p.prune_threshold + s.at_risk_margin
    ORDER BY value;

-- Memories by policy: how many, and how salient the live ones are.
CREATE VIEW ethos_policy_counts AS
    SELECT m.table_name, m.policy,
           count(*) FILTER (WHERE NOT m.pruned) AS live,
           count(*) FILTER (WHERE m.pruned) AS pruned,
           avg(m.salience) FILTER (WHERE NOT m.pruned) AS avg_salience
    FROM ethos_memories AS m
    GROUP BY m.table_name, m.policy;
"""


def upgrade() -> None:
    execute_script(POLICIES)
    for table in MEMORY_TABLES:
        execute_script(MEMORY_COLUMNS.format(table=table))
    execute_script(FUNCTIONS)
    execute_script(VIEWS)


def downgrade() -> None:
    first = importlib.import_module("ethos.migrations.versions.0001_memory_tables")
    monitoring = importlib.import_module("ethos.migrations.versions.0003_monitoring")
    execute_script(
        """
        DROP VIEW ethos_policy_counts, ethos_at_risk;
        DROP VIEW ethos_memories CASCADE;
        DROP FUNCTION ethos_salience(double precision, timestamptz, timestamptz, integer,
            double precision, boolean, timestamptz, text, double precision, double precision,
            double precision, double precision, double precision, double precision);
        DROP FUNCTION ethos_strength_at(double precision, timestamptz, integer, boolean,
            timestamptz, text, double precision, double precision, double precision,
            double precision);
        DROP FUNCTION ethos_log_decay(double precision, double precision, text,
                                      double precision);
        """
    )
    # The first wave's functions (the trigger's included), as migration 0001 wrote them.
    execute_script(first.DECAY_FUNCTIONS.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
    for table in MEMORY_TABLES:
        execute_script(f"ALTER TABLE {table} DROP COLUMN policy, DROP COLUMN importance")
    execute_script(
        """
        DROP TABLE agent_policies, importance_tiers, ethos_settings, decay_policies;
        CREATE TABLE decay_settings (
            id              boolean PRIMARY KEY DEFAULT true CHECK (id),
            prune_threshold double precision NOT NULL,
            at_risk_margin  double precision NOT NULL,
            updated_at      timestamptz NOT NULL DEFAULT now()
        );
        """
    )
    # And the views of migration 0003, as it wrote them.
    views = (
        "CREATE VIEW ethos_memories AS"
        + monitoring.UPGRADE.split("CREATE VIEW ethos_memories AS", 1)[1]
    )
    execute_script(views.replace("CREATE VIEW", "CREATE OR REPLACE VIEW"))
