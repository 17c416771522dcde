"""The input checks behind [limits], pure: what PostgreSQL would refuse and what is over
a cap is one short line naming the setting, before anything reaches the database."""

from __future__ import annotations

import math
import uuid

import pytest

from ethos.domain.errors import InputError
from ethos.domain.inputs import agent_id, first_words, id_list, metadata_json, query_text, some


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"a": math.nan}, "NaN or infinity"),
        ({"a": [1, {"b": -math.inf}]}, "NaN or infinity"),
        ({"a": {"b": ["x\x00"]}}, "NUL"),
        ({"a\x00": 1}, "NUL"),
        ({"a": "\udc80"}, "not valid UTF-8"),
        ({"a": {1, 2}}, "not JSON"),
        ({"a": "x" * 100}, r"109 bytes of JSON: at most 64 \(limits\.metadata_bytes\)"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
def test_metadata_postgresql_would_refuse(metadata: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        metadata_json(metadata, 64)


def test_metadata_is_the_json_stored() -> None:
    assert metadata_json({"tea": "vert", "n": 1}, 64) == '{"tea": "vert", "n": 1}'


def test_a_query_is_bounded_by_its_words_and_bytes() -> None:
    assert query_text("green tea, jasmine-tea", 4) == "green tea, jasmine-tea"
    with pytest.raises(InputError, match=r"more than 3 words \(limits\.query_words\)"):
        query_text("green tea, jasmine-tea", 3)
    with pytest.raises(InputError, match="as no content is"):
        query_text("x" * 300_000, 5)
    for bad in ("", "  ", None, "te\x00a"):
        with pytest.raises(InputError):
            query_text(bad, 5)


def test_first_words_ends_at_a_word() -> None:
    assert first_words("one, two; three four", 2) == "one, two"
    assert first_words("one two", 5) == "one two"


def test_ids_are_counted_before_they_are_parsed() -> None:
    with pytest.raises(InputError, match=r"more than 2 ids in one call \(limits\.ids\)"):
        id_list(iter(["not an id"] * 10**6), 2)  # refused without reading them all
    with pytest.raises(InputError, match="at least one id"):
        id_list([], 2)
    one = uuid.uuid4()
    assert id_list([str(one)], 2) == [one]


def test_an_error_names_a_few_and_counts_the_rest() -> None:
    assert some(["a", "b"]) == "a, b"
    assert some([str(i) for i in range(200_000)]) == "0, 1, 2, 3, 4 and 199,995 more"


@pytest.mark.parametrize("value", ["", "a\x00", "\ud800", "é" * 129, 7])
def test_an_agent_postgresql_cannot_index_is_refused(value: object) -> None:
    with pytest.raises(InputError, match="agent"):
        agent_id(value, "agent")
