"""The LangGraph store: BaseStore's documented behaviours on ethos, and a compiled graph
whose node remembers through the store that compile(store=...) hands it."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, TypedDict

import asyncpg
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from ethos.adapters.langgraph import AsyncEthosStore, EthosStore
from ethos.domain.errors import InputError
from ethos.services.engine import Engine, ItemPut
from ethos.services.engine.items import TTL_KEY
from ethos.services.recovery import Selector
from ethos.settings import Settings
from tests.acceptance.daemons import wait_for
from tests.conftest import DISTRIBUTED
from tests.embedding_server import embed_text


def embed(texts: Sequence[str]) -> list[list[float]]:
    return [embed_text(text, 384) for text in texts]


async def fact(conn: asyncpg.Connection, key: str) -> asyncpg.Record:
    return await conn.fetchrow("SELECT * FROM semantic_facts WHERE client_key = $1", key)


async def test_items_round_trip_and_keep_their_history(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    value = {"text": "Ada prefers green tea", "n": 3, "ratio": 0.1, "tags": ["a", "ü"],
             "nested": {"deep": [1, {"x": None}]}}  # fmt: skip
    async with AsyncEthosStore(settings) as store:
        assert store.supports_ttl
        await store.aput(("users", "ada"), "tea", value)
        first = await store.aget(("users", "ada"), "tea")
        assert first is not None and first.value == value
        assert (first.key, first.namespace) == ("tea", ("users", "ada"))
        assert first.created_at == first.updated_at
        await asyncio.sleep(0.01)
        await store.aput(("users", "ada"), "tea", {"text": "Ada now drinks coffee"})
        second = await store.aget(("users", "ada"), "tea", refresh_ttl=False)
        assert second is not None and second.value == {"text": "Ada now drinks coffee"}
        assert second.created_at == first.created_at < second.updated_at
        assert await store.aget(("users", "bob"), "tea") is None
        await store.engine.ltp.drain(5)  # before the delete: LTP skips pruned memories
        await store.adelete(("users", "ada"), "tea")
        assert await store.aget(("users", "ada"), "tea") is None
    row = await fact(conn, "tea")
    # One memory all along: two gets with refresh (the default) retrieved it, one did not.
    assert (row["agent_id"], row["retrieval_count"]) == ("users.ada", 1)
    assert (row["pruned"], row["prune_reason"]) == (True, "manual")
    async with Engine(settings) as engine:
        await engine.recover("fact", Selector(ids=(row["id"],)))
    async with AsyncEthosStore(settings) as store:
        back = await store.aget(("users", "ada"), "tea")
        assert back is not None and back.value == {"text": "Ada now drinks coffee"}


async def test_search_filters_pages_and_ranks_by_text_without_an_index(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    async with AsyncEthosStore(settings) as store:
        for n, (who, text) in enumerate(
            [
                ("ada", "likes green tea"),
                ("ada", "owns a bicycle"),
                ("bob", "likes black tea"),
                ("bob", "hates tea"),
            ]
        ):
            await store.aput(("users", who), f"k{n}", {"text": text, "n": n, "who": who})
        await store.aput(("other",), "k9", {"text": "tea elsewhere"})
        newest = await store.asearch(("users",))
        assert [i.key for i in newest] == ["k3", "k2", "k1", "k0"]  # most recently updated
        page = await store.asearch(("users",), limit=2, offset=1)
        assert [i.key for i in page] == ["k2", "k1"]
        assert [i.key for i in await store.asearch(("users", "bob"))] == ["k3", "k2"]
        assert [i.key for i in await store.asearch(("users",), filter={"who": "ada"})] == [
            "k1", "k0"
        ]  # fmt: skip
        ranged = await store.asearch(("users",), filter={"n": {"$gte": 1, "$lt": 3}})
        assert [i.key for i in ranged] == ["k2", "k1"]
        assert [i.key for i in await store.asearch(("users",), filter={"n": {"$ne": 0}})] == [
            "k3", "k2", "k1"
        ]  # fmt: skip
        # Every item, as LangGraph's stores without an index: the matches first, ranked.
        found = await store.asearch(("users",), query="green tea")
        assert found[0].key == "k0" and [i.key for i in found[1:]] == ["k3", "k2", "k1"]
        assert all(i.score is not None and i.score > 0 for i in found[:3])
        assert found[3].score is None
        memory = InMemoryStore()
        for item in await store.asearch(("users",), refresh_ttl=False):
            await memory.aput(item.namespace, item.key, item.value)
        for query, filter in [("green tea", None), ("nothing like it", {"who": "bob"})]:
            ours = await store.asearch(("users",), query=query, filter=filter, refresh_ttl=False)
            theirs = await memory.asearch(("users",), query=query, filter=filter)
            assert sorted(i.key for i in ours) == sorted(i.key for i in theirs)
        with pytest.raises(InputError, match=r"unknown filter operator \$regex"):
            await store.asearch(("users",), filter={"n": {"$regex": "x"}})
        assert await store.alist_namespaces() == [("other",), ("users", "ada"), ("users", "bob")]
        assert await store.alist_namespaces(prefix=("users",), max_depth=1) == [("users",)]
        assert await store.alist_namespaces(suffix=("*", "bob")) == [("users", "bob")]
    surfaced = await conn.fetchval(
        "SELECT surfaced_count FROM semantic_facts WHERE client_key = 'k0'"
    )
    assert surfaced == 3  # the three searches above that returned it


async def test_text_search_ranks_by_bm25_among_each_agents_own_items(
    settings: Settings,
) -> None:
    """As recall ranks: a word in every one of an agent's items counts little, a rare one
    much, however often the common one is repeated."""
    async with AsyncEthosStore(settings) as store:
        for n in range(20):
            await store.aput(("users", "ada"), f"hello{n}", {"text": f"Caroline said hello {n}"})
        await store.aput(("users", "ada"), "wed", {"text": "we talked about the marriage"})
        await store.aput(("users", "ada"), "name", {"text": "Caroline, Caroline, Caroline!"})
        # Another agent, for whom "Caroline" is rare: its own statistics rank its items.
        await store.aput(("users", "bo"), "bo", {"text": "Caroline visited"})
        found = await store.asearch(("users",), query="Caroline marriage", limit=3)
        assert [i.key for i in found[:2]] == ["wed", "bo"]
        assert found[0].score is not None and found[2].score is not None
        assert found[0].score > 2 * found[2].score


async def test_an_index_ranks_by_similarity_and_ttl_expires(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    with pytest.raises(InputError, match="index dims 8 differ from the schema's 384"):
        AsyncEthosStore(settings, index={"dims": 8, "embed": embed})
    # cosine, inner_product and l2, as PostgresStore (LangGraph's own suites check them).
    with pytest.raises(InputError, match="distance_type 'hamming': one of cosine, inner_pro"):
        AsyncEthosStore(
            settings,
            index={"dims": 384, "embed": embed, "distance_type": "hamming"},  # type: ignore[typeddict-unknown-key]
        )
    index = {"dims": 384, "embed": embed, "fields": ["text"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("u",), "car", {"text": "Bob drives an automobile", "id": 1})
        await store.aput(("u",), "jazz", {"text": "Bob likes jazz"})
        await store.aput(("u",), "raw", {"text": "not embedded"}, index=False)
        hits = await store.asearch(("u",), query="which vehicle")
        assert [h.key for h in hits] == ["car", "jazz", "raw"]  # unembedded last, as LangGraph
        assert hits[2].score is None
        # LangGraph's score: the cosine similarity, an exact match 1.0 (not × salience).
        [exact] = await store.asearch(("u",), query="Bob likes jazz", limit=1)
        assert exact.key == "jazz" and exact.score == pytest.approx(1.0)
        # 1.2 s: long enough to be read back on a loaded cluster, and the read's refresh
        # comes before the sleep, so each is expired after it whatever the load
        await store.aput(("u",), "brief", {"text": "gone soon"}, ttl=0.02)
        await store.aput(("gone",), "brief", {"text": "gone soon"}, ttl=0.02)
        assert await store.aget(("u",), "brief") is not None
        assert ("gone",) in await store.alist_namespaces()
        await asyncio.sleep(1.3)
        assert await store.aget(("u",), "brief") is None
        assert "brief" not in [i.key for i in await store.asearch(("u",))]
        assert ("gone",) not in await store.alist_namespaces()  # expired, not yet swept
    vectors = await conn.fetchval(
        "SELECT count(*) FROM memory_embeddings v JOIN semantic_facts f"
        " ON f.agent_id = v.agent_id AND f.id = v.source_id"
        " WHERE f.client_key IN ('car', 'jazz', 'raw')"
    )
    assert vectors == 2
    async with Engine(settings) as engine:
        await engine.sweep()
    assert (await fact(conn, "brief"))["prune_reason"] == "expired"


async def test_each_indexed_field_has_its_embedding_replaced_at_each_put(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """One embedding a text of the index's fields (memory_embeddings.field: its path,
    and its place where a path finds several), scored by the nearest; a put writes them
    anew, the old ones gone."""
    fields = "SELECT array_agg(field ORDER BY field) FROM memory_embeddings WHERE source_id = $1"
    index = {"dims": 384, "embed": embed, "fields": ["title", "tags[*]"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("u",), "trip", {"title": "camping by the lake",
                                          "tags": ["tents", "fishing rods"]})  # fmt: skip
        await store.aput(("u",), "other", {"title": "tax forms", "tags": []})
        trip = (await fact(conn, "trip"))["id"]
        assert await conn.fetchval(fields, trip) == ["tags[*][0]", "tags[*][1]", "title"]
        [hit, _] = await store.asearch(("u",), query="fishing rods")
        assert hit.key == "trip" and hit.score == pytest.approx(1.0)  # by its nearest field
        await store.aput(("u",), "trip", {"title": "camping by the sea"})
        assert await conn.fetchval(fields, trip) == ["title"]
        [hit, _] = await store.asearch(("u",), query="camping by the sea")
        assert hit.key == "trip" and hit.score == pytest.approx(1.0)
        count = "SELECT count(*) FROM memory_embeddings WHERE agent_id = 'u'"
        assert await conn.fetchval(count) == 2  # the trip's title, the other's title


async def test_an_item_without_the_indexed_text_is_stored_unembedded(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    index = {"dims": 384, "embed": embed, "fields": ["text"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("u",), "nofield", {"other": "no text field"})
        await store.aput(("u",), "nostring", {"n": 1}, index=False)
        await store.aput(("u",), "empty", {})
        for key, value in [("nofield", {"other": "no text field"}), ("nostring", {"n": 1})]:
            item = await store.aget(("u",), key)
            assert item is not None and item.value == value
        hits = await store.asearch(("u",), query="text")
        assert {h.key for h in hits} == {"nofield", "nostring", "empty"}
        assert all(h.score is None for h in hits)
    async with AsyncEthosStore(settings) as plain:  # no index: every string, else JSON
        await plain.aput(("p",), "nostring", {"n": 2})
        assert [i.key for i in await plain.asearch(("p",), query="2")] == ["nostring"]
    vectors = await conn.fetchval(
        "SELECT count(*) FROM memory_embeddings v JOIN semantic_facts f"
        " ON f.agent_id = v.agent_id AND f.id = v.source_id"
        " WHERE f.agent_id = 'u'"
    )
    assert vectors == 0


async def test_items_stay_until_deleted_or_expired_unless_told_otherwise(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """No automatic importance for a store's items: a short note is not gone by night."""
    with pytest.raises(InputError, match="unknown policy 'nope'"):
        AsyncEthosStore(settings, policy="nope")
    async with AsyncEthosStore(settings) as store:
        await store.aput(("u",), "kept", {"text": "hi!"})
        await store.aput(("u",), "ttl", {"text": "hi!"}, ttl=24 * 60)
    # ethos's own choice: automatic importance, but an item is stated, so it lives at
    # least as long as the default policy (decision 0023)
    async with AsyncEthosStore(settings, policy=None) as store:
        await store.aput(("v",), "auto", {"text": "hi!"})
    async with Engine(settings) as engine:
        await engine.sweep(now=datetime.now(UTC) + timedelta(hours=12))
    rows = await conn.fetch(
        "SELECT client_key, policy, pruned FROM semantic_facts"
        " WHERE client_key IN ('kept', 'ttl', 'auto') ORDER BY client_key"
    )
    assert [tuple(r) for r in rows] == [
        ("auto", "standard", False), ("kept", "permanent", False), ("ttl", "long_term", False)
    ]  # fmt: skip


