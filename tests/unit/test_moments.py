"""The moment a question names, read without a clock."""

from __future__ import annotations

import pytest

from ethos.domain.moments import Moment, named_moment


@pytest.mark.parametrize(
    ("question", "moment"),
    [
        ("When did Melanie go camping in June?", Moment(month=6)),
        ("What setback did Melanie face in October 2023?", Moment(2023, 10)),
        ("What did Caroline show on October 13, 2023?", Moment(2023, 10, 13)),
        ("What did Gina find on 1 February, 2023?", Moment(2023, 2, 1)),
        ("Who called on the 3rd June?", Moment(month=6, day=3)),
        ("How many times did she go to the beach in 2023?", Moment(2023)),
        ("in May 2023, and then in July", Moment(2023, 5)),  # the first one
        ("May 32, 2023", Moment(month=5)),  # no such day: the month, of any year
    ],
)
def test_a_named_moment_is_read(question: str, moment: Moment) -> None:
    assert named_moment(question) == moment


@pytest.mark.parametrize(
    "question", ["may I ask what she likes?", "what happened last year?", "room 12345", ""]
)
def test_no_moment_is_read_where_none_is_named(question: str) -> None:
    assert named_moment(question) is None
