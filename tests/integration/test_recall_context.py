"""Recall in context ([search] context_weight): an episode is also found by the turns
just before and after it in its agent's timeline, live ones only, of that agent only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, SearchSettings, Settings
from tests.conftest import WORDS_IGNORED, ConfiguredEngine

if TYPE_CHECKING:
    import uuid

    from tests.conftest import Days


def settings_with(database_url: str, context_weight: float) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(context_weight=context_weight, moment_weight=0),
    )


async def conversation(engine: Engine, days: Days, agent: str = "a") -> list[uuid.UUID]:
    """A question about the holiday, its answer (which never names it), then chatter."""
    turns = [
        "Bob: where did you go for the summer holiday?",
        "Ada: we drove to Lisbon and stayed by the sea",
        "Bob: nice, I cooked pasta yesterday",
        "Ada: the holiday pictures are on my phone",
        "Bob: pasta again today",
    ]
    return [
        await engine.add(
            "episode", agent_id=agent, content=text, created_at=days(0) + timedelta(minutes=i)
        )
        for i, text in enumerate(turns)
    ]


async def test_the_turn_after_a_match_comes_back(database_url: str, days: Days) -> None:
    async with ConfiguredEngine(settings_with(database_url, 1.0)) as engine:
        ids = await conversation(engine, days)
        hits = await engine.recall("a", "summer holiday", k=3, now=days(1), record=False)
    found = [h.id for h in hits]
    # The answer (turn 1) holds none of the words; its question (turn 0) does.
    assert found[0] == ids[0] and ids[1] in found
    answer = next(h for h in hits if h.id == ids[1])
    assert answer.text_rank == 0 and answer.relevance is not None and answer.relevance > 0


async def test_off_gives_the_ranking_by_words_alone(database_url: str, days: Days) -> None:
    async with ConfiguredEngine(settings_with(database_url, 0.0)) as engine:
        ids = await conversation(engine, days)
        hits = await engine.recall("a", "summer holiday", k=3, now=days(1), record=False)
    assert [h.id for h in hits] == [ids[0], ids[3]]  # only the turns holding its words
    assert all(h.relevance == h.text_rank for h in hits)


async def test_a_neighbour_raises_a_match(database_url: str, days: Days) -> None:
    """Of two turns that hold the word equally, the one whose neighbour also speaks of it
    ranks first in context, and the order by salience and age holds without it."""
    async with ConfiguredEngine(settings_with(database_url, 1.0)) as engine:
        ids = await conversation(engine, days)
        hits = await engine.recall("a", "pasta holiday", k=5, now=days(1), record=False)
    by_id = {h.id: h for h in hits}
    # Turn 3 (holiday) sits between two pasta turns: its context is the richest.
    assert by_id[ids[3]].relevance > by_id[ids[0]].relevance  # type: ignore[operator]


async def test_neighbours_are_the_agents_own_and_alive(database_url: str, days: Days) -> None:
    async with ConfiguredEngine(settings_with(database_url, 1.0)) as engine:
        ids = await conversation(engine, days)
        # Another agent's turn, written between the question and its answer.
        between = days(0) + timedelta(seconds=30)
        other = await engine.add("episode", agent_id="b", content="Cy: my secret is 42",
                                 created_at=between)  # fmt: skip
        hits = await engine.recall("a", "summer holiday", k=5, now=days(1), record=False)
        assert other not in {h.id for h in hits} and ids[1] in {h.id for h in hits}
        await engine.forget("episode", [ids[1]], now=days(1))
        hits = await engine.recall("a", "summer holiday", k=5, now=days(1), record=False)
    found = {h.id for h in hits}
    assert ids[1] not in found
    # The forgotten answer is skipped: the question's neighbour is now the turn after it.
    assert ids[2] in found


@pytest.mark.parametrize("weight", [0.0, 1.0])
async def test_facts_have_no_timeline(database_url: str, days: Days, weight: float) -> None:
    async with ConfiguredEngine(settings_with(database_url, weight)) as engine:
        await engine.add("fact", agent_id="a", content="Ada likes tea", created_at=days(0))
        hit = await engine.add("fact", agent_id="a", content="the tea is green",
                               created_at=days(0) + timedelta(minutes=1))  # fmt: skip
        hits = await engine.recall("a", "green", now=days(1), record=False)
    assert [h.id for h in hits] == [hit]


def moment_settings(database_url: str, moment_weight: float) -> Settings:
    return Settings(
        database=DatabaseSettings(url=database_url),
        importance=WORDS_IGNORED,
        search=SearchSettings(context_weight=0, moment_weight=moment_weight),
    )


async def diary(engine: Engine) -> list[uuid.UUID]:
    """The same words in May and in June 2023 (the June one newer, so first by default)."""
    return [
        await engine.add(
            "episode",
            agent_id="a",
            content="Ada: we went camping by the lake",
            policy="long_term",
            created_at=datetime(2023, month, 10, 12, tzinfo=UTC),
        )
        for month in (5, 6)
    ]


async def test_the_moment_a_question_names_weighs_more(database_url: str) -> None:
    asked = datetime(2024, 1, 1, tzinfo=UTC)
    async with ConfiguredEngine(moment_settings(database_url, 1.0)) as engine:
        may, june = await diary(engine)
        named = await engine.recall("a", "where did Ada go camping in May 2023?", now=asked,
                                    record=False)  # fmt: skip
        assert [h.id for h in named] == [may, june]
        assert named[0].relevance == pytest.approx(2 * named[0].text_rank)  # type: ignore[operator]
        day = await engine.recall("a", "camping on 10 June", now=asked, record=False)
        assert [h.id for h in day] == [june, may]
        unnamed = await engine.recall("a", "where did Ada go camping?", now=asked, record=False)
        assert [h.id for h in unnamed] == [june, may]


async def test_moments_off_weigh_nothing(database_url: str) -> None:
    asked = datetime(2024, 1, 1, tzinfo=UTC)
    async with ConfiguredEngine(moment_settings(database_url, 0.0)) as engine:
        _, june = await diary(engine)
        hits = await engine.recall("a", "camping in May 2023", now=asked, record=False)
    assert hits[0].id == june and all(h.relevance == h.text_rank for h in hits)
