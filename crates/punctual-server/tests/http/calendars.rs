//! Working-time calendars over HTTP: guards against a calendar route answering a shape
//! or status the document does not give, a conditional change that applies at another
//! version, a refused document that changes what is stored, a removed calendar still
//! served, and a calendar whose holidays run out without saying so.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{START, TestServer, code, field};
use serde_json::{Value, json};

const OFFICE: &str = "/v1/calendars/cn-office";

fn shanghai() -> Value {
    json!({"tz": "Asia/Shanghai",
           "hours": {"mon": ["09:00-12:00", "13:30-18:00"], "fri": ["09:00-12:00", "13:30-18:00"]},
           "holidays": ["2026-10-01/2026-10-07"], "workdays": ["2026-09-27", {"date": "2026-10-10", "as": "fri"}]})
}

async fn put_if_match(s: &TestServer, path: &str, version: &str, body: Value) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header("content-type", "application/json")
        .header("if-match", version)
        .body(Body::from(body.to_string()))
        .unwrap();
    s.call(req).await
}

#[tokio::test]
async fn a_calendar_is_created_read_listed_replaced_and_removed() {
    let s = TestServer::manual().await;
    let (status, created) = s.put(OFFICE, shanghai()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(
        (&created["name"], &created["source"], &created["version"]),
        (&json!("cn-office"), &json!("api"), &json!(1))
    );
    assert_eq!(created["hours"]["mon"], json!(["09:00-12:00", "13:30-18:00"]));
    assert_eq!(created["workdays"], json!(["2026-09-27", {"date": "2026-10-10", "as": "fri"}]));
    assert_eq!(created["holiday_years"], json!([2026]));
    assert_eq!(created["entered_until"], "2026-12-31T16:00:00.000Z", "1 January 2027 in Shanghai");
    assert_eq!(created["notice"], Value::Null, "31 days and 4 hours before they run out");
    assert_eq!(s.get(OFFICE).await, (StatusCode::OK, created.clone()));
    s.clock.as_ref().unwrap().advance(std::time::Duration::from_secs(2 * 86_400));
    let (_, read) = s.get(OFFICE).await;
    let notice = read["notice"].as_str().unwrap();
    assert!(notice.contains("within 30 days"), "the clock stands at 2026-12-02: {notice}");
    let created = read;

    let (status, listed) = s.get("/v1/calendars").await;
    assert_eq!((status, listed), (StatusCode::OK, json!({"calendars": [created.clone()]})));

    let mut next = shanghai();
    next["holidays"] = json!(["2026-10-01/2026-10-07", "2027-01-01"]);
    let (status, stale) = put_if_match(&s, OFFICE, "0", next.clone()).await;
    assert_eq!((status, code(&stale)), (StatusCode::CONFLICT, "conflict"), "{stale}");
    let (status, replaced) = put_if_match(&s, OFFICE, "1", next).await;
    assert_eq!(
        (status, &replaced["version"], &replaced["notice"]),
        (StatusCode::OK, &json!(2), &Value::Null),
        "{replaced}"
    );
    assert_eq!(replaced["holiday_years"], json!([2026, 2027]));

    assert_eq!(s.delete(OFFICE).await.0, StatusCode::NO_CONTENT);
    let (status, gone) = s.get(OFFICE).await;
    assert_eq!((status, code(&gone)), (StatusCode::NOT_FOUND, "not_found"));
    assert_eq!(s.delete(OFFICE).await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.get("/v1/calendars").await.1, json!({"calendars": []}));
    let (status, again) = put_if_match(&s, OFFICE, "0", shanghai()).await;
    assert_eq!((status, &again["version"]), (StatusCode::CREATED, &json!(4)), "created anew: {again}");
    assert_eq!(time_of(&again["updated_at"]), START.as_millis() + 2 * 86_400_000);
}

fn time_of(value: &Value) -> i64 {
    common::time(value).as_millis()
}

#[tokio::test]
async fn a_bad_calendar_is_refused_naming_the_field_and_changes_nothing() {
    let s = TestServer::start().await;
    let (_, created) = s.put(OFFICE, shanghai()).await;
    let week = json!({"mon": ["09:00-18:00"]});
    let cases = [
        (json!({"tz": "Mars/Olympus", "hours": {"mon": ["09:00-18:00"]}}), "tz"),
        (json!({"hours": {"mon": ["09:00-18:00"]}}), "calendar"),
        (json!({"tz": "UTC"}), "calendar"),
        (json!({"tz": "UTC", "hours": {}}), "hours"),
        (json!({"tz": "UTC", "hours": {"mon": ["18:00-09:00"]}}), "hours.mon[0]"),
        (json!({"tz": "UTC", "hours": {"someday": ["09:00-18:00"]}}), "hours.someday"),
        (json!({"tz": "UTC", "hours": week.clone(), "holidays": ["2026-02-30"]}), "holidays[0]"),
        (json!({"tz": "UTC", "hours": week.clone(), "holidays": ["2026-10-07/2026-10-01"]}), "holidays[0]"),
        (
            json!({"tz": "UTC", "hours": week.clone(), "holidays": ["2026-10-01"], "workdays": ["2026-10-01"]}),
            "workdays[0]",
        ),
        (json!({"tz": "UTC", "hours": week, "colour": "blue"}), "calendar"),
    ];
    for (body, expected) in cases {
        let (status, answer) = s.put(OFFICE, body.clone()).await;
        assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "invalid_argument"), "{body}: {answer}");
        assert_eq!(field(&answer), Some(expected), "{body}: {answer}");
    }
    let (status, answer) = s.put("/v1/calendars/a%20b", shanghai()).await;
    assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, Some("calendar")), "{answer}");
    assert_eq!(s.get(OFFICE).await.1, created, "a refused change changed the calendar");
}

