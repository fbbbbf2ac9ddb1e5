#!/usr/bin/env python3
"""Prints tasks' due times as the server resolved them, in their calendar's zone, and why.

Usage: explain.py SERVER CALENDAR "LABEL|QUEUE|KEY|RULE"...

Computes no due time: each is the server's answer (GET /v1/queues/QUEUE/tasks/KEY),
counted from the task's created_at (the server's clock). The "why" names RULE and the
days between the two that the calendar (GET /v1/calendars/CALENDAR, as the server
serves it) closes, or works although they are not working weekdays (调休).
"""

import json
import sys
import urllib.request
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def get(server, path):
    with urllib.request.urlopen(server + path) as answer:
        return json.load(answer)


def instant(text):
    """An API time (2026-12-08T01:30:00.000Z) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def days(entries):
    """The dates of a calendar's holidays or workdays: dates, ranges, {"date": …}."""
    for entry in entries:
        first, _, last = (entry["date"] if isinstance(entry, dict) else entry).partition("/")
        day, end = date.fromisoformat(first), date.fromisoformat(last or first)
        while day <= end:
            yield day
            day += timedelta(days=1)


class Calendar:
    def __init__(self, spec):
        self.zone = ZoneInfo(spec["tz"])
        self.open_weekdays = {day for day, hours in spec.get("hours", {}).items() if hours}
        self.holidays = set(days(spec.get("holidays", [])))
        self.workdays = set(days(spec.get("workdays", [])))

    @staticmethod
    def week(spec):
        """The working hours by weekday, days with the same hours together."""
        groups = {}
        for day in WEEKDAYS:
            if spec.get("hours", {}).get(day):
                groups.setdefault(", ".join(spec["hours"][day]), []).append(day)
        return "; ".join(f"{' '.join(days)} {hours}" for hours, days in groups.items()) or "never open"

    def kind(self, day):
        """How the day differs from an ordinary working weekday, or None."""
        open_weekday = WEEKDAYS[day.weekday()] in self.open_weekdays
        if day in self.holidays:
            return ("a holiday", "holidays")
        if day in self.workdays and not open_weekday:
            return ("worked (调休)",) * 2
        if not open_weekday:
            return ("closed",) * 2
        return None

    def unusual_days(self, start, end):
        """The days from start to end (dates) that are not ordinary working weekdays, in
        runs of the same kind: ["Sat 12-05–Sun 12-06 closed", "Sat 10-10 worked (调休)"]."""
        runs, day = [], start
        while day <= end:
            kind = self.kind(day)
            if kind and runs and runs[-1][2] == kind and runs[-1][1] == day - timedelta(days=1):
                runs[-1][1] = day
            elif kind:
                runs.append([day, day, kind])
            day += timedelta(days=1)
        name = lambda day: day.strftime("%a %m-%d")
        return [
            f"{name(first)} {kind[0]}" if first == last else f"{name(first)}–{name(last)} {kind[1]}"
            for first, last, kind in runs
        ]


def main(server, name, tasks):
    spec = get(server, f"/v1/calendars/{name}")
    calendar = Calendar(spec)
    local = lambda text: instant(text).astimezone(calendar.zone)
    print(f"   {name} ({spec['tz']}): {calendar.week(spec)}")
    if spec.get("notice"):
        print(f"   the server's notice: {spec['notice']}")
    for task in tasks:
        label, queue, key, rule = task.split("|")
        answer = get(server, f"/v1/queues/{queue}/tasks/{key}")
        asked, due = local(answer["created_at"]), local(answer["due_at"])
        print(f"{label:<17} {queue + ' ' + key:<29} due {due:%a %Y-%m-%d %H:%M}")
        unusual = calendar.unusual_days(asked.date(), due.date())
        on_the_way = ", ".join(unusual) if unusual else "no day off, only the hours outside the working day"
        print(f"    {asked:%a %m-%d %H:%M} {rule} = {due:%a %m-%d %H:%M}; on the way: {on_the_way}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
