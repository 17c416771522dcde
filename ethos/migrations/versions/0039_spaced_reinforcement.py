"""Reinforcement that does not saturate: the spacing effect.

Every retrieval multiplied τ by the policy's multiplier, however soon it followed the
last one: replaying LoCoMo's conversations as an agent uses memory, half of the live
memories ended at the cap on τ, decades from fading, mostly through bursts of recall
within one session. A retrieval now adds its spaced gain to `reinforcement`, the n of
τ = base × multiplier^n and of the frequency boost: the share of the way to being
forgotten that the memory went since its anchor (ethos_spaced_gain; decay.spaced_gain
is its reference). A burst within minutes counts about once; a retrieval at the point of
forgetting counts fully, as every retrieval did. retrieval_count still counts every
retrieval (promotions, reports).

Memories stored before keep their curve: their reinforcement starts at their count. The
curve functions take n as a float8 (their integer versions go).

Revision ID: 0039
Revises: 0038
Create Date: 2026-11-26
"""

from ethos.migrations import earlier_function, execute_script

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

FUNCTIONS = r"""
CREATE FUNCTION ethos_tau_days(n double precision, base_tau_days double precision,
                               ltp_multiplier double precision, max_tau_days double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- min(base × multiplier^n, max), in log space so a large n cannot overflow
    SELECT base_tau_days * exp(least(n * ln(ltp_multiplier), ln(max_tau_days / base_tau_days)))
$$;

CREATE FUNCTION ethos_strength_at(strength double precision, anchor_at timestamptz,
                                  n double precision, frozen boolean, at timestamptz,
                                  curve text, base_tau_days double precision,
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
                               created_at timestamptz, n double precision,
                               emotion double precision, frozen boolean, at timestamptz,
                               curve text, base_tau_days double precision,
                               ltp_multiplier double precision, max_tau_days double precision,
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

-- What one retrieval adds to n, from the strength S at the anchor and `decayed`, S × D(t)
-- at the retrieval: 0.1, and the rest by (S − S·D(t)) / (S − T), the share of the way to
-- the prune threshold T that the strength went since the anchor; 1 for the first (n = 0:
-- nothing to space from) and where S is at or below T already, 0 for a frozen memory.
CREATE FUNCTION ethos_spaced_gain(strength double precision, decayed double precision,
                                  n double precision, frozen boolean,
                                  prune_threshold double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN frozen THEN 0
        WHEN n = 0 OR strength <= prune_threshold THEN 1
        ELSE 0.1 + 0.9 * least(greatest((strength - decayed) / (strength - prune_threshold),
                                        0), 1)
    END
$$;
"""

OLD_SIGNATURES = (
    "ethos_salience(double precision, timestamptz, timestamptz, integer, double precision,"
    " boolean, timestamptz, text, double precision, double precision, double precision,"
    " double precision, double precision, double precision)",
    "ethos_strength_at(double precision, timestamptz, integer, boolean, timestamptz, text,"
    " double precision, double precision, double precision, double precision)",
    "ethos_tau_days(integer, double precision, double precision, double precision)",
)


def upgrade() -> None:
    execute_script(
        "".join(
            f"ALTER TABLE {table} ADD COLUMN reinforcement double precision NOT NULL DEFAULT 0"
            f" CONSTRAINT {table}_reinforcement_check"
            " CHECK (reinforcement >= 0 AND reinforcement <= 1000000000);\n"
            f"UPDATE {table} SET reinforcement = retrieval_count WHERE retrieval_count > 0;\n"
            for table in TABLES
        )
        + "".join(f"DROP FUNCTION {signature};\n" for signature in OLD_SIGNATURES)
        + FUNCTIONS
    )


def downgrade() -> None:
    execute_script(
        "DROP FUNCTION ethos_spaced_gain(double precision, double precision, double precision,"
        " boolean, double precision);\n"
        + "".join(
            f"DROP FUNCTION {signature.replace('integer', 'double precision')};\n"
            for signature in OLD_SIGNATURES
        )
        + earlier_function("0001_memory_tables", "ethos_tau_days", "DECAY_FUNCTIONS")
        + earlier_function("0006_policies", "ethos_strength_at", "FUNCTIONS")
        + earlier_function("0006_policies", "ethos_salience", "FUNCTIONS")
        + "".join(f"ALTER TABLE {table} DROP COLUMN reinforcement;\n" for table in TABLES)
    )
