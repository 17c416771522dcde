"""What the commands ask of the engine before they act on what a user typed: where the
ids are (their table and agent), and whether a named agent holds any memory at all."""

from __future__ import annotations

import argparse
import sys
import uuid

from ethos.services.engine import Engine
from ethos.services.engine.core import Whose


async def located(engine: Engine, args: argparse.Namespace) -> dict[Whose, list[uuid.UUID]]:
    """The memories of `args.ids` by table and agent (`args.table`, where given, checked)."""
    return await engine.locate(args.ids, agent=args.agent, table=args.table)


async def warn_if_absent(engine: Engine, agent: str | None) -> None:
    """A warning on stderr where `agent` holds no memory at all, with the agents named
    like it: a mistyped name gives no hits, an empty count or nothing done, which read
    as answers. The exit code stays 0: an agent that has stored nothing yet (a new one,
    asked before its first add) is a state a script meets, not an error."""
    if agent is None:
        return
    close = await engine.absent_agent(agent)
    if close is not None:
        like = f" (agents named like it: {', '.join(close)})" if close else ""
        print(f"ethos: warning: agent {agent!r} has no memories{like}", file=sys.stderr)
