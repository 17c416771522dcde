"""--now ahead of the database's clock: refused unless --allow-future says it is meant."""

from __future__ import annotations

from datetime import datetime

from ethos.domain.inputs import not_ahead
from ethos.services.engine import Engine


async def refuse_future(engine: Engine, now: datetime | None, allowed: bool, effect: str) -> None:
    """Raise before any write when `now` is past FUTURE_SKEW ahead; `effect` says what
    such a moment would do."""
    if now is None or allowed:
        return
    not_ahead("now", now, await engine.now(), effect)
