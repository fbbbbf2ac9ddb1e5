//! Working-time calendars through the real binary: `punctual calendar set|get|ls|rm`
//! against a running server (a calendar from a JSON file with an iCalendar file's
//! holidays added, read back, replaced only at the version given, refused field by
//! field, removed), and a calendar set through one of two servers sharing a Redis served
//! by the other within the records' poll, moving no task already scheduled.
//!
//! Guards against a flag parsed but not sent (`--holidays-ics` whose holidays never
//! reach the server, `--if-version` without its `If-Match`), refusals that exit 0 or
//! hide the server's message, and a calendar change that never reaches another node.
//!
//! Real processes: `punctual serve` (embedded, and two on a private `redis-server`).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::time::{Duration, Instant};

use common::run::run;
use common::{Api, server_builder, start, start_server};
use serde_json::json;

const CALENDAR: &str = r#"{"tz": "Asia/Shanghai",
  "hours": {"mon": ["09:00-12:00", "13:30-18:00"], "tue": ["09:00-12:00", "13:30-18:00"]},
  "holidays": ["2026-10-01/2026-10-07"], "workdays": ["2026-09-27", {"date": "2026-10-10", "as": "tue"}]}"#;

const ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:1\r\nDTSTART;VALUE=DATE:20270101\r\n\
                   DTEND;VALUE=DATE:20270104\r\nSUMMARY:New Year\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[test]
fn calendars_are_set_from_files_read_replaced_at_a_version_and_removed() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cn-office.json");
    std::fs::write(&file, CALENDAR).unwrap();
    let ics = dir.path().join("cn-2027.ics");
    std::fs::write(&ics, ICS).unwrap();
    let (file, ics) = (file.to_str().unwrap(), ics.to_str().unwrap());

    let out = run(&url, &["calendar", "set", "cn-office", "--file", file, "--holidays-ics", ics]);
    out.expect_code(0, "calendar set of a new calendar");
    out.expect_contains(&["Created calendar cn-office (version 1)", "Zone      Asia/Shanghai"], "set says created");
    let stored = api.get("/v1/calendars/cn-office").expect(200, "the server serves it").clone();
    assert_eq!(stored["holidays"], json!(["2026-10-01/2026-10-07", "2027-01-01/2027-01-03"]), "the .ics holidays");
    assert_eq!(stored["holiday_years"], json!([2026, 2027]));

    let out = run(&url, &["calendar", "get", "cn-office"]);
    out.expect_code(0, "calendar get");
    out.expect_contains(&["mon 09:00-12:00, 13:30-18:00", "2026-10-10 as tue", "Entered   2026, 2027"], "get");
    assert_eq!(run(&url, &["calendar", "get", "cn-office", "--json"]).json(), stored, "--json is the server's");
    let out = run(&url, &["calendar", "ls"]);
    out.expect_code(0, "calendar ls");
    out.expect_contains(&["cn-office", "Asia/Shanghai", "2026, 2027"], "ls lists it");

    let out = run(&url, &["calendar", "set", "cn-office", "--file", file, "--if-version", "0"]);
    out.expect_code(1, "calendar set --if-version 0 of an existing calendar");
    out.expect_contains(&["version 1, not 0"], "the server's reason");
    let out = run(&url, &["calendar", "set", "cn-office", "--file", file, "--if-version", "1"]);
    out.expect_code(0, "calendar set at its version");
    out.expect_contains(&["Replaced calendar cn-office (now version 2)"], "set says replaced");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"tz": "Asia/Shanghai", "hours": {"mon": ["18:00-09:00"]}}"#).unwrap();
    let out = run(&url, &["calendar", "set", "cn-office", "--file", bad.to_str().unwrap()]);
    out.expect_code(1, "a calendar whose hours end before they start");
    out.expect_contains(&["hours.mon[0]"], "the field at fault");
    assert_eq!(api.get("/v1/calendars/cn-office").json["version"], 2, "a refused calendar changed nothing");

    run(&url, &["calendar", "rm", "cn-office"]).expect_code(0, "calendar rm");
    run(&url, &["calendar", "get", "cn-office"]).expect_code(1, "calendar get after rm");
    run(&url, &["calendar", "rm", "cn-office"]).expect_code(1, "calendar rm of a removed calendar");
    run(&url, &["calendar", "ls"]).expect_contains(&["No calendars yet"], "ls after rm");
}

