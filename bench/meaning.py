"""Does ethos keep what the caller means? LoCoMo's conversations (bench/locomo.py) and a
new agent's first words, added as a user would, and the policy each memory lands on.

    python bench/meaning.py [--data ../shared/data/locomo] [--questions 40] [--turns]

Rows, on each conversation and overall:

- stated facts: each session's event sentences (the data set's `events_session_N`),
  added in order as facts of one agent: the share that lives at least as long as
  `standard` (its policy's lifetime at least standard's; goal >= 95%);
- first facts: six short personal facts, each a new agent's first fact (goal: all of
  them at least `standard`); and each as a new agent's first episode against short
  chatter as a first episode: the least importance of the facts and the most of the
  chatter (goal: the facts score higher), and "met Ada" with emotional tone 0.8;
- the conversation's turns, added in order as episodes of one agent: short turns a
  question cites (12 words or fewer) living at least as long as `standard` (goal >=
  80%), and short chatter no question cites (8 words or fewer) on `working` (>= 80%);
- unmatched hits reinforced: `--questions` questions of each conversation recalled by
  text (recall in context on, as shipped) with the hits recorded; the hits that share no
  word with their question, and how many of them were reinforced (retrieval_count up).

`--turns` also lists the short cited turns and the short chatter, each with the policy
it landed on and its automatic importance: what a rule telling them apart has to read.

Each conversation on a database of its own; text only (no embedding model).
`PYTHONPATH=<another checkout>` measures that checkout's ethos with the same bench.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from locomo import Conversation, files, load

from bench import fresh_database
from ethos import logs
from ethos.services.engine import Engine, migrate
from ethos.settings import DatabaseSettings, LoggingSettings, Settings

FIRST_FACTS = (
    "I am vegetarian.",
    "I am allergic to peanuts.",
    "My daughter is called Mia.",
    "I work night shifts at the hospital.",
    "My sister lives in Porto.",
    "I can't swim.",
)
CHATTER = ("hi", "thanks!", "lol", "haha nice", "sounds good", "ok", "yeah", "cool, thanks")
CITED_WORDS = 12
CHATTER_WORDS = 8
# the policies that live at least as long as standard: the never-decaying ones, and those
# whose plain memory (never retrieved) outlives standard's on the same curve
LASTING = """
SELECT p.name FROM decay_policies AS p, decay_policies AS s
WHERE s.name = 'standard' AND (p.never_decays OR p.base_tau_days >= s.base_tau_days)
"""
POLICIES = "SELECT id, policy, auto_importance FROM {table} WHERE agent_id = $1"
# a hit shares a word with its question: one of its lexemes is one of the question's
SHARES = """
SELECT m.content_tsv @@ coalesce(ethos_text_query(ethos_text_config(), $3), ''::tsquery)
FROM episodic_traces AS m WHERE m.agent_id = $1 AND m.id = $2
"""
COUNT = "SELECT retrieval_count FROM episodic_traces WHERE agent_id = $1 AND id = $2"


@dataclass
class Figures:
    """One conversation's counts."""

    facts: int = 0
    facts_lasting: int = 0
    cited: int = 0
    cited_lasting: int = 0
    chatter: int = 0
    chatter_working: int = 0
    unmatched: int = 0
    unmatched_reinforced: int = 0
    turns: list[str] = field(default_factory=list)  # the short turns, for --turns


def events(path: Path) -> list[tuple[str, datetime]]:
    """A conversation's event sentences, by session in time order, at the session's date."""
    data = json.loads(path.read_text())
    found = []
    for key, session in data.items():
        if not (key.startswith("events_session_") and isinstance(session, dict)):
            continue
        at = datetime.strptime(session["date"], "%d %B, %Y").replace(tzinfo=UTC)
        sentences = [s for v in session.values() if isinstance(v, list) for s in v if s.strip()]
        found += [(s, at + timedelta(seconds=i)) for i, s in enumerate(sentences)]
    return sorted(found, key=lambda e: e[1])


def words(text: str) -> int:
    """A turn's words, its speaker's name and an image's caption left out."""
    said = text.split(": ", 1)[-1]
    said = re.sub(r" \[shares .*\]$", "", said)
    return len(said.split())


async def migrated(data_dir: Path, name: str) -> tuple[str, set[str], Engine]:
    """A new database: its URL, the policies that live at least as long as standard, and
    an engine on it."""
    url = await fresh_database(data_dir, name)
    settings = Settings(database=DatabaseSettings(url=url))
    await migrate(settings, url)
    conn = await asyncpg.connect(url)
    try:
        long_enough = {r["name"] for r in await conn.fetch(LASTING)}
    finally:
        await conn.close()
    return url, long_enough, Engine(settings, check_settings=False)


