"""Engine.import_lines, the Python door of `ethos import` (issue 66): every line checked
before any is written, then a transaction a batch; a stop lands between batches and says
which line was the last written."""

from __future__ import annotations

import json

import asyncpg
import pytest

from ethos.domain.errors import InputError
from ethos.services.engine import Engine
from ethos.services.progress import Watch


def lines(count: int) -> list[str]:
    """`count` episodes of agent a, a blank line after each: the numbers count them too."""
    return [
        text
        for i in range(count)
        for text in (json.dumps({"table": "episode", "agent": "a", "content": f"turn {i}"}), "")
    ]


async def test_a_bad_line_is_named_and_nothing_is_written(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    given = [*lines(5), json.dumps({"table": "fact", "agent": "a", "content": " "})]
    with pytest.raises(InputError, match=r"^line 11: content must not be empty$"):
        await engine.import_lines(lambda: given, batch_size=2)
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0


async def test_a_stop_lands_between_batches(engine: Engine, conn: asyncpg.Connection) -> None:
    watch = Watch()

    def shown(w: Watch) -> None:  # stopped as the second batch commits
        if w.done == 4:
            w.stop.set()

    watch.shown = shown
    imported = await engine.import_lines(lambda: lines(10), batch_size=2, watch=watch)
    assert (watch.done, watch.total, watch.interrupted) == (4, 10, True)
    # line 7 holds the fourth memory: the rest begins at line 8
    assert imported.through_line == 7 and imported.by_table["episodic_traces"] == 4
    contents = await conn.fetch("SELECT content FROM episodic_traces ORDER BY id")
    assert [row["content"] for row in contents] == [f"turn {i}" for i in range(4)]
    rest = lines(10)[imported.through_line :]
    again = await engine.import_lines(lambda: rest, batch_size=2)
    assert again.by_table["episodic_traces"] == 6
    assert await conn.fetchval("SELECT count(DISTINCT content) FROM episodic_traces") == 10


async def test_lines_that_cannot_be_read_again_are_refused(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    once = iter(lines(3))
    with pytest.raises(InputError, match="must give them anew at each call"):
        await engine.import_lines(lambda: once)
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 0
