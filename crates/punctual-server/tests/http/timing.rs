//! Timing policies over HTTP: guards against a repeat in a calendar refused or fired
//! outside working time, a policy accepted but not kept (or not shown), a bad policy
//! stored, and leases that do not say which occurrence they stand for.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use std::time::Duration;

use crate::common;

use axum::http::StatusCode;
use common::{START, TestServer, field};
use serde_json::{Value, json};

const OFFICE: &str = "/v1/calendars/cn-office";

async fn with_office() -> TestServer {
    let s = TestServer::manual().await;
    let week = json!(["09:00-12:00", "13:30-18:00"]);
    let office =
        json!({"tz": "Asia/Shanghai", "hours": {"mon": week, "tue": week, "wed": week, "thu": week, "fri": week}});
    assert_eq!(s.put(OFFICE, office).await.0, StatusCode::CREATED);
    s
}

/// The clock stands at Monday 2026-11-30 20:00 in Shanghai, after the day's hours.
#[tokio::test]
async fn a_repeat_in_a_calendar_is_due_in_its_working_time_and_shows_its_policies() {
    let s = with_office().await;
    let body = json!({"delay": "30m", "calendar": "cn-office", "repeat": {"every": "1d"},
                      "misfire": "fire_all", "catch_up_max": 3, "overlap": "queue", "jitter": "1m"});
    let task = s.create("flow.remind", "daily", body).await;
    let due = common::time(&task["due_at"]);
    let tuesday = common::time(&json!("2026-12-01T01:30:00.000Z"));
    assert!(due >= tuesday && due < tuesday.saturating_add(Duration::from_secs(60)), "{task}");
    for (name, value) in [
        ("calendar", json!("cn-office")),
        ("misfire", json!("fire_all")),
        ("catch_up_max", json!(3)),
        ("overlap", json!("queue")),
        ("jitter", json!("1m")),
    ] {
        assert_eq!(task[name], value, "{name}: {task}");
    }
    assert_eq!(s.get("/v1/queues/flow.remind/tasks/daily").await.1, task, "GET shows what PUT answered");
    // A task sent back as it reads (every policy shown) is accepted and unchanged.
    let mut again = serde_json::Map::new();
    for name in ["calendar", "misfire", "misfire_after", "catch_up_max", "overlap", "jitter", "repeat"] {
        again.insert(name.into(), task[name].clone());
    }
    let (status, replaced) = s.put("/v1/queues/flow.remind/tasks/daily", Value::Object(again)).await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    for name in ["calendar", "misfire", "misfire_after", "catch_up_max", "overlap", "jitter", "repeat"] {
        assert_eq!(replaced["task"][name], task[name], "{name}");
    }
    let plain = s.create("flow.remind", "plain", json!({"delay": "1h"})).await;
    let defaults = json!({"calendar": null, "misfire": "fire_once", "misfire_after": "1m", "catch_up_max": 10,
                          "overlap": "skip", "jitter": null});
    for (name, value) in defaults.as_object().unwrap() {
        assert_eq!(&plain[name], value, "the effective {name}: {plain}");
    }
}

#[tokio::test]
async fn a_bad_timing_policy_is_refused_by_field_and_stores_nothing() {
    let s = with_office().await;
    let cases = [
        (json!({"misfire": "later"}), "misfire"),
        (json!({"misfire": "fire_all", "catch_up_max": 1001}), "catch_up_max"),
        (json!({"misfire": "skip", "misfire_after": 0}), "misfire_after"),
        (json!({"overlap": "sometimes", "repeat": {"every": "1h"}}), "overlap"),
        (json!({"jitter": "13h"}), "jitter"),
        (json!({"jitter": "1h", "repeat": {"every": "1h"}}), "jitter"),
        (json!({"repeat": {"cron": "0 18 * * *", "tz": "Asia/Shanghai"}, "calendar": "cn-office"}), "calendar"),
    ];
    for (body, expected) in cases {
        let (status, answer) = s.put("/v1/queues/flow.remind/tasks/refused", body.clone()).await;
        assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, Some(expected)), "{body}: {answer}");
    }
    assert_eq!(s.get("/v1/queues/flow.remind/tasks/refused").await.0, StatusCode::NOT_FOUND, "nothing stored");
    // Under overlap allow an occurrence's own key is <key>@<time>: 25 bytes more.
    let long = "k".repeat(488);
    let allow = json!({"overlap": "allow", "repeat": {"every": "1h"}});
    let (status, answer) = s.put(&format!("/v1/queues/flow.remind/tasks/{long}"), allow.clone()).await;
    assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, Some("overlap")), "{answer}");
    let (status, answer) = s.put(&format!("/v1/queues/flow.remind/tasks/{}", &long[1..]), allow).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn a_late_lease_says_which_occurrence_it_stands_for_and_how_many_it_stands_in_for() {
    let s = TestServer::manual().await;
    let first = START.to_string();
    s.create("flow.remind", "hourly", json!({"due_at": first, "repeat": {"every": "1h"}})).await;
    s.create("flow.remind", "late-skip", json!({"due_at": first, "misfire": "skip", "misfire_after": "10m"})).await;
    s.clock.as_ref().unwrap().advance(Duration::from_secs(3 * 3600 + 1800));
    let leases = s.lease("flow.remind", json!({"max": 10})).await;
    assert_eq!(leases.len(), 1, "the late one-off under skip does not fire: {leases:?}");
    let lease: &Value = &leases[0];
    assert_eq!((&lease["scheduled_for"], &lease["missed"]), (&json!(first), &json!(3)), "{lease}");
    assert_eq!(s.get("/v1/queues/flow.remind/tasks/late-skip").await.0, StatusCode::NOT_FOUND, "it ended");
}
