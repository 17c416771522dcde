"""--now ahead of the database's clock: refused unless --allow-future says it is meant."""

from __future__ import annotations

from datetime import datetime, timedelta

from ethos.domain.errors import InputError
from ethos.services.engine import Engine

# How far ahead of the database's clock a --now may be without --allow-future: room for
# the caller's clock to run a little ahead of the server's.
FUTURE_SKEW = timedelta(minutes=1)


async def refuse_future(engine: Engine, now: datetime | None, allowed: bool, effect: str) -> None:
    """Raise before any write when `now` is past FUTURE_SKEW ahead; `effect` says what
    such a moment would do."""
    if now is None or allowed:
        return
    ahead = now - await engine.now()
    if ahead > FUTURE_SKEW:
        raise InputError(
            f"--now is {ahead} ahead of the database's clock: {effect}"
            " (--allow-future if that is meant)"
        )
