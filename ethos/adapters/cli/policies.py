"""Commands on decay policies: the lifetime tables (curve), list, show, assign,
unassign and move; and writing the settings the database keeps (settings apply)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ethos.adapters.cli.output import emit
from ethos.domain.lifetimes import plot, policy_curves
from ethos.domain.spans import days_span as days
from ethos.services.engine import Engine
from ethos.settings import Settings


async def cmd_curve(args: argparse.Namespace, settings: Settings) -> int:
    policies = list(settings.policy_table.values())
    if args.plot:
        plot(policies, Path(args.plot))
    curves = policy_curves(policies)
    lines = []
    for c in curves:
        p = c["settings"]
        promotion = (
            f", promoted to {c['promote_to']} at {c['promote_after']} retrievals"
            if c["promote_to"]
            else ""
        )
        lines += [
            f"{c['name']}: {p['curve']} curve, threshold {p['prune_threshold']}{promotion}"
            + (" (never decays)" if p["never_decays"] else ""),
            f"  {'retrievals':>10} {'tau days':>10} {'half-life':>10} {'pruned after (E=0)':>19}"
            f" {'(E=1)':>8}",
        ]
        lines += [
            f"  {r['retrievals']:>10} {r['tau_days']:>10.3g} {days(r['half_life_days']):>10}"
            f" {days(r['days_until_pruned_emotion_0']):>19}"
            f" {days(r['days_until_pruned_emotion_1']):>8}"
            for r in c["curve"]
        ]
    if args.plot:
        lines.append(f"plot written to {args.plot}")
    emit(args, {"policies": curves, "plot": args.plot}, "\n".join(lines))
    return 0


async def cmd_policy_list(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        policies = await engine.policies()
    configured = settings.policy_table
    data = [{**p.as_dict(), "configured": p.name in configured} for p in policies]
    lines = [_policy_line(p) for p in data]
    emit(args, {"policies": data}, "\n".join(lines))
    return 0


async def cmd_policy_show(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        found = {p.name: p for p in await engine.policies()}
        if args.name not in found:
            settings.policy(args.name)  # one line naming the policies there are
        agents = await engine.policy_agents(args.name)
    data = {
        **found[args.name].as_dict(),
        "configured": args.name in settings.policy_table,
        "agents": agents,
    }
    text = "\n".join(
        [_policy_line(data), *(f"{k:>18}: {v}" for k, v in data.items() if k != "name")]
    )
    emit(args, data, text)
    return 0


def _policy_line(p: dict[str, Any]) -> str:
    life = "never pruned" if p["lifetime_days"] is None else f"lives {days(p['lifetime_days'])}"
    promotion = f", to {p['promote_to']} at {p['promote_after']}" if p["promote_to"] else ""
    gone = "" if p["configured"] else " (no longer configured)"
    if p["never_decays"]:
        return f"{p['name']:<12} never decays{promotion}{gone}"
    return (
        f"{p['name']:<12} {p['curve']:<11} tau {p['base_tau_days']:.4g} d, threshold"
        f" {p['prune_threshold']}, {life}{promotion}{gone}"
    )


async def cmd_policy_assign(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        await engine.assign_policy(args.agent, args.policy)
    emit(
        args,
        {"agent": args.agent, "policy": args.policy},
        f"new memories of {args.agent} get {args.policy}",
    )
    return 0


async def cmd_policy_unassign(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        old = await engine.unassign_policy(args.agent)
    text = (
        f"{args.agent} had no policy of its own"
        if old is None
        else f"{args.agent} no longer has {old}: new memories get the default"
    )
    emit(args, {"agent": args.agent, "policy": old}, text)
    return 0


async def cmd_move(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings) as engine:
        moved = await engine.move(args.table, args.id, args.policy, agent=args.agent,
                                  now=args.now)  # fmt: skip
    text = (
        f"moved {moved.agent}'s {moved.id} from {moved.old_policy} to {moved.policy}"
        f" (salience {moved.salience:.4f} at {moved.now.isoformat()})"
    )
    emit(args, moved.as_dict(), text)
    return 0


async def cmd_settings_apply(args: argparse.Namespace, settings: Settings) -> int:
    async with Engine(settings, check_settings=False) as engine:
        differences = await engine.apply_settings(dry_run=args.dry_run)
    lines = [f"{d.key}: {d.database} -> {d.settings}" for d in differences]
    if not differences:
        lines = ["the database holds these settings already"]
    elif args.dry_run:
        lines.append("(dry run: nothing written)")
    data = {"applied": not args.dry_run, "differences": [asdict(d) for d in differences]}
    emit(args, data, "\n".join(lines))
    return 0