#[test]
fn a_calendar_set_through_one_server_is_served_by_another_on_the_same_redis() {
    let redis = punctual_testkit::redis::server();
    let (a, b) = (start(server_builder().store(redis.url())), start(server_builder().store(redis.url())));
    let (api_a, api_b) = (Api::of(&a), Api::of(&b));
    api_b.get("/v1/calendars/cn-office").expect_error(404, "not_found", None, "not yet");
    let body: serde_json::Value = serde_json::from_str(CALENDAR).unwrap();
    api_a.put("/v1/calendars/cn-office", body.clone()).expect(201, "set through A");
    let set_at = Instant::now();
    let served = api_b.get_until("/v1/calendars/cn-office", "served by B", |resp| resp.status == 200);
    let took = set_at.elapsed();
    assert_eq!(served.json["tz"], "Asia/Shanghai");
    // The records are read every 500 ms; a loaded machine may add its own delay.
    assert!(took < Duration::from_secs(5), "B served the calendar {took:?} after A stored it");

    // A change moves no task already scheduled (docs/state-machine.md, "Resolved once"):
    // a task B resolved in the calendar keeps its due time when A makes every day of
    // it a holiday; B serves the change, and only schedules after it count the holidays.
    let scheduled = api_b.put("/v1/queues/flow.remind/tasks/approve", json!({"delay": "8h", "calendar": "cn-office"}));
    let due = scheduled.expect(201, "scheduled in business time through B")["task"]["due_at"].clone();
    let mut closed = body.clone();
    closed["holidays"] = json!(["2026-01-01/2027-12-31"]);
    closed["workdays"] = json!([]);
    api_a.put("/v1/calendars/cn-office", closed).expect(200, "changed through A");
    api_b.get_until("/v1/calendars/cn-office", "the change served by B", |resp| resp.json["version"] == 2);
    let read = api_b.get("/v1/queues/flow.remind/tasks/approve");
    assert_eq!(read.expect(200, "read")["due_at"], due, "the change moved a task already scheduled");

    api_a.delete("/v1/calendars/cn-office").expect(204, "removed through A");
    api_b.get_until("/v1/calendars/cn-office", "gone from B", |resp| resp.status == 404);
}

#[test]
fn a_config_calendar_whose_holidays_ran_out_is_warned_of_and_served_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("punctual.toml");
    let table = "[calendars.old-office]\ntz = \"Europe/Berlin\"\nhours = { mon = [\"09:00-17:00\"] }\n\
                 holidays = [\"2020-12-24/2020-12-26\"]\n";
    std::fs::write(&config, table).unwrap();
    let server = start(server_builder().arg("--config").arg(&config));
    server
        .wait_for_log(
            "calendar holidays: holidays are entered only until 2020-12-31T23:00:00.000Z: enter the next year's",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|logs| panic!("no warning of the calendar's holidays running out:\n{logs}"));
    let api = Api::of(&server);
    let served = api.get("/v1/calendars/old-office").expect(200, "a config calendar").clone();
    assert_eq!((served["source"].as_str(), served["holiday_years"].clone()), (Some("config"), json!([2020])));
    let metrics = api.get("/metrics").text;
    assert!(metrics.contains("punctual_calendar_holidays_remaining_seconds{calendar=\"old-office\"} 0.0"), "{metrics}");
    api.delete("/v1/calendars/old-office").expect_error(409, "conflict", None, "a config calendar");
}
