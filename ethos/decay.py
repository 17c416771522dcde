"""The decay math, pure: no I/O, no clock. The SQL functions in migration 0001 compute
the same; tests hold the two equal.

salience(now) = min(1, S × e^(−t/τ) × (1 + α·f) × (1 + β·E))
  t = max(0, now − anchor) in days, τ = min(base_tau × multiplier^n, max_tau),
  f = min(n / max(days_alive, 1), 1)

S and the anchor are the row's stored state; a sweep never changes them, so the
value is the same whether it is swept every minute or once a month.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

SECONDS_PER_DAY = 86400.0
# e^−700 ≈ 1e−304: the floor that keeps PostgreSQL's float8 from raising underflow.
MIN_EXPONENT = -700.0


@dataclass(frozen=True)
class DecayParams:
    base_tau_days: float = 7.0
    ltp_multiplier: float = 1.5
    max_tau_days: float = 3650.0
    frequency_weight: float = 0.3
    emotional_weight: float = 0.2
    prune_threshold: float = 0.05

    def sql_values(self) -> dict[str, float]:
        """The parameters by the names the SQL statements bind them with."""
        return {
            "base_tau_days": self.base_tau_days,
            "ltp_multiplier": self.ltp_multiplier,
            "max_tau_days": self.max_tau_days,
            "frequency_weight": self.frequency_weight,
            "emotional_weight": self.emotional_weight,
            "prune_threshold": self.prune_threshold,
        }


@dataclass(frozen=True)
class MemoryState:
    """What the curve of one row depends on."""

    strength: float
    anchor_at: datetime
    created_at: datetime
    retrieval_count: int = 0
    emotion: float = 0.0
    pinned: bool = False


def days_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / SECONDS_PER_DAY


def tau_days(n: int, p: DecayParams) -> float:
    """τ_eff = min(base × multiplier^n, max), in log space so a large n cannot overflow."""
    return p.base_tau_days * math.exp(
        min(n * math.log(p.ltp_multiplier), math.log(p.max_tau_days / p.base_tau_days))
    )


def strength_at(m: MemoryState, now: datetime, p: DecayParams) -> float:
    """S × e^(−t/τ): the curve without the boosts."""
    if m.pinned or m.strength == 0:
        return m.strength
    t = max(days_between(m.anchor_at, now), 0.0)
    return math.exp(max(math.log(m.strength) - t / tau_days(m.retrieval_count, p), MIN_EXPONENT))


def frequency(m: MemoryState, now: datetime) -> float:
    """f = min(n / max(days_alive, 1), 1)."""
    return min(m.retrieval_count / max(days_between(m.created_at, now), 1.0), 1.0)


def boosts(m: MemoryState, now: datetime, p: DecayParams) -> tuple[float, float]:
    """(1 + α·f, 1 + β·E)."""
    emotion = min(max(m.emotion, 0.0), 1.0)
    return 1 + p.frequency_weight * frequency(m, now), 1 + p.emotional_weight * emotion


def salience(m: MemoryState, now: datetime, p: DecayParams) -> float:
    if m.pinned:
        return m.strength
    frequency_boost, emotional_boost = boosts(m, now, p)
    return min(1.0, strength_at(m, now, p) * frequency_boost * emotional_boost)


def is_pruned(value: float, p: DecayParams) -> bool:
    """Strictly below the threshold."""
    return value < p.prune_threshold


def prunes_at(m: MemoryState, now: datetime, p: DecayParams) -> datetime | None:
    """The first whole second, from now on, at which salience falls below the threshold
    if the memory is never retrieved again; None if it never does (pinned or zero-length
    curves aside, every curve eventually does)."""
    if m.pinned:
        return None
    if is_pruned(salience(m, now, p), p):
        return now
    # salience is non-increasing in time: bisect between now and a moment that is surely
    # below the threshold (the curve with both boosts at their maximum).
    ceiling = m.strength * (1 + p.frequency_weight) * (1 + p.emotional_weight)
    tau = tau_days(m.retrieval_count, p)
    start = max(m.anchor_at, now)
    horizon_days = tau * max(math.log(ceiling / p.prune_threshold), 0.0) + 1.0
    lo, hi = 0, math.ceil((days_between(now, start) + horizon_days) * SECONDS_PER_DAY)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if is_pruned(salience(m, now + timedelta(seconds=mid), p), p):
            hi = mid
        else:
            lo = mid
    return now + timedelta(seconds=hi)


def half_life_days(n: int, p: DecayParams) -> float:
    """Days for the strength to halve at n retrievals."""
    return tau_days(n, p) * math.log(2)


def ltp_strength(m: MemoryState, now: datetime, p: DecayParams, boost: float, count: int) -> float:
    """The strength after `count` retrievals at `now`: the strength at now times boost^count,
    capped at 1 (the same as `count` retrievals applied one after another at that now)."""
    return min(1.0, strength_at(m, now, p) * boost**count)
