"""The decay math on its own: the runbook's numbers, half-lives, and properties."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethos.domain import decay
from ethos.domain.decay import DecayParams, MemoryState
from tests import reference_decay

if TYPE_CHECKING:
    from tests.conftest import Days

P = DecayParams()


@pytest.fixture(scope="module")
def state(t0: datetime) -> Callable[..., MemoryState]:
    """state(**fields): a memory of strength 1 created and anchored at t0."""

    def build(**kw: object) -> MemoryState:
        values: dict[str, object] = {"strength": 1.0, "anchor_at": t0, "created_at": t0}
        values.update(kw)
        return MemoryState(**values)  # type: ignore[arg-type]

    return build


@pytest.mark.parametrize(("n", "tau"), [(0, 7.0), (1, 10.5), (3, 23.625), (5, 53.156), (10, 403.6)])
def test_runbook_tau_table(n: int, tau: float) -> None:
    # The runbook rounds: 23.6, 53.2, 402 (7 × 1.5^10 = 403.6).
    assert decay.tau_days(n, P) == pytest.approx(tau, rel=2e-3)


def test_tau_is_capped_and_never_overflows() -> None:
    assert decay.tau_days(40, P) == pytest.approx(P.max_tau_days)
    assert decay.tau_days(10**9, P) == pytest.approx(P.max_tau_days)


def test_runbook_examples(t0: datetime, days: Days, state: Callable[..., MemoryState]) -> None:
    assert decay.salience(state(), t0, P) == 1.0
    assert decay.salience(state(), days(7), P) == pytest.approx(math.exp(-1))
    emotional = state(emotion=1.0)
    assert decay.salience(emotional, days(7), P) == pytest.approx(math.exp(-1) * 1.2)
    assert decay.salience(emotional, days(7), P) == pytest.approx(0.4415, abs=1e-4)
    month = state(reinforcement=5, anchor_at=days(0))
    assert decay.salience(month, days(30), P) > 0.5


def test_half_lives(days: Days, state: Callable[..., MemoryState]) -> None:
    assert decay.half_life_days(0, P) == pytest.approx(7 * math.log(2))
    one_half_life = days(decay.half_life_days(0, P))
    assert decay.strength_at(state(), one_half_life, P) == pytest.approx(0.5)
    assert decay.half_life_days(3, P) == pytest.approx(1.5**3 * decay.half_life_days(0, P))


def test_prune_boundary_at_seven_ln_twenty_days(
    t0: datetime, days: Days, state: Callable[..., MemoryState]
) -> None:
    boundary = 7 * math.log(20)  # ≈ 20.97 days
    assert not decay.is_pruned(decay.salience(state(), days(20.9), P), P)
    assert decay.is_pruned(decay.salience(state(), days(21.0), P), P)
    at = decay.prunes_at(state(), t0, P)
    assert at is not None
    assert (at - t0).total_seconds() == pytest.approx(boundary * 86400, abs=1)


def test_prunes_at_is_the_first_second_below_threshold(
    t0: datetime, days: Days, state: Callable[..., MemoryState]
) -> None:
    m = state(reinforcement=2, emotion=0.5, created_at=days(-10))
    at = decay.prunes_at(m, t0, P)
    assert at is not None
    assert decay.is_pruned(decay.salience(m, at, P), P)
    assert not decay.is_pruned(decay.salience(m, at - timedelta(seconds=1), P), P)


def test_pinned_never_decays_nor_prunes(
    t0: datetime, days: Days, state: Callable[..., MemoryState]
) -> None:
    pinned = state(strength=0.3, pinned=True)
    assert decay.salience(pinned, days(10_000), P) == 0.3
    assert decay.prunes_at(pinned, t0, P) is None


def test_frequency_boost_uses_days_alive_with_a_floor_of_one(
    t0: datetime, days: Days, state: Callable[..., MemoryState]
) -> None:
    m = state(reinforcement=3, created_at=days(-0.5))
    assert decay.frequency(m, t0) == 1.0  # 3 retrievals in under a day: capped
    assert decay.frequency(state(reinforcement=3, created_at=days(-6)), t0) == 0.5


def test_very_old_rows_stop_at_the_exponent_floor(
    days: Days, state: Callable[..., MemoryState]
) -> None:
    # ln(1e-300) − 100,000 / 7 is far below −700: the value is e^−700, not 0 (and the
    # SQL twin does not raise; see the sweep's test of a decades-old row).
    value = decay.strength_at(state(strength=1e-300), days(100_000), P)
    assert value == math.exp(decay.MIN_EXPONENT)


def test_ltp_strength_equals_sequential_retrievals_at_one_moment(
    days: Days, state: Callable[..., MemoryState]
) -> None:
    m = state(strength=0.6)
    at = days(3)
    once = reference_decay.ltp_strength(m, at, P, 1.1, 1)
    after = state(
        strength=once, anchor_at=at, reinforcement=reference_decay.spaced_gains(m, at, P, 1)
    )
    again = reference_decay.ltp_strength(after, at, P, 1.1, 1)
    assert reference_decay.ltp_strength(m, at, P, 1.1, 2) == pytest.approx(again)
    gained = reference_decay.spaced_gains(after, at, P, 1)
    assert after.reinforcement + gained == pytest.approx(reference_decay.spaced_gains(m, at, P, 2))


moments = st.floats(min_value=0, max_value=400, allow_nan=False)
# A memory's fields, with its creation as days before t0.
fields = st.fixed_dictionaries(
    {
        "strength": st.floats(min_value=0, max_value=1),
        "reinforcement": st.one_of(st.just(0.0), st.floats(min_value=0, max_value=60)),
        "emotion": st.floats(min_value=0, max_value=1),
        "created_days": st.floats(min_value=-100, max_value=0),
    }
)


def build(state: Callable[..., MemoryState], days: Days, f: dict[str, Any]) -> MemoryState:
    created = days(f["created_days"])
    return state(
        strength=f["strength"],
        reinforcement=f["reinforcement"],
        emotion=f["emotion"],
        created_at=created,
        anchor_at=created,
    )


@given(fields, moments, moments)
def test_salience_never_increases_with_time_alone(
    state: Callable[..., MemoryState], days: Days, f: dict[str, Any], a: float, b: float
) -> None:
    m = build(state, days, f)
    early, late = sorted((a, b))
    assert decay.salience(m, days(late), P) <= decay.salience(m, days(early), P) + 1e-15


@given(fields, moments)
def test_salience_stays_in_unit_interval(
    state: Callable[..., MemoryState], days: Days, f: dict[str, Any], t: float
) -> None:
    assert 0.0 <= decay.salience(build(state, days, f), days(t), P) <= 1.0


@given(fields, moments, st.floats(min_value=0.1, max_value=3))
def test_the_power_curve_is_fsrs_retrievability(
    state: Callable[..., MemoryState], days: Days, f: dict[str, Any], t: float, d: float
) -> None:
    """S × (1 + F·t/τ)^(−d), F = 0.9^(−1/d) − 1, written out here independently."""
    p = DecayParams(curve="power", power_exponent=d, base_tau_days=3.0)
    m = build(state, days, f)
    elapsed = max(t - f["created_days"], 0.0)
    tau = 3.0 * 1.5 ** min(m.reinforcement, math.log(3650 / 3) / math.log(1.5))
    expected = m.strength * (1 + (0.9 ** (-1 / d) - 1) * elapsed / tau) ** (-d)
    assert decay.strength_at(m, days(t), p) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_the_power_curve_keeps_ninety_percent_at_tau(
    state: Callable[..., MemoryState], days: Days
) -> None:
    for d in (0.2, 0.5, 1.0, 2.5):
        p = DecayParams(curve="power", power_exponent=d, base_tau_days=4.0)
        assert decay.strength_at(state(), days(4), p) == pytest.approx(0.9, rel=1e-12)


@pytest.mark.parametrize("curve", ["exponential", "power"])
@pytest.mark.parametrize("threshold", [0.05, 0.2])
@pytest.mark.parametrize("lifetime_days", [1 / 3, 90.0])
def test_a_lifetime_is_when_a_plain_memory_is_pruned(
    state: Callable[..., MemoryState], t0: datetime, curve: str, threshold: float,
    lifetime_days: float,
) -> None:  # fmt: skip
    p = DecayParams(curve=curve, prune_threshold=threshold)  # type: ignore[arg-type]
    p = DecayParams(curve=curve, prune_threshold=threshold,  # type: ignore[arg-type]
                    base_tau_days=decay.tau_for_lifetime(lifetime_days, p))  # fmt: skip
    at = decay.prunes_at(state(), t0, p)
    assert at is not None
    assert (at - t0).total_seconds() == pytest.approx(lifetime_days * 86400, abs=1)
    assert decay.plain_lifetime_days(p) == pytest.approx(lifetime_days, rel=1e-12)


def test_never_decaying_policies_keep_their_value(
    state: Callable[..., MemoryState], days: Days
) -> None:
    p = DecayParams(never_decays=True)
    m = state(strength=0.3, reinforcement=4)
    assert decay.salience(m, days(10_000), p) == 0.3
    assert decay.prunes_at(m, days(0), p) is None and decay.plain_lifetime_days(p) is None


# --- the spacing effect ---------------------------------------------------------------


def test_a_retrievals_gain_grows_with_what_the_memory_lost_since_its_last(
    days: Days, state: Callable[..., MemoryState]
) -> None:
    """0.1 right after the last, 1 at the point of forgetting; the first counts fully
    and a memory that does not decay gains nothing."""
    retrieved = state(reinforcement=1.0)  # τ 10.5 days
    assert decay.spaced_gain(state(), days(0), P) == 1.0  # the first
    assert decay.spaced_gain(retrieved, days(0), P) == pytest.approx(decay.MIN_GAIN)
    gains = [decay.spaced_gain(retrieved, days(d), P) for d in (0.01, 1, 7, 14, 28)]
    assert gains == sorted(gains) and decay.MIN_GAIN < gains[0] < gains[1] < gains[-1]
    forgotten = decay.days_to_fall(P.prune_threshold, decay.tau_days(1.0, P), P)
    assert decay.spaced_gain(retrieved, days(forgotten), P) == pytest.approx(1.0)
    assert decay.spaced_gain(state(reinforcement=1.0, pinned=True), days(30), P) == 0.0
    assert reference_decay.spaced_gains(retrieved, days(0), P, 3) == pytest.approx(
        3 * decay.MIN_GAIN
    )


def reinforced(m: MemoryState, moments: list[datetime], p: DecayParams) -> MemoryState:
    """m after one retrieval at each moment, applied one after another."""
    for at in moments:
        n = m.reinforcement + reference_decay.spaced_gains(m, at, p, 1)
        strength = reference_decay.ltp_strength(m, at, p, 1.1, 1)
        m = MemoryState(strength=strength, anchor_at=at, created_at=m.created_at, reinforcement=n)
    return m


# Policies as ethos.toml makes them, by how long a plain memory lives: standard's 21 days
# on either curve, and working's 8 hours.
LIVES_21_DAYS_POWER = DecayParams(
    curve="power", base_tau_days=decay.tau_for_lifetime(21, DecayParams(curve="power"))
)


@pytest.mark.parametrize("p", [P, LIVES_21_DAYS_POWER, DecayParams(base_tau_days=1 / 9)])
def test_ten_retrievals_within_an_hour_raise_tau_by_a_quarter_of_ten_a_week_apart(
    days: Days, state: Callable[..., MemoryState], p: DecayParams
) -> None:
    burst = reinforced(state(), [days(1) + timedelta(minutes=6 * i) for i in range(10)], p)
    spaced = reinforced(state(), [days(7 * (i + 1)) for i in range(10)], p)
    base = decay.tau_days(0, p)
    burst_rise = decay.tau_days(burst.reinforcement, p) - base
    spaced_rise = decay.tau_days(spaced.reinforcement, p) - base
    assert 0 < burst_rise <= spaced_rise / 4
