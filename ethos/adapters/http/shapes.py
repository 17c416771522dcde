"""The request bodies, and mem0's shapes of what the engine answers."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ethos.domain.inputs import day_end
from ethos.domain.tables import table_spec
from ethos.services.engine import MemoryView
from ethos.services.retrieval import Hit

IDS = ("user_id", "agent_id", "run_id")  # mem0's owners (see owners.py)


# The metadata key that keeps the mem0 identifiers a memory was added with, and the role
# of the message it was (a text added has none).
OWNERS = "mem0"


Kind = Literal["episode", "fact", "vector"]


class Owners(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class Message(BaseModel):
    role: str = Field(description="user, assistant or system (system messages are not stored)")
    content: str


class MemoryCreate(Owners):
    messages: list[Message] | None = Field(None, description="each stored as one memory")
    text: str | None = Field(None, description="one memory, instead of messages")
    metadata: dict[str, Any] | None = None
    infer: bool | None = Field(
        None,
        description="ethos stores what it is given; messages with infer on (mem0's default)"
        " are turns, their life from their words; with false, or a text, a fact is stated:"
        " kept at least as long as the default policy",
    )
    expiration_date: date | None = Field(None, description="kept through that day (UTC)")
    filters: dict[str, Any] | None = Field(None, description="the owners, as search takes them")
    kind: Literal["episode", "fact"] = Field("fact", description="ethos: the table")
    policy: str | None = Field(None, description="ethos: the decay policy")
    importance: float | None = Field(None, description="ethos: 0..1, picks a policy")


class MemoryUpdate(BaseModel):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: date | None = Field(None, description="null: it never expires")


def expiry(day: date | None) -> datetime | None:
    """mem0's expiration_date as ethos's expires_at: a memory is kept all through that
    day (UTC) and expires as the next begins, as mem0 counts it."""
    return None if day is None else day_end(day, "expiration_date")


class SearchRequest(Owners):
    query: str
    filters: dict[str, Any] | None = None
    top_k: int = Field(10, ge=1, description="at most [limits] k")
    threshold: float | None = Field(None, description="results scoring less are left out")
    kinds: list[Kind] | None = Field(None, description="ethos: the tables searched")


class ListRequest(Owners):
    filters: dict[str, Any] | None = None


class Ids(BaseModel):
    ids: list[str] = Field(min_length=1)
    agent: str | None = Field(None, description="the ids must be this agent's")


class Feedback(Ids):
    verdict: Literal["useful", "wrong"]


class Recall(BaseModel):
    agent: str
    query: str
    k: int = Field(10, ge=1, description="at most [limits] k")
    kinds: list[Kind] | None = None
    record: bool = Field(True, description="false: an operator's look, nothing reinforced")


class Move(BaseModel):
    policy: str


def mem0_item(view: MemoryView) -> dict[str, Any]:
    """A memory (as Engine.memories describes it) in mem0's shape, with ethos's account."""
    memory = view.as_dict()
    metadata = dict(memory["metadata"] or {})
    ids = metadata.pop(OWNERS, None) or {"user_id": memory["agent_id"]}
    return {
        "id": memory["id"],
        "memory": memory["content"],
        "hash": hashlib.md5(memory["content"].encode()).hexdigest(),
        "metadata": metadata or None,
        "created_at": memory["created_at"],
        "updated_at": memory["updated_at"] or memory["created_at"],  # as mem0 sets it
        **{key: ids.get(key) for key in IDS},
        "role": ids.get("role"),
        "ethos": _account(memory),
    }


def _account(memory: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("table", "agent_id", "policy", "salience", "retrieval_count", "pinned", "pruned",
            "pruned_at", "prune_reason", "prunes_at", "expires_at")  # fmt: skip
    return {key: memory.get(key) for key in keys} | {"kind": table_spec(memory["table"]).alias}


def mem0_hit(found: Hit) -> dict[str, Any]:
    hit = found.as_dict()
    metadata = dict(hit["metadata"] or {})
    ids = metadata.pop(OWNERS, None) or {}
    parts = ("table", "score", "salience", "similarity", "text_rank", "via", "link_weight")
    created = found.created_at.isoformat() if found.created_at else None
    return {
        "id": hit["id"],
        "memory": hit["content"],
        "hash": hashlib.md5(hit["content"].encode()).hexdigest(),
        "score": hit["score"],
        "metadata": metadata or None,
        "created_at": created,
        "updated_at": found.updated_at.isoformat() if found.updated_at else created,
        **{key: ids.get(key) for key in IDS},
        "role": ids.get("role"),
        "ethos": {key: hit.get(key) for key in parts} | {"matched": found.matched},
    }


HISTORY_EVENTS = {"add": "ADD", "update": "UPDATE", "prune": "DELETE", "recover": "RECOVER"}