async def test_a_replaced_item_takes_the_policy_given_else_keeps_its_own(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """In one batch over two agents: a put that names a policy sets it, on a new item
    and on one it replaces; one that names none leaves a replaced item's as it was."""
    await engine.put_items([ItemPut("p1", "a", {"v": 1}, "a", policy="permanent"),
                            ItemPut("p2", "b", {"v": 1}, "b", policy="permanent")])  # fmt: skip
    await engine.put_items([
        ItemPut("p1", "a", {"v": 2}, "a2", policy="long_term"),
        ItemPut("p2", "b", {"v": 2}, "b2"),
        ItemPut("p2", "c", {"v": 2}, "c", policy="long_term"),
    ])  # fmt: skip
    rows = await conn.fetch("SELECT agent_id, client_key, policy FROM semantic_facts"
                            " WHERE NOT pruned ORDER BY 1, 2")  # fmt: skip
    assert [tuple(r) for r in rows] == [
        ("p1", "a", "long_term"), ("p2", "b", "permanent"), ("p2", "c", "long_term")
    ]  # fmt: skip


async def test_refresh_ttl_moves_the_expiry_and_still_reinforces(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """As LangGraph defines refresh_ttl: a read moves expires_at to now + the item's ttl,
    so an item read within its ttl stays; one left alone expires."""
    async with AsyncEthosStore(settings) as store:
        for key in ("read", "found", "left"):
            await store.aput(("u",), key, {"text": f"{key} item"}, ttl=0.05)  # 3 s
        for _ in range(3):  # 4.5 s in all; each read 1.5 s after the last (slack for load)
            await asyncio.sleep(1.5)
            assert await store.aget(("u",), "read") is not None
            found = await store.asearch(("u",), filter={"text": "found item"})
            assert [i.key for i in found] == ["found"]
        assert await store.aget(("u",), "left") is None
        item = await store.aget(("u",), "read", refresh_ttl=False)
        assert item is not None and item.value == {"text": "read item"}  # the ttl kept apart
        with pytest.raises(InputError, match="ethos:ttl_minutes"):
            await store.aput(("u",), "x", {"ethos:ttl_minutes": 1})
        await store.engine.ltp.drain(5)
    row = await fact(conn, "read")
    assert row["retrieval_count"] == 3  # the reads that refreshed: reinforced as well


async def test_reads_in_quick_succession_do_not_each_write_the_item(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """A read moves the expiry only by more than 1% of the ttl: a get just after the put
    (or another read) leaves the row as it is, so it never waits on the LTP flush's lock
    of it; one whose expiry has drawn nearer moves it to now + the ttl."""
    expiry = "SELECT expires_at FROM semantic_facts WHERE client_key = 'hot'"
    async with AsyncEthosStore(settings) as store:
        await store.aput(("u",), "hot", {"text": "read often"}, ttl=60)
        put = await conn.fetchval(expiry)
        for _ in range(3):
            assert await store.aget(("u",), "hot") is not None
            assert [i.key for i in await store.asearch(("u",))] == ["hot"]
        assert await conn.fetchval(expiry) == put  # no read moved it
        await conn.execute(
            "UPDATE semantic_facts SET expires_at = now() + interval '30 minutes'"
            " WHERE client_key = 'hot'"
        )
        assert await store.aget(("u",), "hot") is not None
        assert await conn.fetchval(expiry) > put - timedelta(seconds=36)  # now + 60 min
        await store.engine.ltp.drain(5)
    assert (await fact(conn, "hot"))["retrieval_count"] == 7  # each read reinforced it


async def test_a_batch_applies_its_puts_in_order_in_one_statement(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """abatch writes each run of puts as one statement, with the batch's meaning: ops
    in order, the last put of an item wins (a value None deletes it), a put over an
    expired item makes a new one; ops between runs see the runs before them."""
    index = {"dims": 384, "embed": embed, "fields": ["text"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("u",), "old", {"text": "old news"})
        await store.aput(("u",), "gone", {"text": "to be deleted"})
        await store.aput(("u",), "brief", {"text": "brief note"}, ttl=0.005)  # 0.3 s
        await asyncio.sleep(0.5)
        results = await store.abatch([
            PutOp(("u",), "new", {"text": "first draft"}),
            PutOp(("u",), "old", {"text": "replaced news"}),
            PutOp(("u",), "new", {"text": "final draft"}),
            PutOp(("u",), "gone", None),
            PutOp(("u",), "back", None),
            PutOp(("u",), "back", {"text": "here again"}),
            PutOp(("u",), "brief", {"text": "brief note again"}),
            GetOp(("u",), "new"),
            PutOp(("u",), "new", None),
            GetOp(("u",), "new"),
            SearchOp(("u",), query="news"),
        ])  # fmt: skip
        assert results[:7] == [None] * 7 and results[8] is None and results[9] is None
        got = results[7]
        assert isinstance(got, Item) and got.value == {"text": "final draft"}
        found = results[10]
        assert isinstance(found, list)
        assert {i.key for i in found} == {"old", "brief", "back"}  # "new" and "gone": deleted
        assert (found[0].key, found[0].value) == ("old", {"text": "replaced news"})
    rows = await conn.fetch(
        """SELECT f.client_key, f.content, f.pruned, f.prune_reason,
                  array_agg(v.field ORDER BY v.field) FILTER (WHERE NOT f.pruned
                                                                   AND v.field IS NOT NULL)
                      AS vectors
           FROM semantic_facts AS f
           LEFT JOIN memory_embeddings AS v ON v.agent_id = f.agent_id AND v.source_id = f.id
           WHERE f.agent_id = 'u' GROUP BY f.agent_id, f.id ORDER BY f.client_key, f.created_at"""
    )
    assert [tuple(r) for r in rows] == [
        ("back", "here again", False, None, ["text"]),
        ("brief", "brief note", True, "expired", None),
        ("brief", "brief note again", False, None, ["text"]),
        ("gone", "to be deleted", True, "manual", None),
        ("new", "final draft", True, "manual", None),  # one item: the first draft never was
        ("old", "replaced news", False, None, ["text"]),
    ]  # fmt: skip
    async with Engine(settings) as engine:  # for each put: made an item, or deleted one
        made = await engine.put_items([
            ItemPut("u", "fresh", {"n": 1}, content="fresh"),
            ItemPut("u", "old", {"n": 2}, content="replaced again"),
            ItemPut("u", "back", None),
            ItemPut("u", "never", None),
            ItemPut("u", "fresh", {"n": 3}, content="fresh again"),
        ])  # fmt: skip
    assert made == [False, False, True, False, True]


async def test_a_batch_over_namespaces_replaces_each_items_vectors_and_no_others(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """One batch, items of several namespaces (one call of ethos_embed for all): a
    replaced item's vectors are its new text's, each field once; a new item gets its
    own; an item the batch does not name keeps its vectors."""
    index = {"dims": 384, "embed": embed, "fields": ["text", "note"]}
    async with AsyncEthosStore(settings, index=index) as store:  # type: ignore[arg-type]
        await store.aput(("a",), "k", {"text": "old text of a", "note": "a's note"})
        await store.aput(("b",), "k", {"text": "b keeps this", "note": "b's note"})
        before_b = await conn.fetch(
            "SELECT field, embedding FROM memory_embeddings WHERE agent_id = 'b' ORDER BY field"
        )
        await store.abatch([
            PutOp(("a",), "k", {"text": "new text of a"}),  # replaced, one field now
            PutOp(("c",), "k", {"text": "c is new", "note": "c's note"}),
            PutOp(("c", "d"), "k", {"text": "d is new"}),
        ])  # fmt: skip
        hits = await store.asearch(("a",), query="new text of a")
        assert [(h.key, h.score) for h in hits] == [("k", pytest.approx(1.0))]
    rows = await conn.fetch(
        """SELECT e.agent_id, e.field, e.embedding FROM memory_embeddings AS e
           JOIN semantic_facts AS f ON f.agent_id = e.agent_id AND f.id = e.source_id
           WHERE NOT f.pruned ORDER BY e.agent_id, e.field"""
    )
    assert [(r["agent_id"], r["field"]) for r in rows] == [
        ("a", "text"), ("b", "note"), ("b", "text"), ("c", "note"), ("c", "text"),
        ("c.d", "text"),
    ]  # fmt: skip
    assert [r["embedding"] for r in rows if r["agent_id"] == "b"] == [
        r["embedding"] for r in before_b
    ]
    assert await conn.fetchval("SELECT count(*) FROM memory_embeddings") == len(rows)


async def test_operations_issued_together_run_as_one_batch(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """Single operations issued at once (asyncio.gather) run as one batch, as
    AsyncPostgresStore's do: the puts in one statement (one moment, their created_at),
    an item's last put winning; equal reads read once, one retrieval. A put refused
    fails its own caller only: the others are written a put at a time."""
    async with AsyncEthosStore(settings) as store:
        await store.aput(("u",), "seen", {"text": "seen before"})
        done = await asyncio.gather(
            *(store.aput(("u",), f"k{n}", {"text": f"item {n}"}) for n in range(30)),
            store.aput(("u",), "twice", {"n": 1}),
            store.aput(("u",), "twice", {"n": 2}),
            *(store.aget(("u",), "seen") for _ in range(5)),
        )
        assert done[:32] == [None] * 32
        assert all(isinstance(item, Item) and item.value == {"text": "seen before"}
                   for item in done[32:])  # fmt: skip
        bad = {"text": "bad", TTL_KEY: 1}
        refused = await asyncio.gather(
            store.aput(("u",), "left", {"text": "left"}),
            store.aput(("u",), "bad", bad),
            store.aput(("u",), "right", {"text": "right"}),
            return_exceptions=True,
        )
        assert refused[0] is None and refused[2] is None
        assert isinstance(refused[1], InputError) and TTL_KEY in str(refused[1])
        # the first caller of a turn, which gathers the others, cancelled meanwhile
        first = asyncio.create_task(store.aput(("u",), "gone", {"text": "never"}))
        second = asyncio.create_task(store.aput(("u",), "stays", {"text": "stays"}))
        await asyncio.sleep(0)  # both have issued theirs; the first waits for the turn
        first.cancel()
        assert await second is None
        with pytest.raises(asyncio.CancelledError):
            await first
        await store.engine.ltp.drain(5)
    made = await conn.fetch(
        "SELECT client_key, metadata, created_at FROM semantic_facts"
        " WHERE client_key LIKE 'k%' OR client_key = 'twice'"
    )
    assert len(made) == 31 and len({row["created_at"] for row in made}) == 1
    assert {row["metadata"] for row in made if row["client_key"] == "twice"} == {'{"n": 2}'}
    assert (await fact(conn, "seen"))["retrieval_count"] == 1
    assert (await fact(conn, "left")) is not None and (await fact(conn, "right")) is not None
    assert await fact(conn, "bad") is None
    assert await fact(conn, "gone") is None and await fact(conn, "stays") is not None


async def test_a_bad_put_of_an_item_fails_its_own_caller_only(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """Two callers put one item in the same turn: the valid put is stored and the
    refused one fails alone, as when they run one after the other (the last put of an
    item wins only when it can be written)."""
    bad = {"text": "bad", TTL_KEY: 1}
    async with AsyncEthosStore(settings) as store:
        for first, second in (({"text": "good"}, bad), (bad, {"text": "good too"})):
            done = await asyncio.gather(
                store.aput(("u",), "same", first),
                store.aput(("u",), "same", second),
                store.aput(("u",), "other", {"text": "other"}),
                return_exceptions=True,
            )
            refused = [result for result in done if isinstance(result, Exception)]
            assert len(refused) == 1 and isinstance(refused[0], InputError), done
            assert TTL_KEY in str(refused[0])
            item = await store.aget(("u",), "same", refresh_ttl=False)
            assert item is not None and item.value == (second if first is bad else first)
    assert (await fact(conn, "other")) is not None


# Whether another session of this database waits on a lock (on a Citus cluster, on any
# node: a statement on a shard waits on its worker).
_ACTIVITY, _OTHER = (
    ("citus_stat_activity", "global_pid <> citus_backend_gpid()")
    if DISTRIBUTED
    else ("pg_stat_activity", "pid <> pg_backend_pid()")
)
WAITING_ON_A_LOCK = f"""SELECT EXISTS (SELECT 1 FROM {_ACTIVITY}
                        WHERE datname = current_database() AND {_OTHER}
                          AND wait_event_type = 'Lock')"""


async def test_a_statement_that_loses_a_deadlock_runs_again(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """A statement of its own that PostgreSQL rolls back as a deadlock's loser runs
    again: here moving two items' expiry (locking them by id) against a transaction
    that locks them the other way round."""
    async with AsyncEthosStore(settings) as store:
        for key in ("a", "b"):
            await store.aput(("u",), key, {"text": key}, ttl=60)
        rows = sorted([await fact(conn, "a"), await fact(conn, "b")], key=lambda r: r["id"])
        lock = "UPDATE semantic_facts SET expires_at = expires_at WHERE id = $1"
        later = datetime.now(UTC) + timedelta(hours=1)
        async with conn.transaction():
            await conn.execute(lock, rows[1]["id"])
            moving = asyncio.create_task(store.engine.store.refresh_item_ttls(rows, TTL_KEY, later))
            # it holds the first and waits for the second: waiting first, it is the
            # first to look for a deadlock, and loses (a fixed sleep lost on a busy machine)
            await wait_for(conn, WAITING_ON_A_LOCK, within=10)
            await conn.execute(lock, rows[0]["id"])  # the cycle: it loses, after 1 s
        await moving  # ran again once this transaction ended
    for row in rows:
        moved = await conn.fetchval(
            "SELECT expires_at FROM semantic_facts WHERE id = $1", row["id"]
        )
        assert moved > later + timedelta(minutes=59)


@pytest.mark.skipif(
    DISTRIBUTED,
    reason="on a Citus cluster a row lock reaches one shard: a batch there is run again"
    " when it loses a deadlock (test_a_statement_that_loses_a_deadlock_runs_again)",
)
async def test_a_batch_of_puts_locks_its_items_as_an_ltp_flush_does(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    """A batch of puts locks its live items in id order, as an LTP flush and a ttl
    refresh lock them, before it writes them by key: here a transaction locking them in
    id order (its deadlock check after 0.1 s) gets both while the batch waits, where
    the batch used to hold the item it writes first by key and the transaction lost a
    deadlock."""
    async with AsyncEthosStore(settings) as store:
        for key in ("b", "a"):  # b's id first, a's key first
            await store.aput(("u",), key, {"text": key})
        by_id = sorted([await fact(conn, "a"), await fact(conn, "b")], key=lambda r: r["id"])
        lock = "SELECT FROM semantic_facts WHERE id = $1 FOR NO KEY UPDATE"
        async with conn.transaction():
            await conn.execute("SET LOCAL deadlock_timeout = '100ms'")
            await conn.execute(lock, by_id[0]["id"])
            batch = asyncio.create_task(store.abatch([
                PutOp(("u",), "a", {"text": "a again"}), PutOp(("u",), "b", {"text": "b again"})
            ]))  # fmt: skip
            await wait_for(conn, WAITING_ON_A_LOCK, within=10)  # the batch waits for the first
            await conn.execute(lock, by_id[1]["id"])
        assert await batch == [None, None]
        got = [await store.aget(("u",), k, refresh_ttl=False) for k in "ab"]
        assert [item.value for item in got if item] == [{"text": "a again"}, {"text": "b again"}]


class State(TypedDict):
    user: str
    said: str
    recalled: Annotated[list[str], operator.add]


def remember_and_recall(state: State, *, store: BaseStore) -> dict[str, list[str]]:
    namespace = ("memories", state["user"])
    store.put(namespace, f"m{len(store.search(namespace))}", {"text": state["said"]})
    return {"recalled": [item.value["text"] for item in store.search(namespace, query="tea")]}


async def aremember_and_recall(state: State, *, store: BaseStore) -> dict[str, list[str]]:
    namespace = ("memories", state["user"])
    await store.aput(namespace, "async", {"text": state["said"]})
    found = await store.asearch(namespace, query="tea")
    return {"recalled": [item.value["text"] for item in found]}


def graph(node: object) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("remember", node)  # type: ignore[call-overload]
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder


def test_a_compiled_graph_remembers_through_the_sync_store(settings: Settings) -> None:
    with EthosStore(settings) as store:
        app = graph(remember_and_recall).compile(store=store)
        app.invoke({"user": "ada", "said": "Ada prefers green tea", "recalled": []})
        out = app.invoke({"user": "ada", "said": "Ada dislikes coffee", "recalled": []})
        assert out["recalled"] == ["Ada prefers green tea", "Ada dislikes coffee"]
        other = app.invoke({"user": "bob", "said": "Bob likes jazz", "recalled": []})
        assert other["recalled"] == ["Bob likes jazz"]  # another namespace's tea: not here
        assert [i.key for i in store.search(("memories", "ada"))] == ["m1", "m0"]


async def test_a_compiled_graph_remembers_through_the_async_store(
    settings: Settings, conn: asyncpg.Connection
) -> None:
    async with AsyncEthosStore(settings) as store:
        app = graph(aremember_and_recall).compile(store=store)
        out = await app.ainvoke({"user": "cy", "said": "Cy brews oolong tea", "recalled": []})
        assert out["recalled"] == ["Cy brews oolong tea"]
    row = await fact(conn, "async")
    assert (row["agent_id"], row["surfaced_count"]) == ("memories.cy", 1)


async def test_a_sync_call_on_the_stores_own_loop_is_refused_as_langgraph_does(
    settings: Settings,
) -> None:
    async with AsyncEthosStore(settings) as store:
        with pytest.raises(asyncio.InvalidStateError, match="use abatch"):
            store.get(("u",), "k")
        assert await asyncio.to_thread(store.get, ("u",), "k") is None  # another thread
