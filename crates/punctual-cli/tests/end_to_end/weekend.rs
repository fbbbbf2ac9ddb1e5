//! Every node stopped for a weekend: the real server, its wall clock libfaketime's,
//! schedules daily reminders in a working-time calendar on Friday evening, is killed
//! (SIGKILL), and comes back on the same embedded store on Wednesday morning. What
//! fires then is what each task's `misfire` says (docs/state-machine.md, "Misfire,
//! overlap and jitter"), counted in the calendar: the 调休 Saturday is a working day,
//! the Sunday is not.
//!
//! Guards against a restart that forgets a task's calendar or timing (the policies and
//! the anchor are kept in the store: a missed count that takes in the Sunday, a
//! catch-up walking plain days), a catch-up that fires more than `catch_up_max` or in
//! the wrong order, a `skip` that fires anyway or leaves a one-off behind, and
//! deliveries whose `scheduled_for` and `missed` do not say which occurrence they stand
//! for.

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::BTreeMap;

use common::*;
use serde_json::{Value, json};

const QUEUE: &str = "flow.remind";

/// Friday 2026-10-09 17:00 in Shanghai, as libfaketime reads it (UTC).
const FRIDAY_EVENING: &str = "@2026-10-09 09:00:00";
/// Wednesday 2026-10-14 10:00 in Shanghai: the Monday, Tuesday and Wednesday 09:30
/// were missed too, so a catch-up of 2 has one to drop.
const WEDNESDAY_MORNING: &str = "@2026-10-14 02:00:00";

/// 09:30 in Shanghai on these days of October 2026, as the API writes times.
const SATURDAY_0930: &str = "2026-10-10T01:30:00.000Z";
const TUESDAY_0930: &str = "2026-10-13T01:30:00.000Z";
const WEDNESDAY_0930: &str = "2026-10-14T01:30:00.000Z";
const THURSDAY_0930: &str = "2026-10-15T01:30:00.000Z";

/// A Shanghai office on mainland China's 2026 autumn holidays: the National Day week
/// off, Saturday 2026-10-10 worked in exchange (调休).
fn cn_office() -> Value {
    let day = json!(["09:00-12:00", "13:30-18:00"]);
    json!({
        "tz": "Asia/Shanghai",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day},
        "holidays": ["2026-09-25/2026-09-27", "2026-10-01/2026-10-07"],
        "workdays": ["2026-09-20", "2026-10-10"],
    })
}

/// The daily 09:30 reminder in the office's working days, with `policy` added.
fn daily(policy: Value) -> Value {
    let mut body = json!({"repeat": {"cron": "30 9 * * *", "tz": "Asia/Shanghai"}, "calendar": "cn-office"});
    body.as_object_mut().unwrap().extend(policy.as_object().unwrap().clone());
    body
}

/// One delivery as a pull worker saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delivery {
    scheduled_for: String,
    missed: u64,
}

fn delivery(scheduled_for: &str, missed: u64) -> Delivery {
    Delivery { scheduled_for: scheduled_for.to_owned(), missed }
}

/// Leases one task at a time and acks it done until a lease waiting 2 s gets none;
/// each key's deliveries in the order they came. Every delivery is a first try.
fn drain(api: &Api) -> BTreeMap<String, Vec<Delivery>> {
    let mut seen: BTreeMap<String, Vec<Delivery>> = BTreeMap::new();
    // Bounded: the tasks owe 4 firings in all.
    for _ in 0..20 {
        let leases = api.lease(QUEUE, json!({"max": 1, "wait": "2s"}));
        let Some(lease) = leases.first() else { return seen };
        assert_eq!(lease["attempt"], 1, "a first try, never a retry: {lease}");
        let key = lease["task"]["key"].as_str().unwrap().to_owned();
        let scheduled_for = lease["scheduled_for"].as_str().unwrap().to_owned();
        let missed = lease["missed"].as_u64().unwrap_or_else(|| panic!("a missed count: {lease}"));
        seen.entry(key).or_default().push(Delivery { scheduled_for, missed });
        api.ack(lease["lease_id"].as_str().unwrap(), json!({"outcome": "done"})).expect(204, "ack done");
    }
    panic!("still leasing after 20 deliveries: {seen:?}");
}

fn due_at(api: &Api, key: &str) -> String {
    let task = api.task(QUEUE, key);
    task.expect(200, &format!("GET {key}"))["due_at"].as_str().unwrap().to_owned()
}

#[test]
fn after_a_weekend_with_every_node_stopped_each_misfire_policy_fires_what_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("faketime");
    std::fs::write(&clock, format!("{FRIDAY_EVENING}\n")).unwrap();
    let mut server = start(faketime::clock_from_file(server_builder(), &clock));
    let api = Api::of(&server);
    api.put("/v1/calendars/cn-office", cn_office()).expect(201, "the office calendar");

    let tasks = [
        ("daily-fire-once", daily(json!({}))),
        ("daily-fire-all", daily(json!({"misfire": "fire_all", "catch_up_max": 2}))),
        ("daily-skip", daily(json!({"misfire": "skip", "misfire_after": "10m"}))),
        ("saturday-call", json!({"due_at": "2026-10-10T10:00:00+08:00", "misfire": "skip"})),
    ];
    for (key, body) in tasks {
        let task = api.create(QUEUE, key, body);
        let first = if key == "saturday-call" { "2026-10-10T02:00:00.000Z" } else { SATURDAY_0930 };
        assert_eq!(task["due_at"], first, "{key} is first due on the 调休 Saturday: {task}");
    }

    // Every node down over the weekend, and back on Wednesday morning.
    server.kill().unwrap();
    std::fs::write(&clock, format!("{WEDNESDAY_MORNING}\n")).unwrap();
    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    let api = Api::of(&server);
    let deliveries = drain(&api);

    let expected = BTreeMap::from([
        // One firing for Saturday, Monday, Tuesday and Wednesday: the Sunday is closed.
        ("daily-fire-once".to_owned(), vec![delivery(SATURDAY_0930, 3)]),
        // The oldest, then the latest two; Monday's is dropped, counted by the first.
        (
            "daily-fire-all".to_owned(),
            vec![delivery(SATURDAY_0930, 1), delivery(TUESDAY_0930, 0), delivery(WEDNESDAY_0930, 0)],
        ),
    ]);
    assert_eq!(deliveries, expected, "the deliveries on return\n{}", server.logs());

    for key in ["daily-fire-once", "daily-fire-all", "daily-skip"] {
        assert_eq!(due_at(&api, key), THURSDAY_0930, "{key} goes on at the next working day's 09:30");
    }
    api.task(QUEUE, "saturday-call").expect_error(404, "not_found", None, "the skipped one-off ended");
    let metrics = api.get("/metrics").text;
    let skipped = format!("punctual_tasks_skipped_total{{queue=\"{QUEUE}\"}} 2");
    assert!(metrics.contains(&skipped), "both skips counted: {skipped} not in\n{metrics}");
}