#[tokio::test]
async fn a_calendar_of_the_config_file_is_served_and_changed_only_there() {
    let spec = serde_json::from_value(shanghai()).unwrap();
    let name = punctual_core::calendar::CalendarName::new("cn-office").unwrap();
    let config = punctual_core::EngineConfig::default().calendar(name, punctual_core::Calendar::new(spec).unwrap());
    let s = TestServer::build(punctual_server::HttpOptions::default(), config, None).await;
    let (status, served) = s.get(OFFICE).await;
    assert_eq!(
        (status, &served["source"], &served["version"]),
        (StatusCode::OK, &json!("config"), &json!(0)),
        "{served}"
    );
    for (method, body) in [(Method::PUT, Some(shanghai())), (Method::DELETE, None)] {
        let (status, refused) = s.send(method.clone(), OFFICE, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{method}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("config file"), "{refused}");
    }
    assert_eq!(s.get("/v1/calendars").await.1["calendars"][0]["source"], "config");
}

/// The clock stands at Monday 2026-11-30 20:00 in Shanghai, after the day's hours.
#[tokio::test]
async fn a_delay_in_a_calendar_counts_its_working_time_and_due_at_aligns_to_its_opening() {
    let s = TestServer::manual().await;
    let week = json!(["09:00-12:00", "13:30-18:00"]);
    let office =
        json!({"tz": "Asia/Shanghai", "hours": {"mon": week, "tue": week, "wed": week, "thu": week, "fri": week}});
    assert_eq!(s.put(OFFICE, office).await.0, StatusCode::CREATED);
    let due = |body: &Value| body["task"]["due_at"].as_str().map(str::to_owned);

    // Tuesday 09:00-12:00 and 13:30-18:00 are 7.5 h: the 8th hour ends Wednesday 09:30.
    let (status, body) =
        s.put("/v1/queues/flow.remind/tasks/approve-1", json!({"delay": "8h", "calendar": "cn-office"})).await;
    assert_eq!((status, due(&body).as_deref()), (StatusCode::CREATED, Some("2026-12-02T01:30:00.000Z")), "{body}");
    // Whole days count working days from the next opening (Tuesday 09:00): Thursday 09:00.
    let (_, body) =
        s.put("/v1/queues/flow.remind/tasks/approve-2", json!({"delay": "2d", "calendar": "cn-office"})).await;
    assert_eq!(due(&body).as_deref(), Some("2026-12-03T01:00:00.000Z"), "{body}");
    // Saturday 10:00 moves to Monday's opening; no time at all is the next opening.
    let saturday = json!({"due_at": "2026-12-05T10:00:00+08:00", "calendar": "cn-office", "align": "next_open"});
    let (_, body) = s.put("/v1/queues/flow.remind/tasks/approve-3", saturday).await;
    assert_eq!(due(&body).as_deref(), Some("2026-12-07T01:00:00.000Z"), "{body}");
    let (_, body) = s.put("/v1/queues/flow.remind/tasks/approve-4", json!({"calendar": "cn-office"})).await;
    assert_eq!(due(&body).as_deref(), Some("2026-12-01T01:00:00.000Z"), "{body}");

    let batch = json!({"tasks": [{"key": "b-1", "delay": "30m", "calendar": "cn-office"},
                                 {"key": "b-2", "delay": "30m", "calendar": "nowhere"}]});
    let (status, body) = s.post("/v1/queues/flow.remind/tasks", batch).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"][0]["outcome"], "created", "{body}");
    assert_eq!(body["results"][1]["error"]["field"], "tasks[1].calendar", "{body}");
    let (_, task) = s.get("/v1/queues/flow.remind/tasks/b-1").await;
    assert_eq!(task["due_at"], "2026-12-01T01:30:00.000Z");

    let refused = [
        (json!({"delay": "1h", "calendar": "nowhere"}), "calendar"),
        (json!({"due_at": "2026-12-05T10:00:00+08:00", "calendar": "cn-office"}), "align"),
        (json!({"due_at": "2026-12-05T10:00:00+08:00", "align": "next_open"}), "align"),
        (json!({"delay": "1h", "calendar": "cn-office", "align": "next_open"}), "align"),
        (json!({"calendar": "cn-office", "repeat": {"every": "1d"}, "jitter": "1d"}), "jitter"),
        (json!({"calendar": "a b"}), "calendar"),
        (json!({"calendar": "cn-office", "align": "previous_open"}), "align"),
    ];
    for (body, expected) in refused {
        let (status, answer) = s.put("/v1/queues/flow.remind/tasks/refused", body.clone()).await;
        assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, Some(expected)), "{body}: {answer}");
    }
    assert_eq!(s.get("/v1/queues/flow.remind/tasks/refused").await.0, StatusCode::NOT_FOUND, "nothing stored");
}
