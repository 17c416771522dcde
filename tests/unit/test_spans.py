"""Times as a person reads them (ethos.domain.spans): each unit where it fits, never
"0.0 h ago" for something seconds old nor a timedelta's `1121 days, 1:11:46.997038`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ethos.domain.spans import days_span, relative, span

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("length", "text"),
    [
        (timedelta(seconds=12.4), "12 s"),
        (timedelta(minutes=4, seconds=10), "4 min"),
        (timedelta(hours=3), "3 h"),
        (timedelta(hours=2, minutes=5), "2 h 5 min"),
        (timedelta(days=2, hours=1), "2 days"),
        (timedelta(days=1121, hours=1, minutes=11, seconds=46.997038), "3.1 years"),
        (-timedelta(minutes=4), "4 min"),
        (30.0, "30 s"),
    ],
)
def test_a_span_in_the_unit_that_fits(length: timedelta | float, text: str) -> None:
    assert span(length) == text


def test_a_moment_from_now() -> None:
    assert relative(NOW - timedelta(seconds=12), NOW) == "12 s ago"
    assert relative(NOW - timedelta(minutes=4), NOW) == "4 min ago"
    assert relative(NOW - timedelta(hours=3), NOW) == "3 h ago"
    assert relative(NOW - timedelta(days=2), NOW) == "2 days ago"
    assert relative(NOW + timedelta(days=21), NOW) == "in 21 days"
    assert relative(None, NOW) == "never"


def test_days_as_a_span() -> None:
    assert (days_span(None), days_span(1 / 3), days_span(7.0)) == ("never", "8 h", "7 days")
