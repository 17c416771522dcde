-- The decay curve in SQL: what every sweep, LTP update and view computes a salience with.
-- ethos.decay holds the same formulas in Python; tests hold the two equal.
--
-- salience = min(1, S x D(t) x (1 + alpha*f) x (1 + beta*E)), D the policy's curve
-- (exponential, or FSRS's power curve) over t days since the anchor with
-- tau = min(base x multiplier^n, max). All are pure: a row's salience at a moment is a
-- function of its own columns and its policy, so sweeping often or rarely gives the same.

CREATE FUNCTION ethos_log_decay(t_days double precision, tau double precision, curve text, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN curve = 'power'
                THEN -power_exponent
                     * ln(1 + (power(0.9, -1 / power_exponent) - 1) * t_days / tau)
                ELSE -t_days / tau
           END
$$;

CREATE FUNCTION ethos_tau_days(n double precision, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(base × multiplier^n, max), in log space so a large n cannot overflow
    SELECT base_tau_days * exp(least(n * ln(ltp_multiplier), ln(max_tau_days / base_tau_days)))
$$;

CREATE FUNCTION ethos_strength_at(strength double precision, anchor_at timestamp with time zone, n double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
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

CREATE FUNCTION ethos_salience(strength double precision, anchor_at timestamp with time zone, created_at timestamp with time zone, n double precision, emotion double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, frequency_weight double precision, emotional_weight double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(1, S × D(t) × (1 + α·f) × (1 + β·E)), f = min(n / days_alive, 1)
    SELECT CASE WHEN frozen THEN strength ELSE least(1.0,
        ethos_strength_at(strength, anchor_at, n, false, at, curve,
                          base_tau_days, ltp_multiplier, max_tau_days, power_exponent)
        * (1 + frequency_weight
               * least(n / greatest(date_part('epoch', at - created_at) / 86400.0, 1), 1))
        * (1 + emotional_weight * least(greatest(emotion, 0), 1)))
    END
$$;

CREATE FUNCTION ethos_spaced_gain(strength double precision, decayed double precision, n double precision, frozen boolean, prune_threshold double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN frozen THEN 0
        WHEN n = 0 OR strength <= prune_threshold THEN 1
        ELSE 0.1 + 0.9 * least(greatest((strength - decayed) / (strength - prune_threshold),
                                        0), 1)
    END
$$;

CREATE FUNCTION ethos_slice(place tid) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ((place::text::point)[0]::bigint / 64 % 16)::smallint
$$;
