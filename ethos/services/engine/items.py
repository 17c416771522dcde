"""Memories a client names by key (the LangGraph store keeps items as facts)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ethos.db.store import Row
from ethos.domain.errors import InputError
from ethos.domain.inputs import (
    at_most,
    content_text,
    metadata_json,
    minutes_after,
    query_text,
)
from ethos.domain.tables import FACTS
from ethos.services.embedding import check_dimension
from ethos.services.engine.core import EngineCore
from ethos.services.ltp_flush import Kind
from ethos.services.retrieval import json_object

# An item's ttl (minutes), kept in its value's JSON (no column holds it) so that a read
# can move its expiry (LangGraph's refresh_ttl); the value is given back without it.
TTL_KEY = "ethos:ttl_minutes"

# A read moves an item's expiry to now + its ttl only where that moves it by more than
# this share of the ttl: reads of an item in quick succession do not each write its row
# (and wait on the LTP flush writing it); its expiry is at most 1% of its ttl early.
REFRESH_SLACK = 0.01


def needs_refresh(expires_at: datetime | None, ttl_minutes: float | None, now: datetime) -> bool:
    """Whether a read at `now` moves the expiry of an item put with this ttl."""
    if ttl_minutes is None:
        return False
    ttl = timedelta(minutes=ttl_minutes)
    return expires_at is None or now + ttl - expires_at > ttl * REFRESH_SLACK


# How an item's vectors are compared with a query's (LangGraph's distance_type).
DISTANCES = ("cosine", "inner_product", "l2")


@dataclass(frozen=True)
class StoredItem:
    """An item as the engine gives it: whose it is, its key, the value put (a JSON
    object), when it was made and last replaced; `score`: its rank in a search (None
    when read by key); `ttl_minutes`: the ttl it was put with (None: none)."""

    agent: str
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None
    ttl_minutes: float | None = None

    @classmethod
    def from_row(cls, row: Row) -> StoredItem:
        value = json_object(row["metadata"])
        return cls(
            agent=row["agent_id"],
            key=row["client_key"],
            value=value,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            score=row.get("score"),
            ttl_minutes=value.pop(TTL_KEY, None),
        )


@dataclass(frozen=True)
class ItemPut:
    """A put of `agent`'s item `key`: its `value` (a JSON object; None deletes the item)
    and its text `content`. `vectors`: (field, embedding) of each text of its indexed fields,
    in place of those it had (none: not embedded); None leaves them as they are. With
    `ttl_minutes`, it expires that long after the put or the last read that refreshes.
    `policy` names its decay policy (a replaced item takes it too); without it, a new
    item's is chosen as for any memory (its agent's, automatic importance, default)."""

    agent: str
    key: str
    value: Mapping[str, Any] | None
    content: str = ""
    vectors: Sequence[tuple[str, list[float]]] | None = None
    ttl_minutes: float | None = None
    policy: str | None = None


class ItemEngine(EngineCore):
    """Get, put, delete and search items; the agents that hold them."""

    async def get_item(self, agent: str, key: str, *, record: bool = True) -> StoredItem | None:
        """The live, unexpired fact of `agent` with this client key; with `record`,
        retrieved (LTP, in the background) and its expiry moved to now + its ttl."""
        now = await self._moment(None)
        row = await self.store.get_item(agent, key, now)
        if row is None:
            return None
        item = StoredItem.from_row(row)
        if record:
            await self._read([row], [item], now, "retrieval")
        return item

    async def put_items(self, puts: Sequence[ItemPut]) -> list[bool]:
        """Apply the puts, in one statement (one transaction), as if one after another:
        of puts of the same item the last wins (each is checked: one refused, none is
        written). A put stores its value as the fact of
        its agent under its key (its text: `content`), or replaces the value of the one
        there, which keeps its history; one of value None deletes the item (a soft
        delete, reason manual: `ethos recover` brings it back). For each put, whether it
        made a new item or deleted one (False where a later put of the batch won)."""
        if not puts:
            return []
        last = {(put.agent, put.key): n for n, put in enumerate(puts)}
        # Rows are locked in one order whatever the batch's: concurrent batches putting
        # the same items cannot deadlock.
        winners = [n for _, n in sorted(last.items())]
        items = [puts[n] for n in winners]
        now = await self._moment(None)
        checked = [self._stored(put, now) for put in puts]  # a put a later one replaces too
        stored = [checked[n] for n in winners]
        changed = await self.store.put_items(
            agents=[item.agent for item in items],
            keys=[item.key for item in items],
            contents=[content for content, _, _ in stored],
            values=[value for _, value, _ in stored],
            expires_at=[expires_at for _, _, expires_at in stored],
            policies=[item.policy for item in items],
            embedded=[item.vectors is not None for item in items],
            vectors=[
                (position, field, embedding)
                for position, item in enumerate(items, 1)
                for field, embedding in item.vectors or ()
            ],
            now=now,
        )
        made = {winners[position - 1] for position in changed}
        return [n in made for n in range(len(puts))]

    def _stored(
        self, put: ItemPut, now: datetime
    ) -> tuple[str | None, str | None, datetime | None]:
        """The put's content, value and expiry as stored, checked (None, None, None: a
        delete)."""
        if put.value is None:
            return None, None, None
        if TTL_KEY in put.value:
            raise InputError(
                f"an item's value must not hold the key {TTL_KEY!r} (ethos keeps its ttl there)"
            )
        expires_at = None
        if put.ttl_minutes is not None:
            expires_at = minutes_after(now, put.ttl_minutes, "ttl_minutes")
        kept = put.value if put.ttl_minutes is None else {**put.value, TTL_KEY: put.ttl_minutes}
        value = metadata_json(kept, self.settings.limits.metadata_bytes, "an item's value")
        if put.vectors is not None:
            check_dimension([e for _, e in put.vectors], self.settings.embedding.dimension)
        if put.policy is not None:
            self.settings.policy(put.policy)
        return content_text(put.content), value, expires_at

    async def search_items(
        self,
        prefix: str,
        *,
        text: str | None = None,
        embedding: list[float] | None = None,
        distance: str = "cosine",
        contains: Mapping[str, Any] | None = None,
        path: str = "true",
        variables: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        record: bool = True,
    ) -> list[StoredItem]:
        """Items of the agent `prefix` and of agents under it ("prefix.*"), passing the
        filter (containment, and a jsonpath predicate over `variables`): by the nearest
        of an item's vectors to `embedding` (by `distance`: "cosine", "inner_product" or
        "l2") × salience, else by text rank of `text` × salience, else newest
        first; ranked, the unmatched come last, newest first, score None. With `record`,
        the results are surfaced (LTP), as search does, and their expiry moved to now +
        their ttl."""
        limits = self.settings.limits
        if text:
            query_text(text, limits.query_words)
        at_most("limit", limit, limits.k, "limits.k")
        at_most("offset", offset, limits.offset, "limits.offset")
        now = await self._moment(None)
        if distance not in DISTANCES:
            raise InputError(f"distance {distance!r}: one of {', '.join(DISTANCES)}")
        ranked_by = distance if embedding is not None else "text" if text else None
        rows = await self.store.search_items(
            ranked_by, prefix=prefix, text=text, embedding=embedding,
            contains=json.dumps(dict(contains or {})), path=path,
            vars=json.dumps(dict(variables or {})), limit=limit, offset=offset, now=now,
        )  # fmt: skip
        items = [StoredItem.from_row(row) for row in rows]
        if rows and record:
            await self._read(rows, items, now, "surfaced")
        return items

    async def _read(
        self, rows: Sequence[Row], items: Sequence[StoredItem], now: datetime, kind: Kind
    ) -> None:
        """Items read with refresh_ttl: retrievals (LTP), and those put with a ttl expire
        that long after `now` (the others, and those whose expiry would hardly move, spare
        the statement)."""
        expiring = [
            row
            for row, item in zip(rows, items, strict=True)
            if needs_refresh(row["expires_at"], item.ttl_minutes, now)
        ]
        if expiring:
            await self.store.refresh_item_ttls(expiring, TTL_KEY, now)
        for agent in dict.fromkeys(row["agent_id"] for row in rows):
            ids = [row["id"] for row in rows if row["agent_id"] == agent]
            await self.ltp.record(FACTS, ids, now, kind, agent)

    async def item_namespaces(self) -> list[str]:
        """The agents that hold live, unexpired items."""
        return await self.store.item_namespaces(await self._moment(None))
