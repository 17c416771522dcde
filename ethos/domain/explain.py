"""Why a memory has the salience it has, and when it will be forgotten. Pure: it reads a
row (any mapping of its columns) and computes with ethos.domain.decay."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ethos.domain import decay
from ethos.domain.decay import MemoryState
from ethos.domain.policies import Policy
from ethos.domain.tables import TableSpec


def memory_state(
    spec: TableSpec, row: Mapping[str, Any], *, confidence: bool = False
) -> MemoryState:
    """The curve of a row: of its salience, or (facts) of its confidence."""
    return MemoryState(
        strength=row["confidence_strength"] if confidence else row["strength"],
        anchor_at=row["anchor_at"],
        created_at=row["created_at"],
        reinforcement=row["reinforcement"],
        emotion=row[spec.emotion_column] if spec.emotion_column and not confidence else 0.0,
        pinned=row["pinned"],
    )


def explain(
    spec: TableSpec, row: Mapping[str, Any], now: datetime, policy: Policy
) -> dict[str, Any]:
    """Every factor of a row's salience at `now` under its policy, and when it will be
    pruned if never retrieved again (None: never)."""
    p = policy.params
    state = memory_state(spec, row)
    frequency_boost, emotional_boost = decay.boosts(state, now, p)
    t_days = max(decay.days_between(state.anchor_at, now), 0.0)
    tau = decay.tau_days(state.reinforcement, p)
    # Facts are forgotten on their confidence; vectors also when they expire.
    deciding = memory_state(spec, row, confidence=True) if spec.has_confidence else state
    prunes_at = None if row["pruned"] else decay.prunes_at(deciding, now, p)
    expires_at = row.get("expires_at") if spec.has_expiry else None
    if expires_at is not None and not state.pinned and not row["pruned"]:
        prunes_at = min(prunes_at, expires_at) if prunes_at else expires_at
    result: dict[str, Any] = {
        "table": spec.name,
        "id": str(row["id"]),
        "agent_id": row["agent_id"],
        "now": now.isoformat(),
        "salience": decay.salience(state, now, p),
        "stored_salience": row["salience"],
        "strength": state.strength,
        "anchor_at": state.anchor_at.isoformat(),
        "retrieval_count": row["retrieval_count"],
        # what they added to τ's n, each by its spacing (decay.spaced_gain), and what one
        # more now would add
        "reinforcement": state.reinforcement,
        "retrieval_now_adds": decay.spaced_gain(state, now, p),
        "t_days": t_days,
        "days_alive": max(decay.days_between(state.created_at, now), 1.0),
        "tau_days": tau,
        "frequency": decay.frequency(state, now),
        "decay_factor": decay.decay_factor(state, now, p),
        "frequency_boost": frequency_boost,
        "emotional_boost": emotional_boost,
        "prune_threshold": p.prune_threshold,
        "policy": policy.name,
        "curve": p.curve,
        "never_decays": p.never_decays,
        "importance": row["importance"],
        "surfaced_count": row["surfaced_count"],
        "useful_count": row["useful_count"],
        "wrong_count": row["wrong_count"],
        "pinned": state.pinned,
        "pruned": row["pruned"],
        "pruned_at": row["pruned_at"].isoformat() if row["pruned_at"] else None,
        "prune_reason": row["prune_reason"],
        "prunes_at": prunes_at.isoformat() if prunes_at else None,
    }
    if spec.has_confidence:
        result["confidence"] = decay.salience(deciding, now, p)
        result["stored_confidence"] = row["confidence"]
    if spec.has_expiry:
        result["expires_at"] = expires_at.isoformat() if expires_at else None
    return result


def forecast(
    spec: TableSpec,
    row: Mapping[str, Any],
    now: datetime,
    policy: Policy,
    prunes_at: datetime | None,
    points: int = 24,
) -> list[tuple[float, float]]:
    """The salience a row will have if never retrieved again, from `now` until it is
    pruned (`prunes_at`, as explain computes it; three τ when it never is): (days from
    now, salience) at even steps."""
    p = policy.params
    state = memory_state(spec, row)
    if prunes_at is not None:
        span = decay.days_between(now, prunes_at)
    else:
        span = 3 * decay.tau_days(state.reinforcement, p)
    step = max(span, 1 / 24) / (points - 1)
    return [
        (i * step, decay.salience(state, now + timedelta(days=i * step), p)) for i in range(points)
    ]
