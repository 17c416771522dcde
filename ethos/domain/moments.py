"""The moment a question names ("in May 2023", "on 3 June", "October 13, 2023", "in
2022"): recall weighs a memory written then above the others (search.moment_weight).
Pure: the words of a question in, a calendar period out; no clock (a moment relative to
now, "last year", is not read)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
# Month names as English writes them, capitalised: "may" is a verb far more often.
_MONTH = "|".join(_MONTHS)
_DAY = r"(?P<{}>[12][0-9]|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)[0-9]{2})"
_NAMED = re.compile(
    rf"\b(?:{_DAY.format('before')}\s+)?(?P<month>{_MONTH})\b"
    rf"(?:\s+{_DAY.format('after')}\b)?(?:,?\s+{_YEAR}\b)?"
    rf"|\b(?P<alone>(?:19|20)[0-9]{{2}})\b"
)


@dataclass(frozen=True)
class Moment:
    """A period of the calendar (UTC): a year, a month (of any year when `year` is None),
    or a day (of that month)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None


def named_moment(text: str) -> Moment | None:
    """The first moment `text` names, or None."""
    found = _NAMED.search(text)
    if found is None:
        return None
    if found["alone"]:
        return Moment(year=int(found["alone"]))
    day = found["before"] or found["after"]
    return Moment(
        year=int(found["year"]) if found["year"] else None,
        month=_MONTHS.index(found["month"]) + 1,
        day=int(day) if day else None,
    )
