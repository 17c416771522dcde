"""The policies the settings give: the shipped ones, with what [decay] and each
[policies.NAME] table say of them, resolved into curves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ethos.domain.decay import DecayParams, tau_for_lifetime
from ethos.domain.policies import NAME, STANDARD, Policy, check_promotions, parse_duration

if TYPE_CHECKING:  # the sections call resolve_policies as they validate
    from ethos.settings import DecaySettings, PolicySettings

# The curve keys [decay] gives the `standard` policy (the first wave's settings).
DECAY_CURVE_KEYS = (
    "base_tau_days", "ltp_multiplier", "max_tau_days", "frequency_weight", "emotional_weight",
    "prune_threshold",
)  # fmt: skip

DEFAULT_POLICIES: dict[str, dict[str, Any]] = {
    STANDARD: {},
    "working": {"lifetime": "8h", "promote_after": 3, "promote_to": STANDARD},
    "long_term": {"lifetime": "365d"},
    "permanent": {"never_decays": True},
}


def resolve_policies(decay: DecaySettings, given: dict[str, PolicySettings]) -> dict[str, Policy]:
    """`standard` from [decay] and [policies.standard]; every other policy from its own
    keys, then standard's values; lifetimes turned into τ on the policy's own curve.
    `given` holds the shipped policies (Settings merges them in), `standard` among them."""
    for name in given:
        if not NAME.match(name):
            raise ValueError(f"policies.{name}: a policy name is lower case letters, digits, _")
    standard_keys = given[STANDARD]
    for key in DECAY_CURVE_KEYS:
        if key in decay.model_fields_set and key in standard_keys.model_fields_set:
            raise ValueError(f"policies.standard.{key}: given twice, as decay.{key} too: keep one")
    if "lifetime" in standard_keys.model_fields_set and "base_tau_days" in decay.model_fields_set:
        raise ValueError(
            "policies.standard.lifetime: decay.base_tau_days gives standard's τ too: keep one"
        )
    base = DecayParams(**{key: getattr(decay, key) for key in DECAY_CURVE_KEYS})
    standard = _policy(STANDARD, standard_keys, base)
    policies = {STANDARD: standard}
    for name, keys in given.items():
        if name != STANDARD:
            policies[name] = _policy(name, keys, standard.params)
    check_promotions(policies)
    return policies


def _policy(name: str, keys: PolicySettings, inherited: DecayParams) -> Policy:
    given = keys.model_dump(exclude_none=True, exclude={"lifetime", "promote_after", "promote_to"})
    params = DecayParams(**{**_params(inherited), **given})
    if keys.lifetime is not None:
        tau = tau_for_lifetime(parse_duration(keys.lifetime), params)
        params = DecayParams(**{**_params(params), "base_tau_days": tau})
    if params.base_tau_days > params.max_tau_days:
        what = "lifetime" if keys.lifetime is not None else "base_tau_days"
        # standard's τ given as decay.base_tau_days is named as it was given.
        given_as = "decay" if what not in keys.model_fields_set else f"policies.{name}"
        raise ValueError(
            f"{given_as}.{what}: τ of {params.base_tau_days:.6g} days is above"
            f" max_tau_days ({params.max_tau_days:g})"
        )
    return Policy(name, params, keys.promote_after, keys.promote_to)


def _params(p: DecayParams) -> dict[str, Any]:
    return {field: getattr(p, field) for field in DecayParams.__dataclass_fields__}
