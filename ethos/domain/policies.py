"""Decay policies, pure: a named curve (ethos.domain.decay's parameters) with an optional
promotion rule. Every memory has one; the settings define them (ethos.settings), the
database keeps a copy the sweep joins (decay_policies), and this module says what a
policy means: its lifetime, its promotions, its parameters in SQL's terms."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ethos.domain.decay import DecayParams, plain_lifetime_days

STANDARD = "standard"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w|y)\s*$")
DURATION_DAYS = {"s": 1 / 86400, "m": 1 / 1440, "h": 1 / 24, "d": 1.0, "w": 7.0, "y": 365.0}


def parse_duration(text: str) -> float:
    """'8h', '90d', '2w', '30m', '45s', '1y' -> days."""
    match = DURATION.match(text)
    if match is None:
        raise ValueError(f"bad duration {text!r}: a number and a unit (s, m, h, d, w, y)")
    return float(match.group(1)) * DURATION_DAYS[match.group(2)]


@dataclass(frozen=True)
class Policy:
    name: str
    params: DecayParams
    promote_after: int | None = None  # the retrieval count that moves a memory on ...
    promote_to: str | None = None  # ... to this policy

    @property
    def lifetime_days(self) -> float | None:
        """How long a plain memory (strength 1, never retrieved, emotion 0) lives."""
        return plain_lifetime_days(self.params)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **asdict(self.params),
            "promote_after": self.promote_after,
            "promote_to": self.promote_to,
            "lifetime_days": self.lifetime_days,
        }


def promotion_chain(name: str, policies: Mapping[str, Policy]) -> list[tuple[int, str]]:
    """Where a memory of policy `name` ends up by retrieval count: [(count, policy)],
    counts ascending. A memory moves along the chain while its count reaches each rule
    (so one coalesced write of several retrievals can move it more than one step)."""
    chain: list[tuple[int, str]] = []
    reached = 0
    policy = policies[name]
    # check_promotions has ruled cycles out; the bound is a guard all the same.
    while policy.promote_after is not None and policy.promote_to is not None:
        if len(chain) == len(policies):
            raise ValueError(f"policies.{name}.promote_to: promotion cycle")
        reached = max(reached, policy.promote_after)
        chain.append((reached, policy.promote_to))
        policy = policies[policy.promote_to]
    return chain


def check_promotions(policies: Mapping[str, Policy]) -> None:
    """Every promote_to names a policy; no chain comes back to where it started."""
    for policy in policies.values():
        if policy.promote_to is not None and policy.promote_to not in policies:
            raise ValueError(
                f"policies.{policy.name}.promote_to: unknown policy {policy.promote_to!r}"
                f" (policies: {', '.join(sorted(policies))})"
            )
    for name in policies:
        path = [name]
        policy = policies[name]
        while policy.promote_to is not None:
            if policy.promote_to in path:
                cycle = " -> ".join([*path[path.index(policy.promote_to) :], policy.promote_to])
                raise ValueError(f"policies.{name}.promote_to: promotion cycle {cycle}")
            path.append(policy.promote_to)
            policy = policies[policy.promote_to]


def sql_row(policy: Policy, policies: Mapping[str, Policy]) -> dict[str, Any]:
    """The policy as a row of decay_policies (what the sweep and plain SQL join)."""
    chain = promotion_chain(policy.name, policies)
    return {
        "name": policy.name,
        **asdict(policy.params),
        "promote_after": policy.promote_after,
        "promote_to": policy.promote_to,
        "promotion_counts": [count for count, _ in chain],
        "promotion_targets": [target for _, target in chain],
        "lifetime_days": policy.lifetime_days,
    }
