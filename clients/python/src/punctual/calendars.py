"""Working-time calendars (API.md, "Wave 3 additions"): the body of a put and the
calendar as the server answers it.

Weekdays are the API's names, ``mon`` … ``sun``; working hours are ``"HH:MM-HH:MM"``
ranges ending after they start (``24:00`` is midnight). A weekday absent from ``hours``
is closed. Holidays are ISO dates or inclusive ranges ``"start/end"``. Everything is
sent as given: the server checks it and answers ``InvalidArgument`` naming the field.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .results import Source
from .types import parse_time

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

DateLike = Union[_dt.date, str]


def _date_json(value: DateLike) -> str:
    return value if isinstance(value, str) else value.isoformat()


@dataclass(frozen=True)
class Workday:
    """An extra working date (a weekend day worked in exchange for a holiday, 调休).

    Alone it takes the hours most open weekdays share; with ``weekday`` (``"fri"``)
    those of that weekday; with ``hours`` its own. At most one of the two.
    """

    date: DateLike
    weekday: Optional[str] = None
    hours: Optional[Sequence[str]] = None

    def __post_init__(self) -> None:
        if self.weekday is not None and self.hours is not None:
            raise ValueError("a workday takes weekday or hours, not both")
        if self.hours is not None:
            object.__setattr__(self, "hours", tuple(self.hours))

    def to_json(self) -> Union[str, Dict[str, Any]]:
        date = _date_json(self.date)
        if self.weekday is None and self.hours is None:
            return date
        out: Dict[str, Any] = {"date": date}
        if self.weekday is not None:
            out["as"] = self.weekday
        if self.hours is not None:
            out["hours"] = list(self.hours)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Workday":
        """The server's form: a bare date, ``{"date", "as"}`` or ``{"date", "hours"}``;
        the date read back as a ``datetime.date``."""
        if isinstance(data, str):
            return cls(_dt.date.fromisoformat(data))
        hours = data.get("hours")
        return cls(
            _dt.date.fromisoformat(data["date"]), weekday=data.get("as"),
            hours=None if hours is None else tuple(hours),
        )


def calendar_body(
    *,
    tz: str,
    hours: Mapping[str, Sequence[str]],
    holidays: Optional[Iterable[DateLike]] = None,
    workdays: Optional[Iterable[Union[Workday, DateLike]]] = None,
) -> Dict[str, Any]:
    """The JSON body of a calendar's ``PUT``. A holiday or workday may be a
    ``datetime.date`` or the API's text; a holiday range is text, ``"start/end"``."""
    body: Dict[str, Any] = {"tz": tz, "hours": {day: list(ranges) for day, ranges in hours.items()}}
    if holidays is not None:
        body["holidays"] = [_date_json(h) for h in holidays]
    if workdays is not None:
        body["workdays"] = [
            w.to_json() if isinstance(w, Workday) else _date_json(w) for w in workdays
        ]
    return body


@dataclass(frozen=True)
class Calendar:
    """A working-time calendar as the server holds it.

    ``source`` is ``api``, or ``config`` for one of the server's config file (version 0,
    changed only there). ``holiday_years``, ``entered_until`` (None: none entered) and
    ``notice`` (None unless the entered years run out within 30 days, ran out, or none
    are entered) say how far its holidays reach. ``version`` is what ``put_calendar``
    and ``delete_calendar`` take as ``if_version``; ``raw`` is the JSON.
    """

    name: str
    source: Source
    tz: str
    hours: Dict[str, List[str]]
    holidays: List[str]
    workdays: List[Workday]
    holiday_years: List[int]
    entered_until: Optional[_dt.datetime]
    notice: Optional[str]
    version: int
    updated_at: Optional[_dt.datetime]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Calendar":
        return cls(
            name=data["name"],
            source=data.get("source", "api"),
            tz=data["tz"],
            hours={day: list(ranges) for day, ranges in (data.get("hours") or {}).items()},
            holidays=list(data.get("holidays") or []),
            workdays=[Workday.from_json(w) for w in data.get("workdays") or []],
            holiday_years=[int(y) for y in data.get("holiday_years") or []],
            entered_until=parse_time(data.get("entered_until")),
            notice=data.get("notice"),
            version=int(data.get("version") or 0),
            updated_at=parse_time(data.get("updated_at")),
            raw=data,
        )
