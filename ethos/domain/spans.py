"""Spans of time as a person reads them: "12 s", "4 min", "2 h 5 min", "21 days",
"3.1 years", and a moment as its distance from now ("3 h ago", "in 21 days"). Pure: the
CLI, explain and the dashboard (through the HTTP answers) all print times with these."""

from __future__ import annotations

from datetime import datetime, timedelta

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
YEAR = 365.25 * DAY


def span(length: timedelta | float) -> str:
    """A length of time (a timedelta, or seconds), rounded to the unit that fits: seconds
    under a minute, minutes under an hour, hours and minutes under two days, days under
    two years, years beyond."""
    seconds = abs(length.total_seconds() if isinstance(length, timedelta) else length)
    if seconds < MINUTE:
        return f"{seconds:.0f} s"
    if seconds < HOUR:
        return f"{seconds / MINUTE:.0f} min"
    if seconds < 2 * DAY:
        hours, minutes = divmod(round(seconds / MINUTE), 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if seconds < 2 * YEAR:
        return f"{seconds / DAY:,.0f} days"
    return f"{seconds / YEAR:.1f} years"


def days_span(days: float | None) -> str:
    """A length given in days (None: never), as span prints it."""
    return "never" if days is None else span(days * DAY)


def relative(moment: datetime | None, now: datetime) -> str:
    """`moment` as its distance from `now`: "12 s ago", "in 21 days" (None: "never")."""
    if moment is None:
        return "never"
    ahead = (moment - now).total_seconds()
    return f"in {span(ahead)}" if ahead > 0 else f"{span(ahead)} ago"
