"""Why a memory has the salience it has, and when it will be forgotten. Pure: it reads a
row (any mapping of its columns) and computes with ethos.domain.decay."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from ethos.domain import decay
from ethos.domain.decay import MemoryState
from ethos.domain.policies import Policy
from ethos.domain.spans import days_span, relative
from ethos.domain.tables import TableSpec, table_spec


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


@dataclass(frozen=True)
class Account:
    """Why a memory has its salience at `now`: every factor, and when it will be pruned
    if never retrieved again (None: never). The confidence fields are a fact's, and
    expires_at that of a table with an expiry (as_dict leaves them out elsewhere);
    importance_from says which words set an automatic importance."""

    table: str
    id: uuid.UUID
    agent_id: str
    now: datetime
    salience: float
    stored_salience: float
    strength: float
    anchor_at: datetime
    retrieval_count: int
    # what they added to τ's n, each by its spacing (decay.spaced_gain), and what one
    # more now would add
    reinforcement: float
    retrieval_now_adds: float
    t_days: float
    days_alive: float
    tau_days: float
    frequency: float
    decay_factor: float
    frequency_boost: float
    emotional_boost: float
    prune_threshold: float
    policy: str
    curve: str
    never_decays: bool
    importance: float | None
    surfaced_count: int
    useful_count: int
    wrong_count: int
    pinned: bool
    pruned: bool
    pruned_at: datetime | None
    prune_reason: str | None
    prunes_at: datetime | None
    confidence: float | None = None
    stored_confidence: float | None = None
    expires_at: datetime | None = None
    importance_from: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The account as every front end shows it: moments in ISO 8601, the id as text."""
        spec = table_spec(self.table)
        left_out = {
            "confidence": not spec.has_confidence,
            "stored_confidence": not spec.has_confidence,
            "expires_at": not spec.has_expiry,
            "importance_from": self.importance_from is None,
        }
        return {
            field.name: json_value(getattr(self, field.name))
            for field in fields(self)
            if not left_out.get(field.name, False)
        }

    def readable(self) -> dict[str, str]:
        """Its moments as distances from `now` ("3 h ago", "in 21 days") and its spans in
        days as a person reads them: what the CLI prints beside the values, and the
        dashboard shows."""
        moments = {"anchor_at": self.anchor_at, "pruned_at": self.pruned_at,
                   "prunes_at": self.prunes_at, "expires_at": self.expires_at}  # fmt: skip
        spans = {"t_days": self.t_days, "days_alive": self.days_alive, "tau_days": self.tau_days}
        return {
            **{name: relative(at, self.now) for name, at in moments.items()},
            **{name: days_span(days) for name, days in spans.items()},
        }


def json_value(value: Any) -> Any:
    """A moment as ISO 8601 and an id as its text; any other value as it is."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


# What a row needs for prunes_at: its curve (memory_state's), and whether it is pruned.
def lifetime_columns(spec: TableSpec) -> tuple[str, ...]:
    """The columns prunes_at reads of a row of `spec`'s table."""
    extra = [spec.emotion_column] if spec.emotion_column else []
    extra += ["confidence_strength"] if spec.has_confidence else []
    extra += ["expires_at"] if spec.has_expiry else []
    return ("id", "agent_id", "policy", "strength", "anchor_at", "created_at",
            "reinforcement", "pinned", "pruned", *extra)  # fmt: skip


def prunes_at(
    spec: TableSpec, row: Mapping[str, Any], now: datetime, policy: Policy
) -> datetime | None:
    """When the row will be pruned if never retrieved again, seen at `now` (None: never;
    a pruned row: None). Facts are forgotten on their confidence; vectors also when
    they expire."""
    if row["pruned"]:
        return None
    state = memory_state(spec, row, confidence=spec.has_confidence)
    at = decay.prunes_at(state, now, policy.params)
    expires_at = row.get("expires_at") if spec.has_expiry else None
    if expires_at is not None and not state.pinned:
        at = min(at, expires_at) if at else expires_at
    return at


def explain(spec: TableSpec, row: Mapping[str, Any], now: datetime, policy: Policy) -> Account:
    """Every factor of a row's salience at `now` under its policy, and when it will be
    pruned if never retrieved again."""
    p = policy.params
    state = memory_state(spec, row)
    frequency_boost, emotional_boost = decay.boosts(state, now, p)
    deciding = memory_state(spec, row, confidence=True) if spec.has_confidence else state
    expires_at = row.get("expires_at") if spec.has_expiry else None
    return Account(
        table=spec.name,
        id=row["id"],
        agent_id=row["agent_id"],
        now=now,
        salience=decay.salience(state, now, p),
        stored_salience=row["salience"],
        strength=state.strength,
        anchor_at=state.anchor_at,
        retrieval_count=row["retrieval_count"],
        reinforcement=state.reinforcement,
        retrieval_now_adds=decay.spaced_gain(state, now, p),
        t_days=max(decay.days_between(state.anchor_at, now), 0.0),
        days_alive=max(decay.days_between(state.created_at, now), 1.0),
        tau_days=decay.tau_days(state.reinforcement, p),
        frequency=decay.frequency(state, now),
        decay_factor=decay.decay_factor(state, now, p),
        frequency_boost=frequency_boost,
        emotional_boost=emotional_boost,
        prune_threshold=p.prune_threshold,
        policy=policy.name,
        curve=p.curve,
        never_decays=p.never_decays,
        importance=row["importance"],
        surfaced_count=row["surfaced_count"],
        useful_count=row["useful_count"],
        wrong_count=row["wrong_count"],
        pinned=state.pinned,
        pruned=row["pruned"],
        pruned_at=row["pruned_at"],
        prune_reason=row["prune_reason"],
        prunes_at=prunes_at(spec, row, now, policy),
        confidence=decay.salience(deciding, now, p) if spec.has_confidence else None,
        stored_confidence=row["confidence"] if spec.has_confidence else None,
        expires_at=expires_at,
    )


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
