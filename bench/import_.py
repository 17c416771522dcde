"""`ethos import` against COPY: the same memories into the same table on the same server,
measured in one run, automatic importance on (the shipped defaults) for both.

    python bench/import_.py [--data ../shared/data/locomo] [--rows 100000]

The memories are LoCoMo's turns (bench/locomo.py reads them), repeated until there are
`--rows`: each repetition of a conversation is an agent of its own, each turn an
episode at its time. COPY writes them as asyncpg's copy_records_to_table sends them
(binary, one statement); `ethos import` reads them from a JSON lines file, in a
subprocess of the real command, both of its passes (every line checked, then written a
batch a transaction) and its start included. Before each, the memory tables are emptied
and the statistics counted anew, so both load a new agent's first words. Each runs
`--rounds` times, alternating; the best of each is compared: the goal is an import at
most 2x COPY's time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import asyncpg
from locomo import load_all

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import fresh_database
from ethos import logs
from ethos.services.engine import migrate
from ethos.settings import DatabaseSettings, LoggingSettings, Settings

ETHOS = str(Path(sys.executable).parent / "ethos")
EMPTY = (
    "TRUNCATE episodic_traces, semantic_facts, memory_vectors, episodic_traces_due,"
    " semantic_facts_due, memory_vectors_due;"  # TRUNCATE runs no trigger: counted anew
    " SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()"
)


def memories(data: Path, rows: int) -> list[tuple[str, str, datetime]]:
    """`rows` (agent, content, created_at): the conversations' turns, repeated."""
    turns = [(c.name, text, at) for c in load_all(data) for text, at in c.turns.values()]
    return [
        (f"{name}-{i // len(turns)}", text, at)
        for i, (name, text, at) in ((i, turns[i % len(turns)]) for i in range(rows))
    ]


async def empty(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(EMPTY)
        await conn.execute("VACUUM ANALYZE episodic_traces, lexeme_stats, agent_text_stats")
    finally:
        await conn.close()


async def copy(url: str, rows: list[tuple[str, str, datetime]]) -> float:
    """COPY of the memories, the columns an import writes (pinned and metadata too)."""
    await empty(url)
    conn = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        await conn.copy_records_to_table(
            "episodic_traces",
            records=[(agent, text, at, False, "{}") for agent, text, at in rows],
            columns=["agent_id", "content", "created_at", "pinned", "metadata"],
        )
        return time.perf_counter() - started
    finally:
        await conn.close()


async def imported(url: str, path: Path, rows: int, batch: int) -> float:
    await empty(url)
    env = {**os.environ, "ETHOS_DATABASE__URL": url, "ETHOS_LOGGING__LEVEL": "warning"}
    started = time.perf_counter()
    result = await asyncio.to_thread(
        subprocess.run, [ETHOS, "import", str(path), "--batch-size", str(batch), "--json"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"ethos import failed: {result.stderr.strip()}")
    written = json.loads(result.stdout)["written"]["episodic_traces"]
    assert written == rows, (written, rows)
    return elapsed


async def same_rows(url: str) -> int:
    """Rows whose policy the write path picked: automatic importance measured them."""
    conn = await asyncpg.connect(url)
    try:
        measured: int = await conn.fetchval(
            "SELECT count(*) FROM episodic_traces WHERE auto_importance IS NOT NULL"
        )
        return measured
    finally:
        await conn.close()


def line(label: str, rows: int, seconds: float) -> None:
    print(f"  {label:<26} {rows:>9,} rows {seconds:8.2f} s {rows / seconds:>10,.0f} rows/s")


async def main(args: argparse.Namespace) -> None:
    logs.configure(LoggingSettings(level="warning"))
    rows = memories(Path(args.data), args.rows)
    url = await fresh_database(Path.cwd() / args.data_dir, "ethos_import_bench")
    await migrate(Settings(database=DatabaseSettings(url=url)), url)
    timings: dict[str, list[float]] = {"COPY": [], "ethos import": []}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for agent, text, at in rows:
                line_ = {"table": "episode", "agent": agent, "content": text,
                         "created_at": at.isoformat()}  # fmt: skip
                out.write(json.dumps(line_, ensure_ascii=False) + "\n")
        size = path.stat().st_size
        print(f"{len(rows):,} memories: LoCoMo's turns repeated ({size:,} bytes of JSON"
              f" lines), automatic importance on, batches of {args.batch_size:,}")  # fmt: skip
        for _ in range(args.rounds):
            timings["COPY"].append(await copy(url, rows))
            print(f"  COPY: {timings['COPY'][-1]:.2f} s (measured {await same_rows(url):,})")
            timings["ethos import"].append(await imported(url, path, len(rows), args.batch_size))
            print(f"  import: {timings['ethos import'][-1]:.2f} s"
                  f" (measured {await same_rows(url):,})")  # fmt: skip
    best = {label: min(seconds) for label, seconds in timings.items()}
    print(f"best of {args.rounds}:")
    for label, seconds in best.items():
        line(label, len(rows), seconds)
    ratio = best["ethos import"] / best["COPY"]
    print(f"ethos import / COPY: {ratio:.2f}x the time (goal <= 2x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/locomo")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    asyncio.run(main(parser.parse_args()))
