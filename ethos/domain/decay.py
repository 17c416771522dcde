"""The decay math, pure: no I/O, no clock. The SQL functions of the migrations compute
the same; tests hold the two equal.

salience(now) = min(1, S × D(t) × (1 + α·f) × (1 + β·E))
  t = max(0, now − anchor) in days, τ = min(base_tau × multiplier^n, max_tau),
  f = min(n / max(days_alive, 1), 1)
  n: the retrievals as they reinforce, each spaced one adding its gain (spaced_gain: 0
     just after the last, 1 at the point of forgetting)
  D(t) = e^(−t/τ)                       (curve "exponential": Ebbinghaus)
  D(t) = (1 + F·t/τ)^(−d), F = 0.9^(−1/d) − 1   (curve "power": FSRS's retrievability,
                                         90% left at t = τ)

S and the anchor are the row's stored state; a sweep never changes them, so the
value is the same whether it is swept every minute or once a month. The parameters
come from the row's policy (ethos.domain.policies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

SECONDS_PER_DAY = 86400.0
# e^−700 ≈ 1e−304: the floor that keeps PostgreSQL's float8 from raising underflow (and
# e^700 the ceiling that keeps it from overflow).
MIN_EXPONENT = -700.0
MAX_EXPONENT = 700.0
# The power curve keeps this share of the strength at t = τ.
POWER_RETENTION_AT_TAU = 0.9
# What a retrieval adds to n at least, however soon it follows the last (spaced_gain);
# migration 0039's ethos_spaced_gain says the same. On LoCoMo's shipped conversations
# 0 kept 84.8% of what is asked later, 0.1 85.7% (runbooks/recall.md).
MIN_GAIN = 0.1

Curve = Literal["exponential", "power"]
CURVES: tuple[Curve, ...] = ("exponential", "power")


@dataclass(frozen=True)
class DecayParams:
    base_tau_days: float = 7.0
    ltp_multiplier: float = 1.5
    max_tau_days: float = 3650.0
    frequency_weight: float = 0.3
    emotional_weight: float = 0.2
    prune_threshold: float = 0.05
    curve: Curve = "exponential"
    power_exponent: float = 0.5  # d, for the power curve
    never_decays: bool = False  # like pinned, for every memory of the policy

    @property
    def power_factor(self) -> float:
        """F = 0.9^(−1/d) − 1."""
        return power_factor(self.power_exponent)


@dataclass(frozen=True)
class MemoryState:
    """What the curve of one row depends on."""

    strength: float
    anchor_at: datetime
    created_at: datetime
    reinforcement: float = 0.0  # n: the retrievals, each counted by its spaced gain
    emotion: float = 0.0
    pinned: bool = False


def power_factor(d: float) -> float:
    return float(POWER_RETENTION_AT_TAU ** (-1 / d) - 1)


def days_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / SECONDS_PER_DAY


def tau_days(n: float, p: DecayParams) -> float:
    """τ_eff = min(base × multiplier^n, max), in log space so a large n cannot overflow."""
    return p.base_tau_days * math.exp(
        min(n * math.log(p.ltp_multiplier), math.log(p.max_tau_days / p.base_tau_days))
    )


def frozen(m: MemoryState, p: DecayParams) -> bool:
    """Pinned memories, and every memory of a policy that never decays, keep their value."""
    return m.pinned or p.never_decays


def log_decay(t_days: float, tau: float, p: DecayParams) -> float:
    """ln D(t): −t/τ, or −d·ln(1 + F·t/τ)."""
    if p.curve == "power":
        return -p.power_exponent * math.log1p(p.power_factor * t_days / tau)
    return -t_days / tau


def strength_at(m: MemoryState, now: datetime, p: DecayParams) -> float:
    """S × D(t): the curve without the boosts."""
    if frozen(m, p) or m.strength == 0:
        return m.strength
    t = max(days_between(m.anchor_at, now), 0.0)
    exponent = math.log(m.strength) + log_decay(t, tau_days(m.reinforcement, p), p)
    return math.exp(max(exponent, MIN_EXPONENT))


def decay_factor(m: MemoryState, now: datetime, p: DecayParams) -> float:
    """D(t) alone, floored like the strength."""
    if frozen(m, p):
        return 1.0
    t = max(days_between(m.anchor_at, now), 0.0)
    return math.exp(max(log_decay(t, tau_days(m.reinforcement, p), p), MIN_EXPONENT))


def frequency(m: MemoryState, now: datetime) -> float:
    """f = min(n / max(days_alive, 1), 1)."""
    return min(m.reinforcement / max(days_between(m.created_at, now), 1.0), 1.0)


def boosts(m: MemoryState, now: datetime, p: DecayParams) -> tuple[float, float]:
    """(1 + α·f, 1 + β·E)."""
    emotion = min(max(m.emotion, 0.0), 1.0)
    return 1 + p.frequency_weight * frequency(m, now), 1 + p.emotional_weight * emotion


def salience(m: MemoryState, now: datetime, p: DecayParams) -> float:
    if frozen(m, p):
        return m.strength
    frequency_boost, emotional_boost = boosts(m, now, p)
    return min(1.0, strength_at(m, now, p) * frequency_boost * emotional_boost)


def is_pruned(value: float, p: DecayParams) -> bool:
    """Strictly below the threshold."""
    return value < p.prune_threshold


def days_to_fall(ratio: float, tau: float, p: DecayParams) -> float:
    """Days until D(t) falls to `ratio` (< 1): the inverse of the curve."""
    if p.curve == "power":
        return float(tau / p.power_factor * (ratio ** (-1 / p.power_exponent) - 1))
    return tau * math.log(1 / ratio)


def prunes_at(m: MemoryState, now: datetime, p: DecayParams) -> datetime | None:
    """The first whole second, from now on, at which salience falls below the threshold
    if the memory is never retrieved again; None if it never does (pinned memories,
    and those of a policy that never decays)."""
    if frozen(m, p):
        return None
    if is_pruned(salience(m, now, p), p):
        return now
    # salience is non-increasing in time: bisect between now and a moment that is surely
    # below the threshold (the curve with both boosts at their maximum).
    ceiling = m.strength * (1 + p.frequency_weight) * (1 + p.emotional_weight)
    tau = tau_days(m.reinforcement, p)
    start = max(m.anchor_at, now)
    horizon_days = days_to_fall(min(p.prune_threshold / ceiling, 1.0), tau, p) + 1.0
    lo, hi = 0, math.ceil((days_between(now, start) + horizon_days) * SECONDS_PER_DAY)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if is_pruned(salience(m, now + timedelta(seconds=mid), p), p):
            hi = mid
        else:
            lo = mid
    return now + timedelta(seconds=hi)


def tau_for_lifetime(lifetime_days: float, p: DecayParams) -> float:
    """The base τ at which a plain memory (strength 1, never retrieved, emotion 0) falls
    to the prune threshold exactly `lifetime_days` after its creation."""
    if p.curve == "power":
        return float(
            p.power_factor * lifetime_days / (p.prune_threshold ** (-1 / p.power_exponent) - 1)
        )
    return lifetime_days / math.log(1 / p.prune_threshold)


def plain_lifetime_days(p: DecayParams) -> float | None:
    """How long a plain memory lives under p (None: forever)."""
    if p.never_decays:
        return None
    return days_to_fall(p.prune_threshold, tau_days(0, p), p)


def half_life_days(n: int, p: DecayParams) -> float:
    """Days for the strength to halve at n retrievals."""
    return days_to_fall(0.5, tau_days(n, p), p)


def spaced_gain(m: MemoryState, at: datetime, p: DecayParams) -> float:
    """What one retrieval at `at` adds to n, the spacing effect: MIN_GAIN, and the rest
    by the share of the way to being forgotten that the memory went since its anchor
    (its creation or last retrieval), (1 − D(t)) / (1 − T/S), D the decay since then
    and T/S the share of its strength at which it reaches the prune threshold T. A
    retrieval right after the last adds MIN_GAIN (ten within an hour count about
    twice); one at the point of forgetting adds 1, the policy's full multiplier. The
    first retrieval (n = 0) counts fully: there is nothing to space it from. A memory
    that does not decay gains nothing."""
    if frozen(m, p):
        return 0.0
    if m.reinforcement == 0 or m.strength <= p.prune_threshold:
        return 1.0
    lost = m.strength - strength_at(m, at, p)  # S − S·D(t), as the SQL twin has it
    share = min(max(lost / (m.strength - p.prune_threshold), 0.0), 1.0)
    return MIN_GAIN + (1 - MIN_GAIN) * share


# --- when a sweep must write a row next ----------------------------------------------
#
# A sweep only needs to visit a row when its stored value drifts past the tolerance,
# when it falls below the prune threshold, or when it expires. Each moment follows from
# the row's state and policy alone (the curve is non-increasing while nothing happens
# to the row), so it is computed whenever the row is written and kept with it. The
# estimates are never late: the frequency boost f shrinks as the memory ages, so the
# first moment is bracketed with f at two moments and the earlier bound is taken. The
# SQL computes it (ethos.db.store.sql.fragments); tests/reference_decay.py says it in Python.

SCHEDULE_HORIZON_DAYS = 100_000.0  # the latest moment computed (274 years: never, in effect)
# A bracket narrower than this share of its width, seen from the reference, is settled.
REFINE_BELOW = 0.9
