"""How a caller follows and stops a long operation (recover, merge, purge, erase, embed):
what it has to do, what it has committed so far, and a stop that ends it at the next
batch boundary, so that whenever it ends, the count is what was committed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ethos.domain.errors import TransientDatabaseError


@dataclass
class Watch:
    """Filled in by the operation: `total` (counted before it starts; None where that
    would cost a second pass), `done` as each batch commits, `interrupted` when it
    ended with work left (a rerun finishes it), `audit` the row that records it,
    `through_line` (an import) the last line of its input written.
    `shown` is told of each change (the CLI's progress line on a terminal)."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    total: int | None = None
    done: int = 0
    interrupted: bool = False
    audit: str | None = None
    shown: Callable[[Watch], None] | None = None
    through_line: int = 0  # an import's last line written: what is left comes after it

    def start(self, total: int | None) -> None:
        self.total = total
        self._show()

    def add(self, committed: int) -> None:
        self.done += committed
        self._show()

    def stopping(self) -> bool:
        """Whether to stop before the next batch (then the work left is interrupted)."""
        if self.stop.is_set() and not self.interrupted:
            self.interrupted = True
            self._show()
        return self.interrupted

    def _show(self) -> None:
        if self.shown is not None:
            self.shown(self)


def ended_by(exc: BaseException) -> str:
    """An audit row's status for a run an exception ended: cancelled or cut off from the
    database, it was interrupted (a rerun finishes it); anything else, it failed."""
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | TransientDatabaseError):
        return "interrupted"
    return "failed"
