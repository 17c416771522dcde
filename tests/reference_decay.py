"""The decay math's reference for what only the SQL computes: LTP's strengthening and
when a sweep must next write a row. ethos computes these in PostgreSQL (the statements
of ethos.db.store.sql.ltp and ethos.db.store.sql.fragments); the tests hold the SQL equal to
this Python, which says the same in a form a reader can check against the formulas."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from ethos.domain.decay import (
    MAX_EXPONENT,
    MIN_GAIN,
    REFINE_BELOW,
    SCHEDULE_HORIZON_DAYS,
    DecayParams,
    MemoryState,
    days_between,
    frozen,
    is_pruned,
    log_decay,
    salience,
    spaced_gain,
    strength_at,
    tau_days,
)

MIN_STEP = timedelta(seconds=1)  # a row just written is not due again before this


def spaced_gains(m: MemoryState, at: datetime, p: DecayParams, count: int) -> float:
    """What `count` retrievals at `at` add to n: the first its spaced gain, each of the
    others MIN_GAIN (they follow it at once)."""
    return spaced_gain(m, at, p) + MIN_GAIN * (count - 1) if count > 0 else 0.0


def ltp_strength(m: MemoryState, now: datetime, p: DecayParams, boost: float, count: int) -> float:
    """The strength after `count` retrievals at `now`: the strength at now, given back
    the share `spaced_gain` of what it lost since the anchor, times boost^count, capped
    at 1 (the same as `count` retrievals applied one after another at that now: the
    first gives back, the others follow it at once)."""
    decayed = strength_at(m, now, p)
    restored = decayed + spaced_gain(m, now, p) * (m.strength - decayed) if count else decayed
    return min(1.0, restored * boost**count)


def days_until(log_ratio: float, tau: float, p: DecayParams) -> float:
    """Days after the anchor at which S·B·D(t) falls to T, given y = ln(S·B / T):
    exponential τ·y, power τ/F·(e^(y/d) − 1); at or below 0 when it is there already."""
    if p.curve == "power":
        ratio = min(log_ratio / p.power_exponent, MAX_EXPONENT)
        return tau / p.power_factor * (math.exp(ratio) - 1)
    return tau * log_ratio


def falls_below(
    m: MemoryState, target: float, reference: datetime, p: DecayParams, *, refine: bool = False
) -> datetime | None:
    """Never later than the first moment the (unfrozen) value falls below `target`,
    seen from `reference`; None if it never does (target 0). Exact when the memory was
    never retrieved (f = 0).

    Otherwise f, which only falls as the memory ages, is bracketed: with f as it is at
    `reference` the value is surely below target by some moment; with f as it will be
    then, it is surely not below before the lower answer. For any moment T, the value
    is above target until the earlier of T and the crossing with f taken at T, so
    `refine` also tries T halfway between the two: the answer for a small drift over a
    long horizon, where f falls by more than the drift, would otherwise be "now"."""
    if target <= 0:
        return None
    if m.strength <= 0:
        return m.anchor_at
    tau = tau_days(m.reinforcement, p)
    log_sb = math.log(m.strength) + math.log1p(p.emotional_weight * min(max(m.emotion, 0.0), 1.0))
    anchor_age = days_between(m.created_at, m.anchor_at)
    reference_age = days_between(m.created_at, reference)

    def days_at(after_anchor: float) -> float:
        """The crossing, in days after the anchor, with f taken at that many days."""
        age = max(anchor_age + after_anchor, reference_age)
        f = min(m.reinforcement / max(age, 1.0), 1.0)
        days = days_until(log_sb - math.log(target) + math.log1p(p.frequency_weight * f), tau, p)
        return min(max(days, 0.0), SCHEDULE_HORIZON_DAYS)

    latest = days_at(0.0)  # f at the reference: the largest it will be
    answer = days_at(latest)
    # Refine where the bracket is wide, measured from the reference (not the anchor,
    # which may lie far back, where every bracket looks narrow).
    elapsed = max(reference_age - anchor_age, 0.0)
    if refine and m.reinforcement > 0 and answer - elapsed < REFINE_BELOW * (latest - elapsed):
        for moment in candidates(m, target, latest, answer, anchor_age, reference_age, p):
            answer = max(answer, min(moment, days_at(moment)))
    return m.anchor_at + timedelta(days=answer)


def candidates(
    m: MemoryState,
    target: float,
    latest: float,
    answer: float,
    anchor_age: float,
    reference_age: float,
    p: DecayParams,
) -> list[float]:
    """Moments (days after the anchor) near the crossing, to try in falls_below: halfway
    between the bracket; the end of the plateau where f = 1 (n retrievals within n
    days); and one Newton step from the reference, with the curve's slope and f's."""
    n = m.reinforcement
    tau = tau_days(n, p)
    elapsed = max(reference_age - anchor_age, 0.0)
    slope = 1 / tau  # −d/dt ln D at the reference
    if p.curve == "power":
        slope = p.power_exponent * p.power_factor / tau / (1 + p.power_factor * elapsed / tau)
    plateau = max(n, 1.0)  # f = min(n / max(age, 1), 1) is 1 up to this age
    if reference_age > plateau:
        f = n / reference_age
        slope += p.frequency_weight * f / reference_age / (1 + p.frequency_weight * f)
    value = (
        m.strength
        * math.exp(log_decay(elapsed, tau, p))
        * (1 + p.frequency_weight * min(n / max(reference_age, 1.0), 1.0))
        * (1 + p.emotional_weight * min(max(m.emotion, 0.0), 1.0))
    )
    newton = elapsed + max(math.log(value / target), 0.0) / slope
    return [(latest + answer) / 2, max(plateau - anchor_age, 0.0), newton]


def value_due(
    m: MemoryState,
    stored: float,
    floor: float,
    reference: datetime,
    tolerance: float,
    p: DecayParams,
) -> datetime | None:
    """When a sweep must rewrite a stored value: when it drifts past the tolerance or
    falls below `floor` (the prune threshold where this value decides pruning, else
    0); `reference` if it has already; None if never."""
    if frozen(m, p):
        return reference if abs(m.strength - stored) > tolerance * m.strength else None
    now = salience(m, reference, p)
    if abs(now - stored) > tolerance * now or now < floor:
        return reference
    target = max(stored / (1 + tolerance), floor)
    if target <= 0:
        return None
    moment = falls_below(m, target, reference, p, refine=True)
    assert moment is not None
    return max(moment, reference + MIN_STEP)


def prune_due(
    m: MemoryState, reference: datetime, p: DecayParams, expires_at: datetime | None = None
) -> datetime | None:
    """When a sweep must prune the row if nothing happens to it (never late)."""
    if frozen(m, p):
        return None
    if is_pruned(salience(m, reference, p), p):
        moment = reference
    else:
        crossing = falls_below(m, p.prune_threshold, reference, p)
        assert crossing is not None
        moment = max(crossing, reference + MIN_STEP)
    return moment if expires_at is None else min(moment, expires_at)
