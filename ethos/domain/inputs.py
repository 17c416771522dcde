"""Checks on what callers hand ethos. Each failure is one line, raised before any write."""

from __future__ import annotations

import itertools
import json
import math
import re
import unicodedata
import uuid
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ethos.domain.errors import InputError
from ethos.domain.spans import span
from ethos.domain.tables import MEMORY_TABLES, TableSpec, table_spec


def parse_time(value: str, name: str = "time") -> datetime:
    """ISO-8601 with a time zone; a naive or malformed value is an error."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"bad {name} {value!r}: expected ISO-8601, e.g. 2026-01-31T12:00:00+00:00"
        ) from None
    if parsed.tzinfo is None:
        raise InputError(f"bad {name} {value!r}: add a time zone, e.g. +00:00 or Z")
    return aware(parsed, name)


# The moments ethos accepts (the database refuses others too: migration 0019). Outside
# them the decay math leaves float range, and PostgreSQL's ±infinity would be stored.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def aware(value: datetime, name: str = "time") -> datetime:
    """A moment with a time zone, within [EARLIEST, LATEST)."""
    if value.tzinfo is None:
        raise InputError(f"bad {name} {value.isoformat()!r}: a datetime needs a time zone")
    if not EARLIEST <= value < LATEST:
        raise InputError(f"bad {name} {value.isoformat()!r}: ethos takes moments from 1900 to 2199")
    return value


def day_end(day: date, name: str) -> datetime:
    """The moment a calendar day (UTC) ends and the next begins: what is kept through
    `day` expires then. The last day ethos takes ends before LATEST."""
    last = (LATEST - timedelta(days=1)).date()
    if not EARLIEST.date() <= day < last:
        raise InputError(
            f"bad {name} {day.isoformat()!r}: ethos takes days from"
            f" {EARLIEST.date().isoformat()} to {(last - timedelta(days=1)).isoformat()}"
        )
    return datetime.combine(day + timedelta(days=1), time(), UTC)


def minutes_after(start: datetime, minutes: float, name: str) -> datetime:
    """`minutes` (a finite number) after `start`: a moment ethos takes."""
    if isinstance(minutes, bool) or not isinstance(minutes, int | float):
        raise InputError(f"bad {name} {minutes!r}: a number of minutes")
    try:
        end: datetime | None = start + timedelta(minutes=minutes)
    except (OverflowError, ValueError):  # out of datetime's range, or NaN
        end = None
    if end is None or not EARLIEST <= end < LATEST:
        raise InputError(
            f"bad {name} {minutes!r}: that many minutes after {start:%Y-%m-%d} is not a"
            " moment ethos takes (from 1900 to 2199)"
        )
    return end


# How far ahead of the database's clock a moment may be without `allow_future`: room for
# the caller's clock to run a little ahead of the server's.
FUTURE_SKEW = timedelta(minutes=1)


def not_ahead(name: str, value: datetime, clock: datetime, effect: str) -> None:
    """Refuse `value` when it is more than FUTURE_SKEW ahead of `clock` (the database's);
    `effect` says what such a moment would do."""
    ahead = value - clock
    if ahead > FUTURE_SKEW:
        raise InputError(
            f"`{name}` {value.isoformat()} is {span(ahead)} ahead of the database's clock:"
            f" {effect} (`allow_future` if that is meant)"
        )


def host_port(value: str, name: str) -> tuple[str, int]:
    """HOST:PORT, for a server to listen on."""
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{name} takes HOST:PORT (got {value!r})")
    return host, int(port)


def parse_id(value: str | uuid.UUID) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError):
        raise InputError(f"bad id {shown(value)}: expected a UUID") from None


def shown(value: Any, chars: int = 40) -> str:
    """A value as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= chars else f"{text[:chars]}… ({len(text):,} characters)"


def some(items: Sequence[str], count: int = 5) -> str:
    """The first few items and how many more: an error naming 200,000 ids stays one line."""
    more = f" and {len(items) - count:,} more" if len(items) > count else ""
    return ", ".join(items[:count]) + more


def at_most(name: str, value: int, most: int, setting: str) -> int:
    """`value`, unless it is over `most` (the setting that says so, in the message)."""
    if value > most:
        raise InputError(f"{name} is over {most:,}, the most one call takes ({setting})")
    return value


def id_list(ids: Iterable[str | uuid.UUID], most: int) -> list[uuid.UUID]:
    """At least one id, at most `most` (limits.ids), each a UUID."""
    given = list(itertools.islice(ids, most + 1))
    if not given:
        raise InputError("give at least one id")
    if len(given) > most:
        raise InputError(f"more than {most:,} ids in one call (limits.ids)")
    return [parse_id(i) for i in given]


def stored_text(name: str, value: str) -> str:
    """Text PostgreSQL can hold: UTF-8 (no lone surrogate) without NUL characters."""
    if "\x00" in value:
        raise InputError(f"{name} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{name} is not valid UTF-8 text") from None
    return value


# An agent id is a key of several indexes and a lexeme of each of its memories' texts
# (PostgreSQL indexes keys up to about 2.7 kB and keeps lexemes up to 2 kB).
MAX_AGENT_ID_BYTES = 256


# Characters that do not show: format (bidi overrides, zero-width), control and line
# separators. Two agent ids differing by one of them would look the same.
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def agent_id(value: Any, name: str = "agent_id") -> str:
    """A non-empty text PostgreSQL can index, written one way only: NFC, without unseen
    characters. Refused rather than normalised: a caller that kept its NFD spelling
    would read and forget by one agent id while ethos stored another."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} is required and must not be empty")
    size = len(stored_text(name, value).encode("utf-8"))
    if size > MAX_AGENT_ID_BYTES:
        raise InputError(f"{name} is {size:,} bytes: at most {MAX_AGENT_ID_BYTES} are kept")
    unseen = next((c for c in value if unicodedata.category(c) in _UNSEEN), None)
    if unseen is not None:
        raise InputError(
            f"{name} holds U+{ord(unseen):04X}, a character that does not show: an agent id"
            " must read as it is"
        )
    if not unicodedata.is_normalized("NFC", value):
        raise InputError(f"{name} is not in Unicode NFC: send it NFC-normalised")
    return value


def named_agent(value: Any) -> str | None:
    """An agent a caller may name (checked as agent_id), or None where it names none."""
    return None if value is None else agent_id(value, "agent")


_WORD = re.compile(r"\w+")


def query_text(value: Any, max_words: int) -> str:
    """Text PostgreSQL can index (as content is) of at most `max_words` words: a recall's
    cost grows with its query's words (limits.query_words)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError("query is required (some words to look for)")
    if _text_bytes(value, "query") > MAX_CONTENT_BYTES:  # its lexemes fit a tsvector
        raise InputError(f"query is over {MAX_CONTENT_BYTES:,} bytes, as no content is")
    words = sum(1 for _ in itertools.islice(_WORD.finditer(value), max_words + 1))
    if words > max_words:
        raise InputError(f"query has more than {max_words:,} words (limits.query_words)")
    return value


def first_words(text: str, count: int) -> str:
    """`text` up to the end of its `count`-th word: a query of at most `count` words."""
    ends = [match.end() for match in itertools.islice(_WORD.finditer(text), count)]
    return text[: ends[-1]] if len(ends) == count else text


def metadata_json(value: Any, max_bytes: int, name: str = "metadata") -> str:
    """Metadata as the JSON text PostgreSQL's jsonb takes: an object, without NaN or
    infinity (JSON has neither), NUL or lone surrogates, of at most `max_bytes` bytes
    (limits.metadata_bytes)."""
    if not isinstance(value, Mapping):
        raise InputError(f"{name} must be a JSON object")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise InputError(f"{name} holds NaN or infinity: JSON has no such number") from None
    except (TypeError, RecursionError) as exc:
        raise InputError(f"{name} is not JSON: {str(exc)[:80]}") from None
    size = len(stored_text(name, text).encode("utf-8"))
    if size > max_bytes:
        raise InputError(
            f"{name} is {size:,} bytes of JSON: at most {max_bytes:,} (limits.metadata_bytes)"
        )
    items: list[Any] = [value]  # jsonb escapes NUL but refuses the escape: find it
    while items:
        item = items.pop()
        if isinstance(item, Mapping):
            items += [*item, *item.values()]
        elif isinstance(item, list | tuple):
            items += item
        elif isinstance(item, str) and "\x00" in item:
            raise InputError(f"{name} must not contain NUL characters")
    return text


# Content longer than this (256 KiB) is refused: it keeps every memory's lexemes under
# PostgreSQL's tsvector limit (1 MiB), even when every word is distinct and short.
MAX_CONTENT_BYTES = 262_144


def content_text(value: Any) -> str:
    """Text PostgreSQL can store and index, with something in it."""
    size = _text_bytes(value, "content")
    if size > MAX_CONTENT_BYTES:
        raise InputError(f"content is {size:,} bytes: at most {MAX_CONTENT_BYTES:,} are stored")
    return str(value)


def _text_bytes(value: Any, name: str) -> int:
    """The size in UTF-8 of a text PostgreSQL can hold, with something in it."""
    if not isinstance(value, str):
        raise InputError(f"{name} must be text")
    if not value.strip() or all(c.isspace() or unicodedata.category(c) == "Cf" for c in value):
        raise InputError(f"{name} must not be empty")  # zero-width characters show nothing
    return len(stored_text(name, value).encode("utf-8"))


def unit_interval(name: str, value: float) -> float:
    if not isinstance(value, int | float) or not 0 <= value <= 1:  # NaN fails too
        raise InputError(f"{name} must be between 0 and 1 (got {value!r})")
    return float(value)


def embedding(values: Any, dimension: int) -> list[float]:
    """A list of `dimension` finite numbers."""
    if isinstance(values, str):
        try:
            values = json.loads(values)
        except json.JSONDecodeError:
            raise InputError("embedding is not valid JSON: expected an array of numbers") from None
    if not isinstance(values, Sequence) or isinstance(values, str) or not values:
        raise InputError("embedding must be a non-empty array of numbers")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise InputError("embedding must contain numbers only")
    if len(values) != dimension:
        raise InputError(
            f"embedding has {len(values)} dimensions, expected {dimension} (embedding.dimension)"
        )
    if not all(math.isfinite(v) for v in values):
        raise InputError("embedding contains NaN or infinity")
    if not has_direction(values):
        raise InputError(
            "embedding is all zeros, or as good as (its float32 norm is 0 or infinite):"
            " it has no direction to compare by"
        )
    return [float(v) for v in values]


def has_direction(values: Sequence[float]) -> bool:
    """Whether the vector's norm in float32, as pgvector stores and sums it, is above 0
    and finite: 1e-30 squares to 0 there, and cosine similarity then divides by 0."""
    # Sure without the float32 sum, 40 times slower: a norm of at least 1e-15·√n has a
    # number of at least 1e-15, whose float32 square is positive (and a sum of positives
    # no smaller); at most 1e15, n ≤ pgvector's 16,000 squares of 1e30 stay finite.
    if 1e-15 * math.sqrt(len(values)) <= math.hypot(*values) <= 1e15:
        return True
    total = array("f", [0.0])
    for square in array("f", (v * v for v in array("f", values))):
        total[0] += square  # rounded to float32 at each step, as pgvector's sum is
    return 0 < total[0] < math.inf


def vector_literal(values: Sequence[float] | str) -> str:
    """pgvector's text form."""
    if isinstance(values, str):
        return values
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


# The fields of MemoryInput that only some tables take (TableSpec.input_fields).
TABLE_FIELDS = (
    "emotional_tone",
    "confidence",
    "embedding",
    "expires_at",
    "stated",
)


@dataclass
class MemoryInput:
    """A memory to add, checked against its table's columns."""

    table: TableSpec
    agent_id: str
    content: str
    salience: float | None = None
    emotional_tone: float | None = None
    confidence: float | None = None
    embedding: list[float] | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    pinned: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    policy: str | None = None  # None: the insert trigger picks one (importance, agent, words)
    importance: float | None = None
    stated: bool | None = None  # None: the table's default (a fact is stated)

    @classmethod
    def build(cls, table: str | TableSpec, dimension: int, **values: Any) -> MemoryInput:
        memory = cls(table=table_spec(table), **values)
        memory._check(dimension)
        return memory

    def _check(self, dimension: int) -> None:
        agent_id(self.agent_id)
        self.content = content_text(self.content)
        for name in TABLE_FIELDS:
            if getattr(self, name) is not None and name not in self.table.input_fields:
                owners = [s.name for s in MEMORY_TABLES if name in s.input_fields]
                raise InputError(
                    f"{name} applies to {' and '.join(owners)} only, not {self.table.name}"
                )
        for name in ("salience", "emotional_tone", "confidence", "importance"):
            if getattr(self, name) is not None:
                unit_interval(name, getattr(self, name))
        if self.table.has_embedding:
            if self.embedding is None:
                raise InputError(f"{self.table.name} needs an embedding")
            self.embedding = embedding(self.embedding, dimension)
        for name in ("created_at", "expires_at"):
            if getattr(self, name) is not None:
                aware(getattr(self, name), name)
        if not isinstance(self.metadata, dict):
            raise InputError("metadata must be a JSON object")

    def columns(self) -> dict[str, Any]:
        """The columns to insert; what is left out takes the table's default."""
        values: dict[str, Any] = {
            "agent_id": self.agent_id,
            "content": self.content,
            "salience": self.salience,
            "emotional_tone": self.emotional_tone,
            "confidence": self.confidence,
            "embedding": self.embedding,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "pinned": self.pinned,
            "policy": self.policy,
            "importance": self.importance,
            "stated": self.stated,
            "metadata": json.dumps(self.metadata),
        }
        return {name: value for name, value in values.items() if value is not None}


# A line of `ethos import` holds one memory in at most 4 MiB of JSON (a request body's
# size to `ethos serve`): room for 256 KiB of content however escaped, its metadata and
# an embedding. One import reads at most MAX_IMPORT_LINES lines: split a larger file.
MAX_LINE_BYTES = 4 << 20
MAX_IMPORT_LINES = 10_000_000
# What a line may hold beyond table, agent and content: the fields add takes.
LINE_FIELDS = frozenset({"salience", "pinned", "metadata", "policy", "importance",
                         "created_at", *TABLE_FIELDS})  # fmt: skip
_NUMBERS = ("salience", "emotional_tone", "confidence", "importance")
_FLAGS = ("pinned", "stated")


@dataclass(frozen=True)
class ImportLine:
    """A line of an import, read: what add_detailed takes (checked there as add's)."""

    table: TableSpec
    agent_id: str
    content: Any
    fields: dict[str, Any]


def import_line(text: str) -> ImportLine:
    """One JSON object: `table`, `agent`, `content` and any of LINE_FIELDS, times as
    ISO-8601 text. A key it does not know is an error, as a flag add does not know is."""
    if len(text) > MAX_LINE_BYTES // 4 and len(text.encode("utf-8")) > MAX_LINE_BYTES:
        raise InputError(f"the line is over {MAX_LINE_BYTES:,} bytes")
    try:
        value = _LINE_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise InputError("a line holds one JSON object")
    if not value.keys() <= _LINE_KEYS:
        raise InputError(
            f"unknown key {shown(min(value.keys() - _LINE_KEYS))}: a line takes table, agent,"
            " content and " + ", ".join(sorted(LINE_FIELDS))
        )
    missing = [key for key in ("table", "agent", "content") if key not in value]
    if missing:
        raise InputError(f"key {missing[0]!r} is missing")
    fields = {
        key: given for key, given in value.items() if key in LINE_FIELDS and given is not None
    }
    for name in ("created_at", "expires_at"):
        if name in fields:
            if not isinstance(fields[name], str):
                raise InputError(f"bad {name} {shown(fields[name])}: expected ISO-8601 text")
            fields[name] = parse_time(fields[name], name)
    for name in _NUMBERS:  # (JSON's true is no number, though Python's is an int)
        if isinstance(fields.get(name), bool):
            raise InputError(f"{name} must be between 0 and 1 (got {fields[name]!r})")
    for name in _FLAGS:
        if name in fields and not isinstance(fields[name], bool):
            raise InputError(f"{name} must be true or false (got {shown(fields[name])})")
    return ImportLine(table_spec(value["table"]), value["agent"], value["content"], fields)


def _no_constant(name: str) -> Any:
    raise InputError(f"{name} is no JSON number")


_LINE_KEYS = LINE_FIELDS | {"table", "agent", "content"}
_LINE_DECODER = json.JSONDecoder(
    parse_constant=_no_constant
)  # made once: json.loads makes one a call
