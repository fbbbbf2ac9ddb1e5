//! Unit tests of calendars: one per validation error, the API shape round trip, the
//! documented choices (lunch breaks, closing edges, short days, the standard weekday,
//! daylight-saving changes), a National Day week with 调休 Sundays, the bounds, and an
//! iCalendar file. The model test against minute-by-minute arithmetic is in
//! `model_tests.rs`.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::Error;

fn calendar(body: serde_json::Value) -> Calendar {
    serde_json::from_value(body).unwrap()
}

/// The field and reason of the error `body` is refused with.
fn refusal(body: serde_json::Value) -> (String, String) {
    let spec: CalendarSpec = serde_json::from_value(body).unwrap();
    match Calendar::new(spec) {
        Err(Error::Invalid { field, reason }) => (field, reason),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

const HOURS: Duration = Duration::from_secs(3600);

/// Monday to Friday 09:00-12:00 and 13:30-18:00 in Shanghai, National Day 2026 off
/// (Thursday 1 to Wednesday 7 October) with Sunday 27 September and Saturday 10
/// October worked, and the Dragon Boat Festival (Friday 19 June).
fn cn_office() -> Calendar {
    let day = json!(["09:00-12:00", "13:30-18:00"]);
    calendar(json!({
        "tz": "Asia/Shanghai",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day},
        "holidays": ["2026-10-01/2026-10-07", "2026-06-19"],
        "workdays": ["2026-09-27", {"date": "2026-10-10", "as": "fri"}],
    }))
}

#[test]
fn the_api_body_reads_and_writes_back_unchanged() {
    let body = json!({
        "tz": "Asia/Shanghai",
        "hours": {"mon": ["09:00-12:00", "13:30-18:00"], "fri": ["09:00-15:00"], "sat": ["10:00-24:00"]},
        "holidays": ["2026-10-01/2026-10-07", "2026-06-19"],
        "workdays": [
            "2026-09-27",
            {"date": "2026-10-10", "as": "fri"},
            {"date": "2026-10-11", "hours": ["09:00-12:00"]},
        ],
    });
    let calendar = calendar(body.clone());
    assert_eq!(serde_json::to_value(&calendar).unwrap(), body);
    assert_eq!(Calendar::new(calendar.spec()).unwrap(), calendar);
    // Weekdays come back Monday first, closed ones left out.
    let shuffled =
        self::calendar(json!({"tz": "UTC", "hours": {"fri": ["09:00-10:00"], "sun": [], "mon": ["08:00-09:00"]}}));
    assert_eq!(
        serde_json::to_value(&shuffled).unwrap(),
        json!({"tz": "UTC", "hours": {"mon": ["08:00-09:00"], "fri": ["09:00-10:00"]}})
    );
}

#[test]
fn each_mistake_is_refused_naming_its_field() {
    let week = |hours: serde_json::Value| json!({"tz": "UTC", "hours": hours});
    let cases = [
        (json!({"tz": "Mars/Olympus", "hours": {"mon": ["09:00-18:00"]}}), "tz", "not an IANA time zone"),
        (week(json!({"mond": ["09:00-18:00"]})), "hours.mond", "is not a weekday"),
        (
            week(json!({"mon": ["09:00-12:00", "13:30-12:00"]})),
            "hours.mon[1]",
            "'13:30-12:00' ends before it starts; write HH:MM-HH:MM with the end after the start",
        ),
        (week(json!({"tue": ["09:00-09:00"]})), "hours.tue[0]", "ends where it starts"),
        (week(json!({"wed": ["9:00-12:00"]})), "hours.wed[0]", "is not a time range"),
        (week(json!({"wed": ["09:00-25:00"]})), "hours.wed[0]", "is not a time range"),
        (week(json!({"wed": ["09:60-12:00"]})), "hours.wed[0]", "is not a time range"),
        (week(json!({"thu": ["24:00-24:00"]})), "hours.thu[0]", "starts at 24:00"),
        (week(json!({"fri": ["09:00-12:00", "11:00-14:00"]})), "hours.fri[1]", "overlaps or comes before"),
        (week(json!({"fri": ["13:00-14:00", "09:00-12:00"]})), "hours.fri[1]", "list the intervals in order"),
        (week(json!({})), "hours", "no day has working hours"),
        (week(json!({"sat": []})), "hours", "no day has working hours"),
    ];
    for (body, field, reason) in cases {
        let (got_field, got_reason) = refusal(body.clone());
        assert_eq!(got_field, field, "{body}");
        assert!(got_reason.contains(reason), "{body}: {got_reason}");
    }
}

#[test]
fn date_mistakes_are_refused_naming_the_entry() {
    let with = |holidays: serde_json::Value, workdays: serde_json::Value| {
        json!({"tz": "UTC", "hours": {"mon": ["09:00-18:00"], "fri": ["09:00-12:00"]},
               "holidays": holidays, "workdays": workdays})
    };
    let none = json!([]);
    let cases = [
        (with(json!(["2026-06-19", "2026-02-30"]), none.clone()), "holidays[1]", "'2026-02-30' is not a date"),
        (with(json!(["2026-6-19"]), none.clone()), "holidays[0]", "write YYYY-MM-DD"),
        (with(json!(["2026-10-07/2026-10-01"]), none.clone()), "holidays[0]", "ends before it starts"),
        (with(json!(["1969-12-31"]), none.clone()), "holidays[0]", "outside the dates a calendar holds"),
        (with(none.clone(), json!(["2026-09-27", "2026-13-01"])), "workdays[1]", "is not a date"),
        (
            with(json!(["2026-10-01/2026-10-07"]), json!(["2026-09-27", "2026-10-03"])),
            "workdays[1]",
            "'2026-10-03' is also a holiday (holidays[0] '2026-10-01/2026-10-07')",
        ),
        (with(none.clone(), json!(["2026-09-27", {"date": "2026-09-27", "as": "mon"}])), "workdays[1]", "given twice"),
        (with(none.clone(), json!([{"date": "2026-09-27", "as": "sun"}])), "workdays[0].as", "no working hours"),
        (with(none.clone(), json!([{"date": "2026-09-27", "as": "sunday"}])), "workdays[0].as", "not a weekday"),
        (
            with(none.clone(), json!([{"date": "2026-09-27", "as": "fri", "hours": ["09:00-10:00"]}])),
            "workdays[0]",
            "not both",
        ),
        (with(none.clone(), json!([{"date": "2026-09-27", "hours": []}])), "workdays[0].hours", "is empty"),
        (
            with(none.clone(), json!([{"date": "2026-09-27", "hours": ["10:00-09:00"]}])),
            "workdays[0].hours[0]",
            "ends before it starts",
        ),
    ];
    for (body, field, reason) in cases {
        let (got_field, got_reason) = refusal(body.clone());
        assert_eq!(got_field, field, "{body}");
        assert!(got_reason.contains(reason), "{body}: {got_reason}");
    }
    // A plain working date needs an open weekday to stand in for.
    let (field, reason) = refusal(json!({"tz": "UTC", "hours": {},
        "workdays": [{"date": "2026-09-26", "hours": ["09:00-12:00"]}, "2026-09-27"]}));
    assert_eq!((field.as_str(), reason.contains("no weekday is open")), ("workdays[1]", true), "{reason}");
}

#[test]
fn the_shape_is_refused_by_serde_with_the_key() {
    let error = |body: serde_json::Value| serde_json::from_value::<Calendar>(body).unwrap_err().to_string();
    assert!(error(json!({"tz": "UTC", "hour": {}})).contains("unknown field `hour`"));
    assert!(
        error(json!({"tz": "UTC", "hours": {"mon": ["09:00-10:00"]}, "workdays": [{"day": "2026-01-01"}]}))
            .contains("unknown field `day`")
    );
    assert!(
        error(json!({"tz": "UTC", "hours": {"mon": ["09:00-10:00"]}, "workdays": [{"as": "mon"}]}))
            .contains("missing field `date`")
    );
    // Errors of Calendar::new come through serde with their field.
    assert!(error(json!({"tz": "UTC", "hours": {"mon": ["10:00-09:00"]}})).starts_with("hours.mon[0]: "));
    // A weekday given twice in the object is refused, not overwritten.
    let text = r#"{"tz": "UTC", "hours": {"mon": ["09:00-10:00"], "mon": ["11:00-12:00"]}}"#;
    assert!(serde_json::from_str::<Calendar>(text).unwrap_err().to_string().contains("hours.mon: is given twice"));
}

#[test]
fn lunch_breaks_and_closing_edges() {
    let cn = cn_office();
    // Monday 2026-09-14.
    assert_eq!(cn.add_working_time(at("2026-09-14T09:00:00+08:00"), 3 * HOURS), Ok(at("2026-09-14T12:00:00+08:00")));
    assert_eq!(cn.add_working_time(at("2026-09-14T11:00:00+08:00"), 2 * HOURS), Ok(at("2026-09-14T14:30:00+08:00")));
    // 7h30 is a working day: from 09:00 to the closing edge, 18:00, not the next 09:00.
    let day = Duration::from_secs(7 * 3600 + 1800);
    assert_eq!(cn.add_working_time(at("2026-09-14T09:00:00+08:00"), day), Ok(at("2026-09-14T18:00:00+08:00")));
    // Closed at the start: counting starts at the opening; zero is next_open.
    assert_eq!(cn.add_working_time(at("2026-09-14T12:10:00+08:00"), HOURS), Ok(at("2026-09-14T14:30:00+08:00")));
    assert_eq!(
        cn.add_working_time(at("2026-09-14T12:00:00+08:00"), Duration::ZERO),
        Ok(at("2026-09-14T13:30:00+08:00"))
    );
    assert_eq!(cn.next_open(at("2026-09-14T10:00:00+08:00")), Ok(at("2026-09-14T10:00:00+08:00")));
    assert!(cn.is_open(at("2026-09-14T09:00:00+08:00")));
    assert!(!cn.is_open(at("2026-09-14T12:00:00+08:00")));
    assert!(cn.is_open(at("2026-09-14T11:59:59.999+08:00")));
}

#[test]
fn working_days_keep_the_offset_into_the_day() {
    let cn = cn_office();
    let days = |start: &str, n| cn.add_working_days(at(start), n);
    assert_eq!(days("2026-09-14T10:30:00+08:00", 1), Ok(at("2026-09-15T10:30:00+08:00")));
    // Friday to Monday over a closed weekend.
    assert_eq!(days("2026-09-18T15:00:00+08:00", 1), Ok(at("2026-09-21T15:00:00+08:00")));
    // From the lunch break or from 13:30 itself: the afternoon's opening, not 12:00.
    assert_eq!(days("2026-09-14T12:30:00+08:00", 2), Ok(at("2026-09-16T13:30:00+08:00")));
    assert_eq!(days("2026-09-14T13:30:00+08:00", 1), Ok(at("2026-09-15T13:30:00+08:00")));
    // After closing: from the next opening, offset 0.
    assert_eq!(days("2026-09-14T19:00:00+08:00", 1), Ok(at("2026-09-16T09:00:00+08:00")));
    assert_eq!(days("2026-09-14T19:00:00+08:00", 0), Ok(at("2026-09-15T09:00:00+08:00")));
    // A short Friday with less open time than the offset: its closing.
    let short = calendar(json!({"tz": "Europe/Paris", "hours": {
        "thu": ["09:00-12:00", "13:00-18:00"], "fri": ["09:00-12:00"]}}));
    assert_eq!(short.add_working_days(at("2026-09-17T16:00:00+02:00"), 1), Ok(at("2026-09-18T12:00:00+02:00")));
    assert_eq!(short.add_working_days(at("2026-09-17T11:00:00+02:00"), 1), Ok(at("2026-09-18T11:00:00+02:00")));
}

#[test]
fn national_day_week_with_adjusted_sundays() {
    let cn = cn_office();
    // Sunday 27 September is worked on the standard (Monday) hours; Saturday 26 is not.
    assert_eq!(cn.standard_weekday(), Some("mon"));
    assert!(cn.is_open(at("2026-09-27T10:00:00+08:00")));
    assert!(!cn.is_open(at("2026-09-27T12:30:00+08:00")));
    assert!(!cn.is_open(at("2026-09-26T10:00:00+08:00")));
    // Friday 17:00 plus 2 working hours: one on Friday, one on the working Sunday.
    assert_eq!(cn.add_working_time(at("2026-09-25T17:00:00+08:00"), 2 * HOURS), Ok(at("2026-09-27T10:00:00+08:00")));
    // The holiday week is closed; the first opening after it is Thursday 8 October.
    for day in 1..=7 {
        assert!(!cn.is_open(at(&format!("2026-10-0{day}T10:00:00+08:00"))), "October {day}");
    }
    assert_eq!(cn.next_open(at("2026-09-30T18:00:00+08:00")), Ok(at("2026-10-08T09:00:00+08:00")));
    // "Approve within 2 working days" from Wednesday 30 September 10:00: Thursday 8
    // and Friday 9 October.
    assert_eq!(cn.add_working_days(at("2026-09-30T10:00:00+08:00"), 2), Ok(at("2026-10-09T10:00:00+08:00")));
    // Saturday 10 October works as a Friday; Sunday 11 does not.
    assert_eq!(cn.add_working_days(at("2026-10-09T10:00:00+08:00"), 1), Ok(at("2026-10-10T10:00:00+08:00")));
    assert_eq!(cn.add_working_days(at("2026-10-10T10:00:00+08:00"), 1), Ok(at("2026-10-12T10:00:00+08:00")));
    // 16 working hours from the Tuesday before: Tue 09:00 + 7h30 + Wed 7h30 + 1h on 8 Oct.
    assert_eq!(cn.add_working_time(at("2026-09-29T09:00:00+08:00"), 16 * HOURS), Ok(at("2026-10-08T10:00:00+08:00")));
    // The Dragon Boat Festival.
    assert_eq!(cn.next_open(at("2026-06-19T09:00:00+08:00")), Ok(at("2026-06-22T09:00:00+08:00")));
}

#[test]
fn the_standard_weekday_is_the_most_shared_then_the_earliest() {
    let body = |hours: serde_json::Value| calendar(json!({"tz": "UTC", "hours": hours, "workdays": ["2026-09-27"]}));
    let a = json!(["09:00-18:00"]);
    let b = json!(["10:00-16:00"]);
    // Friday differs; the other four share.
    let c = body(json!({"mon": a, "tue": a, "wed": a, "thu": a, "fri": b}));
    assert_eq!(c.standard_weekday(), Some("mon"));
    assert_eq!(c.next_open(at("2026-09-27T00:00:00Z")), Ok(at("2026-09-27T09:00:00Z")));
    // Monday alone differs: Tuesday's hours, shared by three.
    let c = body(json!({"mon": b, "tue": a, "wed": a, "thu": a}));
    assert_eq!(c.standard_weekday(), Some("tue"));
    // Two and two: the earliest weekday of a largest group.
    let c = body(json!({"mon": b, "tue": a, "wed": a, "thu": b}));
    assert_eq!(c.standard_weekday(), Some("mon"));
    assert_eq!(c.next_open(at("2026-09-27T00:00:00Z")), Ok(at("2026-09-27T10:00:00Z")));
}

#[test]
fn daylight_saving_changes_read_as_jiff_compatible() {
    let every_day = |hours: serde_json::Value| {
        calendar(json!({"tz": "Europe/Berlin", "hours": {
            "mon": hours, "tue": hours, "wed": hours, "thu": hours, "fri": hours, "sat": hours, "sun": hours}}))
    };
    // Spring forward, Sunday 29 March 2026, 02:00 CET -> 03:00 CEST: 02:30 is read as
    // 03:30 CEST (the offset before the gap), so the day opens at 01:30Z.
    let c = every_day(json!(["02:30-04:00"]));
    assert_eq!(c.next_open(at("2026-03-29T00:00:00Z")), Ok(at("2026-03-29T01:30:00Z")));
    // It closes at 04:00 CEST (02:00Z): half an hour that day, the rest the next.
    assert_eq!(c.add_working_time(at("2026-03-29T00:00:00Z"), HOURS / 2), Ok(at("2026-03-29T02:00:00Z")));
    assert_eq!(c.add_working_time(at("2026-03-29T00:00:00Z"), HOURS), Ok(at("2026-03-30T01:00:00Z")));
    // Fall back, Sunday 25 October 2026, 03:00 CEST -> 02:00 CET: 02:30 is its first
    // instant (CEST), so 02:30-04:00 is open two and a half hours.
    assert_eq!(c.next_open(at("2026-10-25T00:00:00Z")), Ok(at("2026-10-25T00:30:00Z")));
    assert_eq!(
        c.add_working_time(at("2026-10-25T00:00:00Z"), Duration::from_secs(150 * 60)),
        Ok(at("2026-10-25T03:00:00Z"))
    );
    // Office hours are untouched: 09:00 local on either side of the change.
    let office = every_day(json!(["09:00-17:00"]));
    assert_eq!(office.add_working_days(at("2026-03-28T09:00:00+01:00"), 1), Ok(at("2026-03-29T09:00:00+02:00")));
    assert_eq!(
        office.add_working_time(at("2026-10-24T16:00:00+02:00"), 2 * HOURS),
        Ok(at("2026-10-25T10:00:00+01:00"))
    );
}

#[test]
fn a_skipped_date_reads_as_the_next_and_is_counted_once() {
    // Apia skipped Friday 30 December 2011 (UTC-10 to UTC+14): that date's 09:00-17:00,
    // read with the offset before the gap, are the same instants as Saturday's.
    let day = json!(["09:00-17:00"]);
    let c = calendar(json!({"tz": "Pacific/Apia", "hours": {
        "mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day}}));
    assert!(c.is_open(at("2011-12-31T10:00:00+14:00")));
    // Thursday 8h, the one stretch of Friday and Saturday 8h, Sunday 4h.
    assert_eq!(c.add_working_time(at("2011-12-29T09:00:00-10:00"), 20 * HOURS), Ok(at("2012-01-01T13:00:00+14:00")));
}

#[test]
fn a_calendar_open_around_the_clock_counts_every_instant() {
    let all = json!(["00:00-24:00"]);
    let c = calendar(json!({"tz": "America/New_York", "hours": {
        "mon": all, "tue": all, "wed": all, "thu": all, "fri": all, "sat": all, "sun": all}}));
    let start = at("2026-02-20T13:17:00Z");
    let month = Duration::from_secs(40 * 86_400);
    assert_eq!(c.add_working_time(start, month), Ok(start.saturating_add(month)));
    // 08:17 EST, 8h17 into the day; 30 days on, 8h17 into a day of summer time.
    assert_eq!(c.add_working_days(start, 30), Ok(at("2026-03-22T08:17:00-04:00")));
}

#[test]
fn a_calendar_that_never_opens_answers_an_error_quickly() {
    let c = calendar(json!({"tz": "Asia/Shanghai", "hours": {"mon": ["09:00-18:00"]},
        "holidays": ["2026-01-01/2040-12-31"]}));
    let start = at("2026-03-01T00:00:00Z");
    for answer in [c.next_open(start), c.add_working_time(start, HOURS), c.add_working_days(start, 2)] {
        let error = answer.unwrap_err();
        assert_eq!(error.field(), Some("calendar"));
        assert!(error.to_string().contains("no working time in the 5 years after 2026-03-01T00:00:00.000Z"), "{error}");
    }
    // Open until the holidays begin, then closed: 5 years after the last closing.
    let error = c.add_working_time(at("2025-12-29T09:00:00+08:00"), 10 * HOURS).unwrap_err();
    assert!(error.to_string().contains("5 years after 2025-12-29T10:00:00.000Z"), "{error}");
    assert!(!c.is_open(at("2030-01-07T10:00:00+08:00")));
}

#[test]
fn answers_past_the_span_or_the_end_of_time_are_errors() {
    let c = cn_office();
    let error = c.add_working_time(at("2026-01-01T00:00:00Z"), Duration::from_secs(u64::MAX)).unwrap_err();
    assert!(error.to_string().contains("more than 100 years after"), "{error}");
    let error = c.add_working_days(at("2026-01-01T00:00:00Z"), u32::MAX).unwrap_err();
    assert!(error.to_string().contains("more than 100 years after"), "{error}");
    // Tuesday 9999-12-28 is the last date a calendar holds: it opens, then nothing.
    assert_eq!(c.next_open(at("9999-12-28T00:00:00Z")), Ok(at("9999-12-28T09:00:00+08:00")));
    let error = c.next_open(at("9999-12-28T12:00:00Z")).unwrap_err();
    assert!(error.to_string().contains("after 9999-12-28, the last date"), "{error}");
}

#[test]
fn entered_years_and_when_they_run_out() {
    let c = cn_office();
    assert_eq!(c.holiday_years(), vec![2026]);
    assert_eq!(c.entered_until(), Some(at("2027-01-01T00:00:00+08:00")));
    let c = calendar(json!({"tz": "Europe/Berlin", "hours": {"mon": ["09:00-17:00"]},
        "holidays": ["2026-12-24/2027-01-01"], "workdays": ["2029-06-02"]}));
    assert_eq!(c.holiday_years(), vec![2026, 2027, 2029]);
    assert_eq!(c.entered_until(), Some(at("2030-01-01T00:00:00+01:00")));
    let c = calendar(json!({"tz": "UTC", "hours": {"mon": ["09:00-17:00"]}}));
    assert_eq!((c.holiday_years(), c.entered_until()), (vec![], None));
    let c = calendar(json!({"tz": "UTC", "hours": {"mon": ["09:00-17:00"]}, "holidays": ["9999-12-27"]}));
    assert_eq!((c.holiday_years(), c.entered_until()), (vec![9999], Some(Timestamp::MAX)));
}

/// A holiday file as a government or a calendar service writes it: CRLF, folded
/// lines, a time zone whose own DTSTARTs are no events, an alarm, a timed event, a
/// cancelled one, and the three ways an all-day event ends.
const HOLIDAYS_ICS: &str = "BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Example Gov//Public Holidays 2026//ZH\r
X-WR-CALNAME:中国法定节假日 2026\r
BEGIN:VTIMEZONE\r
TZID:Asia/Shanghai\r
BEGIN:STANDARD\r
DTSTART:19700101T000000\r
TZOFFSETFROM:+0800\r
TZOFFSETTO:+0800\r
END:STANDARD\r
END:VTIMEZONE\r
BEGIN:VEVENT\r
UID:2026-national-day@example.gov\r
DTSTAMP:20251104T020000Z\r
DTSTART;VALUE=DATE:20261001\r
DTEND;VALUE=DATE:20261008\r
SUMMARY:国庆节、中秋节 National Day and Mid-Autumn Festival\\, seven da\r
 ys off\r
BEGIN:VALARM\r
ACTION:DISPLAY\r
TRIGGER:-P1D\r
END:VALARM\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:2026-dragon-boat@example.gov\r
DTSTART;VALUE=DATE:20260619\r
SUMMARY:端午节 Dragon Boat Festival\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:2026-spring@example.gov\r
DTSTART;VALUE=\"DATE\":20260215\r
DURATION:P9D\r
SUMMARY:春节 Spring Festival\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:briefing@example.gov\r
DTSTART;TZID=Asia/Shanghai:20260930T150000\r
DTEND;TZID=Asia/Shanghai:20260930T160000\r
SUMMARY:Holiday briefing\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:withdrawn@example.gov\r
DTSTART;VALUE=DATE:20260501\r
STATUS:CANCELLED\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:one-day@example.gov\r
DTSTART:20260101\r
DTEND:20260101\r
SUMMARY:元旦 New Year\r
END:VEVENT\r
END:VCALENDAR\r
";

#[test]
fn holidays_come_from_the_all_day_events_of_an_ics_file() {
    let holidays = Calendar::holidays_from_ics(HOLIDAYS_ICS).unwrap();
    let written: Vec<String> = holidays.iter().map(Holiday::to_string).collect();
    assert_eq!(written, ["2026-10-01/2026-10-07", "2026-06-19", "2026-02-15/2026-02-23", "2026-01-01"]);
    // They go into a calendar as its holidays.
    let mut spec = cn_office().spec();
    spec.holidays = written;
    let c = Calendar::new(spec).unwrap();
    assert_eq!(c.next_open(at("2026-02-14T00:00:00Z")), Ok(at("2026-02-24T09:00:00+08:00")));
    // LF line ends and tab-folded lines read the same.
    let unix = HOLIDAYS_ICS.replace("\r\n", "\n").replace("\n ys off", "\n\tys off");
    assert_eq!(Calendar::holidays_from_ics(&unix).unwrap(), holidays);
}

#[test]
fn ics_mistakes_are_refused_with_the_line() {
    let wrap =
        |event: &str| format!("BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VEVENT\n{event}\nEND:VEVENT\nEND:VCALENDAR\n");
    let cases = [
        (wrap("DTSTART;VALUE=DATE:20260101\nRRULE:FREQ=YEARLY"), "line 5: ", "repeats (RRULE)"),
        (wrap("DTSTART;VALUE=DATE:20260105\nDTEND;VALUE=DATE:20260101"), "line 5: ", "before it starts"),
        (wrap("DTSTART;VALUE=DATE:20260231"), "line 4: ", "is not a date"),
        (wrap("DTSTART;VALUE=DATE:20260101T090000"), "line 4: ", "has a time of day"),
        (wrap("DTSTART;VALUE=DATE:20260101\nDURATION:PT24H"), "line 5: ", "whole days"),
        (wrap("DTSTART;VALUE=DATE:20260101\nDTEND:20260102T000000"), "line 5: ", "time of day"),
        (wrap("SUMMARY:nothing"), "line 3: ", "has no DTSTART"),
        (wrap("DTSTART;VALUE=DATE:20260101\nno colon here"), "line 5: ", "no ':'"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20260101\nEND:VCALENDAR\n".into(), "line 4: ", "closes BEGIN:VEVENT"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20260101\nEND:VEVENT\n".into(), "line 1: ", "never closed"),
    ];
    for (text, line, reason) in cases {
        let error = Calendar::holidays_from_ics(&text).unwrap_err();
        assert_eq!(error.field(), Some("ics"), "{text}");
        let message = error.to_string();
        assert!(message.contains(line) && message.contains(reason), "{text}: {message}");
    }
}
