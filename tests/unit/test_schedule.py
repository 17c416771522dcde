"""When a sweep must visit a row next: never late, exact for memories never retrieved."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ethos.domain import decay
from ethos.domain.decay import DecayParams, MemoryState
from tests import reference_decay

if TYPE_CHECKING:
    from tests.conftest import Days

CURVES = st.sampled_from(
    [
        DecayParams(),
        DecayParams(base_tau_days=0.1, frequency_weight=0.9),
        DecayParams(curve="power", base_tau_days=2.0),
        DecayParams(curve="power", power_exponent=1.5, emotional_weight=0.8),
        DecayParams(ltp_multiplier=1.0, frequency_weight=2.0),
    ]
)
STATES = st.fixed_dictionaries(
    {
        "strength": st.floats(min_value=0.01, max_value=1),
        "reinforcement": st.one_of(st.just(0.0), st.floats(min_value=0, max_value=30)),
        "emotion": st.floats(min_value=0, max_value=1),
        "created_days": st.floats(min_value=-60, max_value=0),
        "anchor_after_days": st.floats(min_value=0, max_value=30),
    }
)


def build(days: Days, f: dict[str, Any]) -> MemoryState:
    created = days(f["created_days"])
    return MemoryState(
        strength=f["strength"],
        anchor_at=created + timedelta(days=f["anchor_after_days"]),
        created_at=created,
        reinforcement=f["reinforcement"],
        emotion=f["emotion"],
    )


def first_below(m: MemoryState, target: float, start: datetime, p: DecayParams) -> datetime:
    """The first whole second from `start` at which the value is below `target`, by
    bisection over the true curve (or the schedule's horizon, if later)."""
    if decay.salience(m, start, p) < target:
        return start
    horizon = int(decay.SCHEDULE_HORIZON_DAYS * 86400)
    lo, hi = 0, 1
    while decay.salience(m, start + timedelta(seconds=hi), p) >= target:
        if hi >= horizon:
            return start + timedelta(seconds=horizon)
        lo, hi = hi, min(hi * 2, horizon)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decay.salience(m, start + timedelta(seconds=mid), p) < target:
            hi = mid
        else:
            lo = mid
    return start + timedelta(seconds=hi)


@hsettings(max_examples=300)
@given(STATES, CURVES, st.floats(min_value=0.01, max_value=0.9), st.floats(0, 40))
def test_the_estimate_is_never_late(
    days: Days, f: dict[str, Any], p: DecayParams, target: float, reference_days: float
) -> None:
    m = build(days, f)
    reference = max(days(reference_days), m.anchor_at)
    estimate = reference_decay.falls_below(m, target, reference, p)
    assert estimate is not None
    truth = first_below(m, target, reference, p)
    assert estimate <= truth
    # exact without f, where the crossing lies before the schedule's horizon (which counts
    # from the anchor; first_below's, from the reference)
    horizon = m.anchor_at + timedelta(days=decay.SCHEDULE_HORIZON_DAYS)
    if m.reinforcement == 0 and reference < truth and estimate < horizon:
        assert abs(estimate - truth) <= timedelta(seconds=1)


@hsettings(max_examples=200)
@given(STATES, CURVES, st.floats(0, 40), st.floats(min_value=0.001, max_value=0.05))
def test_until_a_row_is_due_its_stored_value_holds(
    days: Days, f: dict[str, Any], p: DecayParams, reference_days: float, tolerance: float
) -> None:
    """Stored exactly at `reference`, the value stays within the tolerance and above the
    threshold until value_due (checked at points before it), to the schedule's resolution:
    a row just written is not due again within reference_decay.MIN_STEP (one second), so a value
    stored exactly at the threshold may cross it inside that second."""
    m = build(days, f)
    reference = max(days(reference_days), m.anchor_at)
    stored = decay.salience(m, reference, p)
    due = reference_decay.value_due(m, stored, p.prune_threshold, reference, tolerance, p)
    if stored < p.prune_threshold:
        assert due == reference
        return
    assert due is not None and due > reference
    span = (due - reference).total_seconds()
    for share in (0.0, 0.25, 0.5, 0.9, 0.999):
        at = reference + timedelta(seconds=span * share)
        if at > due - reference_decay.MIN_STEP and due == reference + reference_decay.MIN_STEP:
            continue
        value = decay.salience(m, at, p)
        assert abs(value - stored) <= tolerance * value + 1e-12
        assert value >= p.prune_threshold


def test_a_drifted_or_frozen_value(days: Days) -> None:
    m = MemoryState(strength=0.5, anchor_at=days(0), created_at=days(0), reinforcement=4)
    p = DecayParams()
    # stored below the true value (a plain insert whose boosts lift it): due at once
    assert reference_decay.value_due(m, 0.5, 0.05, days(0), 0.01, p) == days(0)
    frozen = DecayParams(never_decays=True)
    assert reference_decay.value_due(m, 0.5, 0.05, days(0), 0.01, frozen) is None
    assert reference_decay.value_due(m, 0.6, 0.05, days(0), 0.01, frozen) == days(0)
    assert reference_decay.prune_due(m, days(0), frozen, expires_at=days(1)) is None
    zero = MemoryState(strength=0.0, anchor_at=days(0), created_at=days(0))
    assert reference_decay.value_due(zero, 0.0, 0.0, days(0), 0.01, p) is None  # never changes


@pytest.mark.parametrize("curve", ["exponential", "power"])
def test_the_prune_moment_of_a_plain_memory_is_exact(days: Days, curve: str) -> None:
    p = DecayParams(curve=curve)  # type: ignore[arg-type]
    m = MemoryState(strength=1.0, anchor_at=days(0), created_at=days(0))
    due = reference_decay.prune_due(m, days(0), p)
    exact = decay.prunes_at(m, days(0), p)
    assert due is not None and exact is not None
    assert abs(due - exact) <= timedelta(seconds=1)
    assert reference_decay.prune_due(m, days(0), p, expires_at=days(1)) == days(1)
    lifetime = decay.plain_lifetime_days(p)
    assert lifetime is not None
    assert math.isclose((exact - days(0)).total_seconds() / 86400, lifetime, abs_tol=2 / 86400)
