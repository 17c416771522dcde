"""Tuning: how long a plain memory lives under the active settings, by retrieval count
and emotional tone (the runbook's τ table, made live), and the curves as a picture."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ethos import decay
from ethos.decay import DecayParams, MemoryState
from ethos.errors import InputError

RETRIEVALS = range(0, 11)
EMOTIONS = (0.0, 1.0)
# Any fixed moment: the curve depends on time since creation only.
ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)


def plain_memory(n: int, emotion: float) -> MemoryState:
    """Strength 1, created now, retrieved n times at creation, never again."""
    return MemoryState(
        strength=1.0, anchor_at=ORIGIN, created_at=ORIGIN, retrieval_count=n, emotion=emotion
    )


def days_until_pruned(n: int, emotion: float, p: DecayParams) -> float:
    at = decay.prunes_at(plain_memory(n, emotion), ORIGIN, p)
    assert at is not None  # a plain memory is never pinned
    return decay.days_between(ORIGIN, at)


def curve_table(p: DecayParams) -> list[dict[str, Any]]:
    return [
        {
            "retrievals": n,
            "tau_days": decay.tau_days(n, p),
            "half_life_days": decay.half_life_days(n, p),
            **{
                f"days_until_pruned_emotion_{emotion:g}": days_until_pruned(n, emotion, p)
                for emotion in EMOTIONS
            },
        }
        for n in RETRIEVALS
    ]


def salience_series(
    n: int, p: DecayParams, days: float, points: int = 200
) -> list[tuple[float, float]]:
    memory = plain_memory(n, 0.0)
    return [
        (t, decay.salience(memory, ORIGIN + timedelta(days=t), p))
        for t in (days * i / (points - 1) for i in range(points))
    ]


def plot(p: DecayParams, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'ethos[plot]'") from None
    horizon = min(days_until_pruned(5, 0.0, p) * 1.2, p.max_tau_days * 3)
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for n in (0, 1, 3, 5, 10):
        xs, ys = zip(*salience_series(n, p, horizon), strict=True)
        axes.plot(xs, ys, label=f"{n} retrievals (τ {decay.tau_days(n, p):.1f} d)")
    axes.axhline(p.prune_threshold, color="red", linestyle="--", label="prune threshold")
    axes.set_xlabel("days since creation (no further retrieval)")
    axes.set_ylabel("salience")
    axes.set_ylim(0, 1.05)
    axes.set_title("ethos decay under the active settings")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
