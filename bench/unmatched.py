"""Hits reinforced that their own words do not match (issue 63), on LoCoMo.

    python bench/unmatched.py [--data ../shared/data/locomo] [--questions 40]

Each conversation is one agent (bench/locomo.py reads it), every turn added at its time
on `permanent` (nothing forgotten, so each question sees every turn). Then the first
--questions questions of each are asked one at a time by text recall with the shipped
search settings (recall in context on) and recorded as recall records its hits
(Engine.surfaced), a day after the last session; after each, the LTP buffer is applied
and every hit's retrieval count is read. A hit whose own BM25 is 0 shares no word with its question
(it came in beside a match): it should be counted (surfaced_count), not reinforced.
Prints, per conversation and in all, such hits and how many were reinforced, and the
matched hits likewise (which should be).
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta
from pathlib import Path

import asyncpg
from locomo import Conversation, load_all

from bench import fresh_database
from ethos import logs
from ethos.services.engine import Engine, migrate
from ethos.settings import DatabaseSettings, LoggingSettings, Settings

COUNTS = """SELECT id, retrieval_count, surfaced_count FROM episodic_traces
            WHERE agent_id = $1 AND id = ANY($2::uuid[])"""


async def main(args: argparse.Namespace, conversations: list[Conversation]) -> None:
    logs.configure(LoggingSettings(level="warning"))
    url = await fresh_database(Path.cwd() / args.data_dir, "ethos_unmatched")
    settings = Settings(database=DatabaseSettings(url=url))
    await migrate(settings, url)
    totals = [0, 0, 0, 0]  # unmatched, of them reinforced; matched, of them reinforced
    print("| conversation | unmatched hits | reinforced | matched hits | reinforced |")
    print("| --- | --- | --- | --- | --- |")
    async with Engine(settings) as engine:
        conn = await asyncpg.connect(url)
        try:
            for conversation in conversations:
                agent = conversation.name
                await engine.assign_policy(agent, "permanent")
                for text, at in conversation.turns.values():
                    await engine.add("episode", agent_id=agent, content=text, created_at=at)
                asked_at = conversation.sessions[-1][0] + timedelta(days=1)
                counts = [0, 0, 0, 0]
                for question, _, _ in conversation.questions[: args.questions]:
                    # read, counted, then recorded as recall records its hits
                    hits = await engine.recall(
                        agent, question, k=args.k, now=asked_at, record=False
                    )
                    ids = [hit.id for hit in hits]
                    before = {r["id"]: r["retrieval_count"] for r in
                              await conn.fetch(COUNTS, agent, ids)}  # fmt: skip
                    await engine.surfaced(hits, agent=agent, now=asked_at)
                    await engine.ltp.drain(30)
                    after = {r["id"]: r["retrieval_count"] for r in
                             await conn.fetch(COUNTS, agent, ids)}  # fmt: skip
                    for hit in hits:
                        side = 0 if hit.text_rank == 0 else 2
                        counts[side] += 1
                        counts[side + 1] += after[hit.id] > before[hit.id]
                print(f"| {agent} | {counts[0]} | {counts[1]} | {counts[2]} | {counts[3]} |")
                totals = [a + b for a, b in zip(totals, counts, strict=True)]
        finally:
            await conn.close()
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo")
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("-k", type=int, default=10)
    arguments = parser.parse_args()
    found = load_all(arguments.data)
    asyncio.run(main(arguments, found))
