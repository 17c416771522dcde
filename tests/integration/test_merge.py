"""Consolidation beyond decay: duplicates found at write and merged afterwards, forgetting
on request, purging old tombstones, erasing an agent; each audited, each previewable."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING

import asyncpg
import pytest

from ethos.domain.errors import InputError
from ethos.services.engine import Engine
from ethos.services.recovery import Selector
from ethos.settings import DatabaseSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine
from tests.vectors import at_cosine, unit

if TYPE_CHECKING:
    from tests.conftest import Cli, Days


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Plain memories on the standard curve: their words do not tier them."""
    return Settings(database=DatabaseSettings(url=database_url), importance=WORDS_IGNORED)


async def live(conn: asyncpg.Connection, table: str, agent: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT * FROM {table} WHERE agent_id = $1 AND NOT pruned ORDER BY created_at, id", agent
    )


async def test_a_duplicate_add_finds_the_memory_and_retrieves_it(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    first = await engine.add_detailed("fact", agent_id="ada", content="Ada likes tea",
                                      created_at=days(0))  # fmt: skip
    again = await engine.add_detailed(
        "fact", agent_id="ada", content=" ada  likes\tTEA ", created_at=days(1)
    )
    other_agent = await engine.add_detailed(
        "fact", agent_id="bob", content="Ada likes tea", created_at=days(1)
    )
    await engine.ltp.drain(5)
    assert (first.created, again.id, again.created, other_agent.created) == (
        True, first.id, False, True,
    )  # fmt: skip
    assert other_agent.id != first.id
    [fact] = await live(conn, "semantic_facts", "ada")
    assert (fact["id"], fact["retrieval_count"], fact["last_retrieved_at"]) == (
        first.id, 1, days(1),
    )  # fmt: skip
    # Episodes are not deduplicated by default: one event can happen twice.
    one = await engine.add("episode", agent_id="ada", content="rain")
    two = await engine.add("episode", agent_id="ada", content="Rain")
    assert one != two


async def test_a_repeat_of_a_memory_that_is_no_longer_live_makes_a_new_one(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    expired = await engine.add(
        "fact", agent_id="ada", content="the door code", created_at=days(0), expires_at=days(1)
    )
    faded = await engine.add("fact", agent_id="ada", content="tea", created_at=days(0),
                             policy="working")  # fmt: skip
    again = await engine.add_detailed("fact", agent_id="ada", content="The door code",
                                      created_at=days(2))  # fmt: skip
    tea = await engine.add_detailed("fact", agent_id="ada", content="tea", created_at=days(2))
    assert again.created and again.id != expired  # the expired one is not the memory
    assert tea.created and tea.id != faded  # below its threshold two days on: forgotten
    report = await engine.sweep(now=days(2))
    assert report.tables["semantic_facts"].pruned == 2
    kept = {row["id"] for row in await live(conn, "semantic_facts", "ada")}
    assert kept == {again.id, tea.id}  # the new memories survive the sweep


async def test_a_repeat_that_asks_for_more_raises_the_memory(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    first = await engine.add("fact", agent_id="ada", content="my passport number",
                             policy="working", metadata={"source": "chat"})  # fmt: skip
    plain = await engine.add_detailed("fact", agent_id="ada", content="my passport number")
    assert (plain.id, plain.created, plain.raised) == (first, False, ())
    more = await engine.add_detailed(
        "fact", agent_id="ada", content="My passport number", pinned=True,
        policy="permanent", importance=0.9, metadata={"source": "form", "checked": True},
    )  # fmt: skip
    assert (more.id, more.created) == (first, False)
    assert set(more.raised) == {"pinned", "metadata", "importance", "policy"}
    row = await conn.fetchrow("SELECT * FROM semantic_facts WHERE id = $1", first)
    assert row["pinned"] and row["policy"] == "permanent" and row["importance"] == 0.9
    assert json.loads(row["metadata"]) == {"source": "chat", "checked": True}  # new keys only
    shorter = await engine.add_detailed("fact", agent_id="ada", content="my passport number",
                                        policy="working")  # fmt: skip
    assert shorter.raised == ()  # never lowered
    assert await conn.fetchval("SELECT policy FROM semantic_facts WHERE id = $1", first) == (
        "permanent"
    )


async def test_a_repeat_with_an_importance_takes_the_tier_the_database_keeps(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    """As a new memory's: the tiers of the database (ethos_importance_tier), which may
    differ from this engine's file until `ethos settings apply`."""
    first = await engine.add("fact", agent_id="ada", content="the alarm code", policy="working")
    await conn.execute(
        "UPDATE importance_tiers SET min_importance = 0.95 WHERE policy = 'long_term'"
    )
    repeat = await engine.add_detailed("fact", agent_id="ada", content="the alarm code",
                                       importance=0.9)  # fmt: skip
    assert "policy" in repeat.raised
    assert await conn.fetchval("SELECT policy FROM semantic_facts WHERE id = $1", first) == (
        "standard"
    )  # 0.9 reaches standard (0.6) there, not long_term (0.95)


async def test_twenty_concurrent_adds_of_one_new_fact_make_one_row(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    results = await asyncio.gather(
        *(engine.add_detailed("fact", agent_id="ada", content="Ada likes tea") for _ in range(20))
    )
    await engine.ltp.drain(5)
    assert len({added.id for added in results}) == 1
    assert sorted(added.created for added in results) == [False] * 19 + [True]
    [fact] = await live(conn, "semantic_facts", "ada")
    assert fact["retrieval_count"] == 19


async def test_vectors_are_duplicates_only_when_the_embedding_matches_too(
    engine: Engine, conn: asyncpg.Connection
) -> None:
    base = unit(1)
    first = await engine.add("vector", agent_id="a", content="tea", embedding=base)
    close = await engine.add("vector", agent_id="a", content="TEA",
                             embedding=at_cosine(base, 0.97, 2))  # fmt: skip
    far = await engine.add("vector", agent_id="a", content="tea", embedding=at_cosine(base, 0.9, 3))
    assert close == first
    assert far != first


async def test_merge_merges_duplicates_loaded_by_sql(
    settings: Settings, conn: asyncpg.Connection, days: Days, cli: Cli, database_url: str
) -> None:
    # 1,000 facts: 100 groups of 3 duplicates (differing in case and spaces), 700 alone.
    rows = []
    for n in range(100):
        for copy, spelling in enumerate((f"fact {n}", f"FACT  {n} ", f" Fact {n}")):
            rows.append(("a", spelling, days(copy), copy + 1, 0.5 + copy / 10))
    rows += [("a", f"single {n}", days(0), 1, 0.5) for n in range(700)]
    await conn.executemany(
        "INSERT INTO semantic_facts (agent_id, content, created_at, retrieval_count, salience)"
        " VALUES ($1, $2, $3, $4, $5)",
        rows,
    )
    env = {"ETHOS_DATABASE__URL": database_url}
    now = days(3).isoformat()
    preview = cli("merge", "--table", "fact", "--dry-run", "--now", now, "--json", env=env)
    assert preview.returncode == 0, preview.stderr
    previewed = json.loads(preview.stdout)["counts"]["semantic_facts"]
    assert (previewed["groups"], previewed["merged"]) == (100, 200)
    assert len(await live(conn, "semantic_facts", "a")) == 1000

    done = cli("merge", "--table", "fact", "--now", now, "--json", env=env)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)["counts"]["semantic_facts"]
    assert (counts["groups"], counts["merged"]) == (100, 200)
    survivors = {r["content"]: r for r in await live(conn, "semantic_facts", "a")}
    assert len(survivors) == 800
    for n in range(100):
        survivor = survivors[f"fact {n}"]  # the earliest of its group
        assert survivor["retrieval_count"] == 1 + 2 + 3
        assert survivor["anchor_at"] == days(3)
    merged = await conn.fetch(
        "SELECT m.merged_into, s.content FROM semantic_facts AS m"
        " JOIN semantic_facts AS s ON s.agent_id = m.agent_id AND s.id = m.merged_into"
        " WHERE m.prune_reason = 'merged'"
    )
    assert len(merged) == 200
    assert all(r["content"].startswith("fact ") for r in merged)

    again = cli("merge", "--table", "fact", "--now", now, "--json", env=env)
    assert json.loads(again.stdout)["counts"]["semantic_facts"]["merged"] == 0
    audit = await conn.fetch(
        "SELECT kind, trigger, status, counts FROM ethos_lifecycle_runs ORDER BY id"
    )
    assert [(r["kind"], r["trigger"], r["status"]) for r in audit] == [
        ("merge", "manual", "completed")
    ] * 2  # the dry run changes nothing, the audit table included
    assert json.loads(audit[0]["counts"])["semantic_facts"]["merged"] == 200


async def test_merge_follows_dedup_tables_and_keeps_pins(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    await conn.execute(
        "INSERT INTO episodic_traces (agent_id, content) VALUES ('a', 'rain'), ('a', 'rain')"
    )
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content, created_at, pinned)"
        " VALUES ('a', 'tea', $1, false), ('a', 'Tea', $2, true)",
        days(0),
        days(1),
    )
    report = await engine.merge(now=days(2))
    assert "episodic_traces" not in report.counts  # [dedup] tables leaves episodes out
    assert len(await live(conn, "episodic_traces", "a")) == 2
    [survivor] = await live(conn, "semantic_facts", "a")
    assert survivor["content"] == "tea" and survivor["pinned"]  # the pin stayed


async def test_the_survivor_takes_the_strongest_curve_and_the_links(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    weak, strong, other = [
        await conn.fetchval(
            "INSERT INTO semantic_facts (agent_id, content, created_at, salience, confidence)"
            " VALUES ('a', $1, $2, $3, $4) RETURNING id",
            content,
            days(day),
            salience,
            confidence,
        )
        for content, day, salience, confidence in (
            ("tea", 0, 0.2, 0.9),
            ("Tea", 1, 0.9, 0.4),
            ("coffee", 0, 1.0, 1.0),
        )
    ]
    await engine.feedback("fact", [strong, other], "useful", now=days(1))
    await engine.ltp.drain(5)
    strong_before = await engine.explain("fact", strong, now=days(2))
    report = await engine.merge(["fact"], now=days(2))
    assert report.counts["semantic_facts"]["links_moved"] == 1
    survivor = await conn.fetchrow("SELECT * FROM semantic_facts WHERE id = $1", weak)
    assert survivor["retrieval_count"] == 1
    # The strongest member's curve (S × D at the merge), under the survivor's own boosts.
    after = await engine.explain("fact", weak, now=days(2))
    assert after.strength == pytest.approx(strong_before.strength * strong_before.decay_factor)
    assert survivor["salience"] == pytest.approx(after.salience)
    assert survivor["confidence"] == pytest.approx(after.confidence)
    links = await engine.links("fact", weak, now=days(2))
    assert [link.id for link in links] == [other]
    assert await engine.links("fact", strong, now=days(2)) == []
    # A merged memory recovered is its own memory again; the survivor keeps the sum.
    await engine.recover("fact", Selector(ids=(strong,)), now=days(3))
    back = await conn.fetchrow("SELECT * FROM semantic_facts WHERE id = $1", strong)
    assert (back["pruned"], back["merged_into"], back["retrieval_count"]) == (False, None, 1)
    kept = await conn.fetchval("SELECT retrieval_count FROM semantic_facts WHERE id = $1", weak)
    assert kept == 1


async def test_near_duplicate_vectors_merge_and_so_do_episodes_by_their_embeddings(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    base, apart = unit(10), unit(11)
    texts = (("saw a heron", base), ("a heron, seen", at_cosine(base, 0.97, 12)),
             ("rain", apart), ("drizzle", at_cosine(apart, 0.90, 13)))  # fmt: skip
    episodes = [
        await engine.add(
            "episode", agent_id="a", content=text, created_at=days(n), embedding=embedding
        )
        for n, (text, embedding) in enumerate(texts)
    ]
    vectors = [
        await engine.add(
            "vector", agent_id="a", content=text, created_at=days(n), embedding=embedding
        )
        for n, (text, embedding) in enumerate(texts)
    ]
    preview = await engine.merge(["vector"], near=True, now=days(5), dry_run=True)
    assert preview.counts["near"] == {"groups": 1, "merged": 1}
    report = await engine.merge(["vector"], near=True, now=days(5))
    assert report.counts["near"]["merged"] == 1
    assert report.counts["near"]["episodic_traces_merged"] == 1
    assert [r["id"] for r in await live(conn, "memory_vectors", "a")] == [
        vectors[0], vectors[2], vectors[3]
    ]  # fmt: skip
    assert [r["id"] for r in await live(conn, "episodic_traces", "a")] == [
        episodes[0], episodes[2], episodes[3]
    ]  # fmt: skip


async def test_forget_is_a_recoverable_prune_and_unknown_ids_change_nothing(
    engine: Engine, conn: asyncpg.Connection, days: Days
) -> None:
    keep, drop = [await engine.add("fact", agent_id="a", content=c) for c in ("x", "y")]
    with pytest.raises(InputError, match="no semantic_facts row with id"):
        await engine.forget("fact", [drop, uuid.uuid4()], now=days(1))
    assert len(await live(conn, "semantic_facts", "a")) == 2
    report = await engine.forget("fact", [drop], now=days(1))
    assert report.counts == {"semantic_facts": {"manual": 1}}
    gone = await conn.fetchrow("SELECT * FROM semantic_facts WHERE id = $1", drop)
    assert (gone["pruned"], gone["prune_reason"]) == (True, "manual")
    with pytest.raises(InputError, match="already pruned"):
        await engine.forget("fact", [drop], now=days(1))
    await engine.recover("fact", Selector(reason="manual"), now=days(2))
    assert len(await live(conn, "semantic_facts", "a")) == 2
    assert keep


async def test_a_forget_by_id_alone_looks_once_and_is_one_run_across_tables(
    engine: Engine, conn: asyncpg.Connection, days: Days, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By id alone (no table: as HTTP, MCP and mem0's DELETE ask), the ids are found
    wherever they are in one look that says whose and whether live, then forgotten under
    one audit row counting each table; a pruned id among them changes nothing."""
    episode = await engine.add("episode", agent_id="a", content="rain on the lake")
    fact, kept = [await engine.add("fact", agent_id="a", content=c) for c in ("tea", "cake")]
    looks: list[list[uuid.UUID]] = []
    locate = engine.store.locate

    async def looked(ids: list[uuid.UUID], agent: str | None = None) -> list[asyncpg.Record]:
        looks.append(ids)
        return await locate(ids, agent)

    monkeypatch.setattr(engine.store, "locate", looked)
    report = await engine.forget(None, [str(episode), fact], agent="a", now=days(1))
    assert report.counts == {"episodic_traces": {"manual": 1}, "semantic_facts": {"manual": 1}}
    assert looks == [[episode, fact]]
    runs = await conn.fetch("SELECT selector, counts FROM lifecycle_runs WHERE kind = 'forget'")
    assert [(json.loads(r["selector"]), json.loads(r["counts"])) for r in runs] == [
        ({"tables": ["episodic_traces", "semantic_facts"], "count": 2}, report.counts)
    ]
    with pytest.raises(InputError, match=f"already pruned: {fact}"):
        await engine.forget(None, [kept, fact], agent="a", now=days(1))
    assert [r["id"] for r in await live(conn, "semantic_facts", "a")] == [kept]


async def test_a_forget_that_names_the_agent_touches_no_other_agents_memory(
    engine: Engine, conn: asyncpg.Connection, cli: Cli, database_url: str
) -> None:
    """Two agents' memories of one id (an id is its agent's: the app may write one in
    SQL, and agent roles could before `ethos roles` kept them from choosing it)."""
    shared = uuid.uuid4()
    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, id, content) VALUES ('a', $1, 'x'), ('b', $1, 'x')",
        shared,
    )
    pruned = "SELECT agent_id, pruned FROM semantic_facts WHERE id = $1 ORDER BY agent_id"
    with pytest.raises(InputError, match="no semantic_facts row of agent c with id"):
        await engine.forget("fact", [shared], agent="c")
    await engine.forget("fact", [shared], agent="a")
    assert [tuple(r) for r in await conn.fetch(pruned, shared)] == [("a", True), ("b", False)]
    env = {"ETHOS_DATABASE__URL": database_url}
    assert cli("forget", "fact", str(shared), "--agent", "b", env=env).returncode == 0
    assert [tuple(r) for r in await conn.fetch(pruned, shared)] == [("a", True), ("b", True)]


async def test_purge_dry_run_reports_exactly_what_the_purge_deletes(
    settings: Settings, conn: asyncpg.Connection, days: Days, cli: Cli, database_url: str
) -> None:
    settings.decay.batch_size = 7  # several batches
    async with ConfiguredEngine(settings) as engine:
        ids = [
            await engine.add(
                "episode", agent_id="a" if n % 3 else "b", content=f"e{n}", salience=0.5
            )
            for n in range(40)
        ]
        linked = ids[:2]
        await engine.feedback("episode", linked, "useful", now=days(0))
        await engine.ltp.drain(5)
        await engine.forget("episode", ids[:25], now=days(1))
        await engine.forget("episode", ids[25:30], now=days(20))
    env = {"ETHOS_DATABASE__URL": database_url}
    args = ("purge", "--pruned-before", days(10).isoformat(), "--now", days(30).isoformat())
    preview = json.loads(cli(*args, "--dry-run", "--json", env=env).stdout)
    assert await conn.fetchval("SELECT count(*) FROM episodic_traces") == 40
    done = cli(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    purged = json.loads(done.stdout)
    assert preview["counts"] == purged["counts"]
    assert purged["counts"]["episodic_traces"] == {"manual": 25}
    left = {r["id"] for r in await conn.fetch("SELECT id FROM episodic_traces")}
    assert left == set(ids[25:])
    assert await conn.fetchval("SELECT count(*) FROM memory_links") == 0
    bad = cli("purge", "--pruned-before", "yesterday", env=env)
    assert bad.returncode == 2
    assert "pruned-before" in bad.stderr


async def test_erase_leaves_nothing_of_the_agent_and_audits_counts_only(
    settings: Settings, conn: asyncpg.Connection, days: Days, cli: Cli, database_url: str
) -> None:
    async with ConfiguredEngine(settings) as engine:
        for agent in ("secret-agent", "other"):
            facts = [
                await engine.add(
                    "fact", agent_id=agent, content=f"{agent} likes {drink}", embedding=unit(5)
                )
                for drink in ("tea", "coffee")
            ]
            episode = await engine.add("episode", agent_id=agent, content=f"{agent} met Ada")
            await engine.feedback("fact", facts, "useful", now=days(0))  # links them
            await engine.forget("episode", [episode], now=days(1))
        await engine.assign_policy("secret-agent", "long_term")
        # Retrievals still buffered when the erase starts are applied, then erased too.
        await engine.record_retrieval("fact", facts)
    env = {"ETHOS_DATABASE__URL": database_url}
    preview = cli("erase", "--agent", "secret-agent", "--dry-run", "--json", env=env)
    assert json.loads(preview.stdout)["counts"] == {
        "memory_vectors": 0, "episodic_traces": 1, "semantic_facts": 2,
        "memory_links": 1, "agent_policies": 1,
    }  # fmt: skip
    refused = cli("erase", "--agent", "secret-agent", env=env)
    assert refused.returncode == 2
    assert "--yes" in refused.stderr
    done = cli("erase", "--agent", "secret-agent", "--yes", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"] == json.loads(preview.stdout)["counts"]
    tables = await conn.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        " AND table_type = 'BASE TABLE'"
    )
    for table in (r["table_name"] for r in tables):
        mentions = await conn.fetchval(
            f"SELECT count(*) FROM {table} AS t WHERE t::text LIKE '%secret-agent%'"
        )
        assert mentions == (1 if table == "lifecycle_runs" else 0), table
    for table in ("semantic_facts", "episodic_traces", "memory_embeddings", "memory_links"):
        others = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE agent_id = 'other'")
        assert others == {"semantic_facts": 2, "memory_embeddings": 2}.get(table, 1), table
    audit = await conn.fetchrow("SELECT * FROM lifecycle_runs WHERE kind = 'erase'")
    # The audit says whose (what was asked) and how many; never what they remembered.
    assert "likes" not in str(dict(audit)) and "met Ada" not in str(dict(audit))
    assert json.loads(audit["counts"])["semantic_facts"] == 2


async def test_the_daemon_merges_and_purges_each_cycle(
    database_url: str, conn: asyncpg.Connection
) -> None:
    from ethos.services.daemon import Cycle, merge_duplicates, purge_old_tombstones

    await conn.execute(
        "INSERT INTO semantic_facts (agent_id, content, pruned, pruned_at, prune_reason)"
        " VALUES ('a', 'dup', false, NULL, NULL), ('a', 'DUP', false, NULL, NULL),"
        " ('a', 'old', true, now() - interval '3 days', 'decay'),"
        " ('a', 'recent', true, now() - interval '1 hour', 'decay')"
    )
    settings = Settings(database=DatabaseSettings(url=database_url))
    async with ConfiguredEngine(settings) as engine:
        cycle = Cycle(engine=engine, store=engine.store, daemon_id="d", stop=asyncio.Event())
        assert await purge_old_tombstones(cycle) is None  # retention unset: never
        settings.retention.purge_after_days = 2
        await purge_old_tombstones(cycle)
        await merge_duplicates(cycle)
    left = await conn.fetch(
        "SELECT content, prune_reason FROM semantic_facts ORDER BY 2 NULLS FIRST, 1"
    )
    assert [tuple(r) for r in left] == [("dup", None), ("recent", "decay"), ("DUP", "merged")]
    runs = await conn.fetch("SELECT kind, trigger FROM lifecycle_runs ORDER BY id")
    assert [tuple(r) for r in runs] == [("purge", "daemon"), ("merge", "daemon")]