async def policies(url: str, table: str, agent: str) -> dict[str, tuple[str, float | None]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(POLICIES.format(table=table), agent)
    finally:
        await conn.close()
    return {str(r["id"]): (r["policy"], r["auto_importance"]) for r in rows}


async def measure(
    data_dir: Path, path: Path, conversation: Conversation, questions: int
) -> Figures:
    figures = Figures()
    url, long_enough, engine = await migrated(data_dir, "ethos_meaning")
    async with engine:
        facts = events(path)
        for sentence, at in facts:
            await engine.add("fact", agent_id=f"{conversation.name}-facts", content=sentence,
                             created_at=at)  # fmt: skip
        kept = await policies(url, "semantic_facts", f"{conversation.name}-facts")
        figures.facts = len(kept)
        figures.facts_lasting = sum(p in long_enough for p, _ in kept.values())

        agent = conversation.name
        ids: dict[str, str] = {}
        for dia_id in sorted(conversation.turns, key=lambda d: conversation.turns[d][1]):
            text, at = conversation.turns[dia_id]
            ids[str(await engine.add("episode", agent_id=agent, content=text,
                                     created_at=at))] = dia_id  # fmt: skip
        landed = await policies(url, "episodic_traces", agent)
        evidence = conversation.evidence
        for memory, (policy, importance) in landed.items():
            dia_id = ids[memory]
            text = conversation.turns[dia_id][0]
            n = words(text)
            if dia_id in evidence and n <= CITED_WORDS:
                figures.cited += 1
                figures.cited_lasting += policy in long_enough
                figures.turns.append(f"cited   {policy:<10} {importance or 0:.3f} {text}")
            elif dia_id not in evidence and n <= CHATTER_WORDS:
                figures.chatter += 1
                figures.chatter_working += policy == "working"
                figures.turns.append(f"chatter {policy:<10} {importance or 0:.3f} {text}")

        asked_at = conversation.sessions[-1][0] + timedelta(days=1)
        conn = await asyncpg.connect(url)
        try:
            for question, _, _ in conversation.questions[:questions]:
                hits = await engine.recall(agent, question, 10, tables=["episode"], now=asked_at)
                before = {h.id: await conn.fetchval(COUNT, agent, h.id) for h in hits}
                await engine.ltp.drain(30)
                for h in hits:
                    if await conn.fetchval(SHARES, agent, h.id, question):
                        continue
                    figures.unmatched += 1
                    figures.unmatched_reinforced += (
                        await conn.fetchval(COUNT, agent, h.id) > before[h.id]
                    )
        finally:
            await conn.close()
    return figures


async def first_words(data_dir: Path) -> list[str]:
    """The first-facts rows: each text a new agent's first fact, then first episode."""
    url, long_enough, engine = await migrated(data_dir, "ethos_meaning_first")
    lines = []
    async with engine:
        first: dict[str, tuple[str, float | None, str, float | None]] = {}
        for i, text in enumerate(FIRST_FACTS + CHATTER):
            fact = await engine.add("fact", agent_id=f"fact-{i}", content=text)
            episode = await engine.add("episode", agent_id=f"episode-{i}", content=text)
            (fp, fi) = (await policies(url, "semantic_facts", f"fact-{i}"))[str(fact)]
            (ep, ei) = (await policies(url, "episodic_traces", f"episode-{i}"))[str(episode)]
            first[text] = (fp, fi, ep, ei)
        moved = await engine.add("episode", agent_id="tone", content="met Ada",
                                 emotional_tone=0.8)  # fmt: skip
        tone = (await policies(url, "episodic_traces", "tone"))[str(moved)]
    facts_lasting = sum(first[t][0] in long_enough for t in FIRST_FACTS)
    lines.append(f"| first facts at least `standard` | {facts_lasting} of {len(FIRST_FACTS)} |")
    least = min(FIRST_FACTS, key=lambda t: first[t][3] or 0)
    most = max(CHATTER, key=lambda t: first[t][3] or 0)
    lines.append(
        f"| first episodes: least importance of the facts | {first[least][3] or 0:.3f}"
        f" ({least!r}) |"
    )
    lines.append(
        f"| first episodes: most importance of the chatter | {first[most][3] or 0:.3f} ({most!r}) |"
    )
    won = (first[least][3] or 0) > (first[most][3] or 0)
    lines.append(
        f"| every fact above every chatter, as first episodes | {'yes' if won else 'no'} |"
    )
    lines.append(f"| 'met Ada', emotional tone 0.8: policy (importance) | {tone[0]}"
                 f" ({tone[1] or 0:.3f}) |")  # fmt: skip
    details = [
        f"    {text!r}: fact {fp} ({fi or 0:.3f}), episode {ep} ({ei or 0:.3f})"
        for text, (fp, fi, ep, ei) in first.items()
    ]
    return [*lines, "", "First words, each a new agent's (policy, automatic importance):", "",
            *details]  # fmt: skip


def share(n: int, of: int) -> str:
    return f"{n} of {of} ({n / of:.0%})" if of else "0 of 0"


async def main(args: argparse.Namespace, paths: list[Path]) -> None:
    logs.configure(LoggingSettings(level="warning"))
    data_dir = Path.cwd() / args.data_dir
    rows: list[tuple[str, Figures]] = []
    for path in paths:
        rows.append((path.stem, await measure(data_dir, path, load(path), args.questions)))
    total = Figures()
    for _, f in rows:
        for name in vars(total):
            setattr(total, name, getattr(total, name) + getattr(f, name))
    print(
        "| | stated facts >= standard (goal 95%) | short cited turns >= standard (goal 80%)"
        " | short chatter on working (goal 80%) | unmatched hits reinforced (goal 0) |"
    )
    print("| --- | --- | --- | --- | --- |")
    for name, f in [*rows, ("overall", total)]:
        print(
            f"| {name} | {share(f.facts_lasting, f.facts)} | {share(f.cited_lasting, f.cited)}"
            f" | {share(f.chatter_working, f.chatter)}"
            f" | {f.unmatched_reinforced} of {f.unmatched} |"
        )
    print()
    print("| a new agent's first words | |\n| --- | --- |")
    print("\n".join(await first_words(data_dir)))
    if args.turns:
        print("\nShort cited turns and short chatter (policy, automatic importance):\n")
        print("\n".join(f"    {line}" for line in sorted(total.turns)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo")
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    parser.add_argument("--questions", type=int, default=40, help="asked of each conversation")
    parser.add_argument("--turns", action="store_true",
                        help="also list the short cited turns and the short chatter")  # fmt: skip
    arguments = parser.parse_args()
    asyncio.run(main(arguments, files(arguments.data)))
