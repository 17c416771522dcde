"""Tuning: how long a plain memory lives under each policy, by retrieval count and
emotional tone (the runbook's τ table, made live), and the curves as a picture."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ethos.domain import decay
from ethos.domain.decay import DecayParams, MemoryState
from ethos.domain.errors import InputError
from ethos.domain.policies import Policy
from ethos.domain.spans import days_span

RETRIEVALS = range(0, 11)
EMOTIONS = (0.0, 1.0)
# Any fixed moment: the curve depends on time since creation only.
ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)


def plain_memory(n: int, emotion: float) -> MemoryState:
    """Strength 1, created now, with n full reinforcements (n retrievals, each at the
    point of forgetting), never retrieved again."""
    return MemoryState(
        strength=1.0, anchor_at=ORIGIN, created_at=ORIGIN, reinforcement=n, emotion=emotion
    )


def days_until_pruned(n: int, emotion: float, p: DecayParams) -> float | None:
    """None: never (a policy that never decays)."""
    at = decay.prunes_at(plain_memory(n, emotion), ORIGIN, p)
    return None if at is None else decay.days_between(ORIGIN, at)


def curve_table(p: DecayParams, promote_after: int | None = None) -> list[dict[str, Any]]:
    """By retrieval count; a policy that promotes stops at its promotion (from there the
    memory follows the policy it was promoted to)."""
    return [
        {
            "retrievals": n,
            "tau_days": decay.tau_days(n, p),
            "half_life_days": None if p.never_decays else decay.half_life_days(n, p),
            **{
                f"days_until_pruned_emotion_{emotion:g}": days_until_pruned(n, emotion, p)
                for emotion in EMOTIONS
            },
        }
        for n in RETRIEVALS
        if promote_after is None or n < promote_after
    ]


def policy_curves(policies: Iterable[Policy]) -> list[dict[str, Any]]:
    """Each policy with its parameters, its lifetime and its table."""
    return [
        {
            "name": policy.name,
            "settings": asdict(policy.params),
            "promote_after": policy.promote_after,
            "promote_to": policy.promote_to,
            "lifetime_days": policy.lifetime_days,
            "curve": curve_table(policy.params, policy.promote_after),
        }
        for policy in policies
    ]


def salience_series(
    n: int, p: DecayParams, days: float, points: int = 200, start: float = 1 / 1440
) -> list[tuple[float, float]]:
    """A plain memory's salience from `start` to `days`, at log-spaced moments (the
    lifetimes of policies span minutes to years)."""
    memory = plain_memory(n, 0.0)
    ratio = (days / start) ** (1 / (points - 1))
    return [
        (t, decay.salience(memory, ORIGIN + timedelta(days=t), p))
        for t in (start * ratio**i for i in range(points))
    ]


def plot(policies: Iterable[Policy], path: Path) -> None:
    """A plain memory's salience under each policy, on a logarithmic time axis (the
    lifetimes span hours to months); each policy's threshold dashed in its colour."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'ethos[plot]'") from None
    policies = list(policies)
    lifetimes = [p.lifetime_days for p in policies if p.lifetime_days is not None]
    horizon = max(lifetimes, default=30.0) * 1.5
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for policy in policies:
        xs, ys = zip(*salience_series(0, policy.params, horizon), strict=True)
        lifetime = policy.lifetime_days
        label = (
            f"{policy.name} (never decays)"
            if lifetime is None
            else f"{policy.name} ({policy.params.curve}, pruned after {days_span(lifetime)})"
        )
        (line,) = axes.plot(xs, ys, label=label)
        if not policy.params.never_decays:
            axes.axhline(
                policy.params.prune_threshold, color=line.get_color(), linestyle=":", alpha=0.6
            )
    axes.set_xscale("log")
    axes.set_xlabel("days since creation (no retrieval)")
    axes.set_ylabel("salience")
    axes.set_ylim(0, 1.05)
    axes.set_title("ethos decay policies (dotted: each one's prune threshold)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def forgotten_in(prunes_at: datetime | None, at: datetime) -> str:
    """How long from `at` until `prunes_at` (None: "never"), as a person reads it."""
    if prunes_at is None:
        return "never"
    return days_span(max(decay.days_between(at, prunes_at), 0.0))
