"""Scenario 16 of clients/SCENARIOS.md, business time, and the cron syntaxes read back.

Guards against a client that drops ``calendar``, ``align`` or ``cron_syntax`` on the way
to the server (the task would be due 8 plain hours on, or its Spring cron refused as
Vixie), one that loses the If-Match of a calendar's put or delete, and one that misreads
a calendar's answer.
"""
from __future__ import annotations

import datetime as dt
import uuid
from zoneinfo import ZoneInfo

import pytest

import punctual

SHANGHAI = ZoneInfo("Asia/Shanghai")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri")
OFFICE_HOURS = {day: ["09:00-12:00", "13:30-18:00"] for day in WEEKDAYS}


def in_office_hours(at: dt.datetime) -> bool:
    """Monday to Friday, 09:00-12:00 or 13:30-18:00 in Shanghai, the ends included."""
    local = at.astimezone(SHANGHAI)
    t = local.time()
    morning = dt.time(9, 0) <= t <= dt.time(12, 0)
    afternoon = dt.time(13, 30) <= t <= dt.time(18, 0)
    return local.weekday() < 5 and (morning or afternoon)


def test_s16_business_time(client: punctual.Client, queue_name: str) -> None:
    name = f"py-office-{uuid.uuid4().hex[:8]}"
    created = client.put_calendar(name, tz="Asia/Shanghai", hours=OFFICE_HOURS, if_version=0)
    assert (created.name, created.source, created.tz, created.version) == (name, "api", "Asia/Shanghai", 1)
    assert created.hours == OFFICE_HOURS
    assert name in [c.name for c in client.calendars()]

    # A working day holds 7.5 working hours, so 8 of them always span more than 8 hours.
    before = dt.datetime.now(dt.timezone.utc)
    task = client.schedule(queue_name, "remind", delay="8h", calendar=name).task
    assert task is not None and task.due_at is not None
    assert in_office_hours(task.due_at), task.due_at.astimezone(SHANGHAI)
    assert task.due_at > before + dt.timedelta(hours=8)
    assert client.get(queue_name, "remind").due_at == task.due_at

    asked = dt.datetime.now(dt.timezone.utc)
    aligned = client.schedule(queue_name, "standup", due_at=asked, calendar=name, align="next_open").task
    assert aligned is not None and aligned.due_at is not None
    assert in_office_hours(aligned.due_at), aligned.due_at.astimezone(SHANGHAI)
    assert aligned.due_at >= asked.replace(microsecond=asked.microsecond // 1000 * 1000)

    with pytest.raises(punctual.InvalidArgument) as unknown:
        client.schedule(queue_name, "nowhere", delay="8h", calendar=f"none-{uuid.uuid4().hex[:8]}")
    assert unknown.value.field == "calendar"

    workdays = [punctual.Workday(dt.date(2026, 9, 27)), punctual.Workday(dt.date(2026, 10, 10), weekday="fri")]
    replaced = client.put_calendar(
        name, tz="Asia/Shanghai", hours=OFFICE_HOURS, holidays=["2026-10-01/2026-10-07"],
        workdays=workdays, if_version=created.version,
    )
    assert replaced.version == 2
    assert replaced.holidays == ["2026-10-01/2026-10-07"]
    assert replaced.workdays == workdays
    assert replaced.holiday_years == [2026]

    with pytest.raises(punctual.Conflict) as stale:
        client.put_calendar(name, tz="UTC", hours={"mon": ["09:00-17:00"]}, if_version=created.version)
    assert stale.value.status == 409
    with pytest.raises(punctual.Conflict):
        client.delete_calendar(name, if_version=created.version)
    assert client.get_calendar(name) == replaced

    client.delete_calendar(name, if_version=replaced.version)
    with pytest.raises(punctual.NotFound):
        client.get_calendar(name)
    assert name not in [c.name for c in client.calendars()]

    client.schedule(queue_name, "weekday", repeat=punctual.Repeat(
        cron="0 0 9 ? * MON-FRI", tz="Asia/Shanghai", cron_syntax="spring"))
    weekday = client.get(queue_name, "weekday")
    assert weekday.cron_syntax == "spring"
    assert weekday.repeat is not None and weekday.repeat.cron_syntax == "spring"
    assert weekday.due_at is not None
    local = weekday.due_at.astimezone(SHANGHAI)
    assert local.weekday() < 5 and local.time() == dt.time(9, 0), local


def test_cron_syntax_read_back_and_in_a_batch(client: punctual.Client, queue_name: str) -> None:
    results = client.schedule_many(queue_name, [
        punctual.TaskSpec("vixie", repeat=punctual.Repeat(cron="0 9 * * 1-5", tz="UTC")),
        punctual.TaskSpec("quartz", repeat=punctual.Repeat(
            cron="0 0 18 L * ?", tz="Europe/Berlin", cron_syntax="quartz")),
        punctual.TaskSpec("every", repeat=punctual.Repeat(every="1h")),
        punctual.TaskSpec("refused", repeat=punctual.Repeat(
            cron="0 0 9 ? * MON-FRI", tz="UTC", cron_syntax="vixie")),
    ])
    assert [r.ok for r in results] == [True, True, True, False]
    assert isinstance(results[3].error, punctual.InvalidArgument)
    assert results[3].error.field == "tasks[3].repeat.cron"
    assert client.get(queue_name, "vixie").cron_syntax == "vixie"
    assert client.get(queue_name, "quartz").cron_syntax == "quartz"
    assert client.get(queue_name, "every").cron_syntax is None


def test_calendar_and_align_bodies() -> None:
    spec = punctual.TaskSpec("k", delay="8h", calendar="office")
    assert spec.to_json() == {"key": "k", "delay": "8h", "calendar": "office"}
    with pytest.raises(ValueError):
        punctual.TaskSpec("k", due_at="2026-12-05T10:00:00Z", calendar="office", align="later").to_json()
    with pytest.raises(ValueError):
        punctual.Workday(dt.date(2026, 10, 10), weekday="fri", hours=["10:00-14:00"])
    assert punctual.Workday("2026-12-20", hours=["10:00-14:00"]).to_json() == {
        "date": "2026-12-20", "hours": ["10:00-14:00"]}
